"""The WriteTracker's baseline kept on disk by a paused run, for the run that resumes it.

A run paused on a question (``--on-question pause``) ends; ``conclave resume`` goes on with
it in a new process. The writable context paths were indexed before the paused run wrote
them, and that index (:class:`~actors.workspace.file_index.FileIndex`) lives in memory: kept
in the paused run's log directory as :data:`BASELINE_FILE`, it is the resumed run's baseline
too, so the resumed run's ``writes`` (and its list and diff) cover the whole run, what was
written before the pause included, measured from the same files. The run directories it
excluded are kept with it: the resumed run does not count them as the user's files either.

Written atomically (:func:`~conclave.config.atomic_file.write_atomically`): a crash
leaves the file whole or absent, and an absent or unreadable one only means the resumed
run measures from the resume on, as it would have without it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import attrs

from conclave.actors.workspace.file_index import FileIndex, FileState
from conclave.config.atomic_file import write_atomically

__all__ = ["BASELINE_FILE", "KeptBaseline", "keep_baseline", "kept_baseline"]

BASELINE_FILE = "context_path_baseline.json"
_FORMAT = 1


@attrs.frozen(kw_only=True)
class KeptBaseline:
    index: FileIndex
    excluded: tuple[Path, ...]
    """The paused run's own directories, which its index skipped."""


def keep_baseline(index: FileIndex, excluded: tuple[Path, ...], log_dir: Path) -> None:
    """Write ``index`` (and the directories it skipped) into ``log_dir`` (blocking)."""
    data = {
        "format": _FORMAT,
        "excluded": [str(p) for p in excluded],
        "files": {path: _state_json(state) for path, state in index.files.items()},
        "kept": {path: base64.b64encode(text).decode("ascii") for path, text in index.kept.items()},
    }
    write_atomically(log_dir / BASELINE_FILE, json.dumps(data))


def kept_baseline(log_dir: Path) -> KeptBaseline | None:
    """The baseline a paused run kept in ``log_dir``; ``None`` if it kept none (it paused
    before its writing phase) or it cannot be read (blocking)."""
    try:
        data = json.loads((log_dir / BASELINE_FILE).read_text(encoding="utf-8"))
        if data.get("format") != _FORMAT:
            return None
        return KeptBaseline(
            index=FileIndex(
                files={path: _state(raw) for path, raw in data["files"].items()},
                kept={path: base64.b64decode(text) for path, text in data["kept"].items()},
            ),
            excluded=tuple(Path(p) for p in data["excluded"]),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _state_json(state: FileState) -> dict[str, Any]:
    return attrs.asdict(state) | {"digest": state.digest.hex()}


def _state(raw: dict[str, Any]) -> FileState:
    return FileState(**(raw | {"digest": bytes.fromhex(raw["digest"])}))
