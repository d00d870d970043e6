"""The hash of a run's effective config, recorded on each result line so that a resume can
tell results made with another config from results made with this one.

The hash covers everything that shapes a run: the config after the file, the flags, the
line's overrides and the mode table, and the collaboration mode. API keys are left out
(each is hashed as its mask): rotating a key does not change what a run does.
"""

from __future__ import annotations

import hashlib

from conclave.config.canonical import canonical_json
from conclave.config.modes import CollaborationMode
from conclave.config.schema import ConclaveConfig

__all__ = ["config_hash"]

_HASH_CHARS = 16


def config_hash(config: ConclaveConfig, collaboration: CollaborationMode) -> str:
    """A short hex digest of the run's effective config (see the module docstring)."""
    text = canonical_json({"config": config, "collaboration": collaboration})
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
