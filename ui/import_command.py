"""``conclave import massgen MASSGEN.yaml [-o conclave.yaml] [--force]``: switch from MassGen.

Reads a MassGen config, converts it (:mod:`config.massgen`), prints one line on stderr for
every key that changed meaning or was dropped, and checks the result with the same loader and
whole-config checks as ``conclave validate``. Two things belong to this machine rather than
to the config, and do not refuse it: an environment variable it names that is not set, and a
context path that does not exist here (a MassGen config names paths on its author's
machine); each is one line saying what to set or create before running it. Only a config
that validates otherwise is written: to stdout, or with ``-o`` to a file, atomically (a
temporary file in the same directory, renamed into place: a reader never sees half a config)
and never over an existing file without ``--force``. Exit 0 when written; 2 when the input is
not a MassGen config, the result does not validate (every problem is printed; nothing is
written), or the output is refused; 1 when stdout cannot take the config (closed before the
command started, or full: :mod:`ui.streams`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
import typing
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from conclave.config.atomic_file import temporary_name
from conclave.config.interpolation import interpolate
from conclave.config.limits import MAX_CONFIG_BYTES
from conclave.config.loader import ConfigError, parse_yaml, read_config_text
from conclave.config.massgen import Conversion, MassGenError, NoteKind, convert_massgen
from conclave.config.problems import Problem
from conclave.config.schema.context import EXISTING_PATH
from conclave.config.validation import check_runnable
from conclave.config.wording import plural
from conclave.ui.exit_codes import ExitCode
from conclave.ui.streams import cannot_write, write_stdout
from conclave.ui.text import display_path

__all__ = ["import_massgen_command", "render"]

_PROG = "conclave import massgen"


class _Refused(Exception):
    """The command cannot go on; the message says why and what to do."""


def import_massgen_command(args: argparse.Namespace) -> int:
    try:
        conversion = _convert(args.source)
        for note in conversion.notes:
            print(f"{_PROG}: {note.line()}", file=sys.stderr)
        target = args.output if args.output is not None else "the converted config"
        text = render(conversion, source=display_path(args.source))
        to_do = _validate(conversion, text, source=display_path(target))
        for name in to_do.unset:
            print(
                f"{_PROG}: the config names ${{{name}}}, which is not set here; set {name} "
                "before running it",
                file=sys.stderr,
            )
        for path in to_do.create:
            print(
                f"{_PROG}: the config names the context path {path}, which does not exist here; "
                "create it before running the config, or edit the path",
                file=sys.stderr,
            )
        if args.output is None:
            why = write_stdout(text, end="")
            if why is not None:
                then = "-o CONCLAVE.yaml writes it to a file"
                return cannot_write(_PROG, "the converted config", why, then=then)
        else:
            _write(Path(args.output), text, force=args.force)
    except _Refused as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    print(f"{_PROG}: {_summary(conversion, args.output)}", file=sys.stderr)
    return ExitCode.OK


def _read(source: str) -> object:
    """The MassGen file's data, read the way Conclave reads its own configs (size bound,
    UTF-8, aliases bounded)."""
    shown = display_path(source)
    try:
        with open(source, "rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise _Refused(
            f"cannot read {shown}: {exc.strerror or exc}; pass a MassGen YAML file"
        ) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise _Refused(f"{shown} is larger than a config can be; pass a MassGen YAML file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Refused(f"{shown} is not UTF-8 text; save it as UTF-8") from None
    try:
        data = parse_yaml(text, source=shown)
        return data
    except ConfigError as exc:
        raise _Refused(str(exc)) from None


def _convert(source: str) -> Conversion:
    data = _read(source)
    try:
        return convert_massgen(data)
    except MassGenError as exc:
        raise _Refused(f"{display_path(source)}: {exc}") from None


def render(conversion: Conversion, *, source: str) -> str:
    """The converted config as YAML, headed by where it came from."""
    body = yaml.safe_dump(conversion.config, sort_keys=False, allow_unicode=True, width=100)
    header = (
        f"# Converted from the MassGen config {source} by `conclave import massgen`.\n"
        "# Check it with `conclave validate`; see the notes it printed for what changed.\n"
    )
    return header + body


class _StandIns(Mapping[str, str]):
    """The environment, with a stand-in value for each variable it lacks (remembered): a
    converted config naming ``${BRAVE_API_KEY}`` is right as written; the variable is for
    the person to set before running it, not a reason to refuse the import."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self.unset: list[str] = []

    def __getitem__(self, name: str) -> str:
        value = self._environ.get(name)
        if value is not None:
            return value
        if name not in self.unset:
            self.unset.append(name)
        return "unset-at-import"

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


@attrs.frozen(kw_only=True)
class _ToDo:
    """What the person must do on this machine before the converted config runs."""

    unset: tuple[str, ...] = ()
    """Environment variables it names that are not set."""
    create: tuple[str, ...] = ()
    """Context paths it names that do not exist, as written (and where, when that differs)."""


