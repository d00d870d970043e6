"""``conclave import massgen MASSGEN.yaml [-o conclave.yaml] [--force]``: switch from MassGen.

Reads a MassGen config, converts it (:mod:`config.massgen`), prints one line on stderr for
every key that changed meaning or was dropped, and checks the result with the same loader and
whole-config checks as ``conclave validate``. Only a config that validates is written: to
stdout, or with ``-o`` to a file, atomically (a temporary file in the same directory, renamed
into place: a reader never sees half a config) and never over an existing file without
``--force``. Exit 0 when written; 2 when the input is not a MassGen config, the result does
not validate (every problem is printed; nothing is written), or the output is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import yaml

from conclave.config.limits import MAX_CONFIG_BYTES
from conclave.config.loader import ConfigError, parse_yaml, read_config_text
from conclave.config.massgen import Conversion, MassGenError, NoteKind, convert_massgen
from conclave.config.validation import check_runnable
from conclave.config.wording import plural
from conclave.ui.exit_codes import ExitCode
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
        unset = _validate(text, source=display_path(target))
        for name in unset:
            print(
                f"{_PROG}: the config names ${{{name}}}, which is not set here; set {name} "
                "before running it",
                file=sys.stderr,
            )
        if args.output is None:
            sys.stdout.write(text)
            sys.stdout.flush()
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


def _validate(text: str, *, source: str) -> list[str]:
    """Load ``text`` as ``conclave run`` would load the file (interpolation, the schema walk,
    the whole-config checks); any problem refuses the import. The environment variables it
    names that are not set are returned, not refused."""
    environ = _StandIns(os.environ)
    try:
        loaded = read_config_text(text, source=source, environ=environ)
        check_runnable(loaded.config, source=source, locations=loaded.locations)
    except ConfigError as exc:
        raise _Refused(
            f"the converted config does not validate, so nothing was written:\n{exc}"
        ) from None
    return environ.unset


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
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
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
        os.chmod(temporary, 0o666 & ~umask)  # as any new file; mkstemp's 0600 is for now
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
