"""The hash of a run's effective config, recorded on each result line so that a resume can
tell results made with another config from results made with this one.

The hash covers everything that shapes a run: the config after the file, the flags, the
line's overrides and the mode table, and the collaboration mode. API keys are left out
(each is hashed as its mask): rotating a key does not change what a run does.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

import attrs

from conclave.config.modes import CollaborationMode
from conclave.config.schema import ConclaveConfig
from conclave.config.secret import Secret

__all__ = ["config_hash", "plain"]

_HASH_CHARS = 16


def plain(value: Any) -> Any:
    """``value`` as JSON data, the same for equal configs: attrs classes by field (with their
    class name, so two sections with equal fields differ), enums by value, keys masked."""
    if attrs.has(type(value)):
        fields = {f.name: plain(getattr(value, f.name)) for f in attrs.fields(type(value))}
        return {"__class__": type(value).__name__, **fields}
    if isinstance(value, Secret):
        return value.to_json()
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        items = [plain(v) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, frozenset | set) else items
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def config_hash(config: ConclaveConfig, collaboration: CollaborationMode) -> str:
    """A short hex digest of the run's effective config (see the module docstring)."""
    data = {"config": plain(config), "collaboration": collaboration.value}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