def _validate(conversion: Conversion, text: str, *, source: str) -> _ToDo:
    """Load ``text`` (the converted config) as ``conclave run`` would load the file
    (interpolation, the schema walk, the whole-config checks); any problem refuses the
    import, but for two that belong to the machine, not the config: the environment
    variables it names that are not set, and the context paths that do not exist here
    (MassGen configs name paths on their author's machine). Those are returned, for the
    person to set and create; the rest of the config is then checked as it will be once the
    paths exist, with an empty directory standing in for each (same lines, same columns)."""
    environ = _StandIns(os.environ)
    entries = _context_entries(conversion.config)
    problems = _problems(text, source=source, environ=environ)
    missing = {
        index: problem
        for problem in problems
        if problem.expected == EXISTING_PATH
        and (index := _context_index(problem.path)) is not None
        and index < len(entries)
    }
    if len(missing) < len(problems):
        _refuse(problems)  # every problem at once, the paths to create among them
    if missing:
        with tempfile.TemporaryDirectory(prefix="conclave-import-") as stand_in:
            kept = [
                _standing_in(entry, stand_in) if i in missing else entry
                for i, entry in enumerate(entries)
            ]
            config = {**conversion.config}
            config["orchestrator"] = {**config["orchestrator"], "context_paths": kept}
            standing = render(attrs.evolve(conversion, config=config), source=source)
            rest = _problems(standing, source=source, environ=environ)
        if rest:
            _refuse([*missing.values(), *rest])
    create = tuple(_shown_path(entries[i]) for i in sorted(missing))
    return _ToDo(unset=tuple(environ.unset), create=create)


def _standing_in(entry: dict[str, Any], directory: str) -> dict[str, Any]:
    """``entry`` with ``directory`` for its path, and for the start of each protected path
    written under it."""
    written = str(entry["path"]).rstrip("/")
    protected = entry.get("protected_paths")
    if isinstance(protected, list):
        protected = [
            directory + p[len(written) :]
            if isinstance(p, str) and (p == written or p.startswith(written + "/"))
            else p
            for p in protected
        ]
        return {**entry, "path": directory, "protected_paths": protected}
    return {**entry, "path": directory}


def _refuse(problems: list[Problem]) -> typing.NoReturn:
    raise _Refused(
        "the converted config does not validate, so nothing was written:\n"
        f"{ConfigError(problems=problems)}"
    )


def _problems(text: str, *, source: str, environ: _StandIns) -> list[Problem]:
    try:
        loaded = read_config_text(text, source=source, environ=environ)
        check_runnable(loaded.config, source=source, locations=loaded.locations)
    except ConfigError as exc:
        return list(exc.problems)
    return []


_CONTEXT_ENTRY = re.compile(r"orchestrator\.context_paths\[(\d+)\]")


def _context_index(path: str) -> int | None:
    """The index of the context path entry a problem is about (``None``: not one)."""
    match = _CONTEXT_ENTRY.fullmatch(path)
    return int(match.group(1)) if match is not None else None


def _context_entries(config: Mapping[str, Any]) -> list[Any]:
    orchestrator = config.get("orchestrator")
    entries = orchestrator.get("context_paths") if isinstance(orchestrator, dict) else None
    return list(entries) if isinstance(entries, list) else []


def _shown_path(entry: Any) -> str:
    """``'src' (here: /home/me/src)``: the path as written, and where it resolves on this
    machine when that differs."""
    written = str(entry["path"])
    try:
        here = str(Path(interpolate(written, os.environ)).expanduser().resolve())
    except ValueError:
        return repr(written)
    return repr(written) if here == written else f"{written!r} (here: {here})"


def _write(path: Path, text: str, *, force: bool) -> None:
    """Write ``text`` to ``path`` whole or not at all: a temporary file in the same directory
    is filled, flushed to disk, then renamed over ``path`` (with ``force``) or linked to it
    (without: the link fails if ``path`` appeared meanwhile, so nothing is overwritten).
    Interrupted at any point, the temporary file is removed and ``path`` is as it was."""
    shown = display_path(path)
    if path.is_dir():
        raise _Refused(f"-o {shown} is a directory; pass the path of the file to write")
    if not force and os.path.lexists(path):
        raise _Refused(f"{shown} exists; pass --force to replace it, or choose another -o")
    try:
        temporary = str(path.with_name(temporary_name(path.name, path.parent)))
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise _Refused(
            f"cannot write in {display_path(path.parent)} ({exc.strerror or exc}); "
            "choose a writable directory for -o"
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as any new file; 0600 is for now
        if force:
            os.replace(temporary, path)
        else:
            os.link(temporary, path)
    except FileExistsError:
        raise _Refused(f"{shown} appeared while converting; pass --force to replace it") from None
    except OSError as exc:
        raise _Refused(f"cannot write {shown}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _summary(conversion: Conversion, output: str | None) -> str:
    agents = conversion.config["agents"]
    types = Counter(agent["backend"]["type"] for agent in agents)
    kinds = ", ".join(f"{n} {kind}" for kind, n in types.items())
    counts = Counter(note.kind for note in conversion.notes)
    where = f"wrote {display_path(output)}" if output is not None else "converted"
    return (
        f"{where}: {plural(len(agents), 'agent')} ({kinds}); "
        f"{counts[NoteKind.CHANGED]} changed, {counts[NoteKind.DROPPED]} dropped"
    )
