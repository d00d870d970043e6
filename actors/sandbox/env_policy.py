"""Which of Conclave's environment variables a sandboxed command gets, by name: the
``orchestrator.sandbox.env`` policy (see :class:`~config.schema.sandbox.SandboxEnv`).

This is the policy by *name*, applied first; whatever it passes may still be scrubbed by
*value* (a secret's value under an innocent name) after it, by a function of its own.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

from conclave.config.schema.sandbox import SandboxEnv

__all__ = ["SECRET_NAME", "container_environment", "looks_secret", "policy_environment"]

SECRET_NAME = re.compile(
    r"(API_?KEY|_TOKEN$|^TOKEN$|_SECRET$|SECRET|PASSWORD|PASSWD|CREDENTIALS?$|ACCESS_KEY|PRIVATE_KEY)",
    re.IGNORECASE,
)
"""Names of variables that hold secrets: every ``*_API_KEY``, ``*_TOKEN``, ``*_SECRET`` and
the other usual spellings (``AWS_SECRET_ACCESS_KEY``, ``PGPASSWORD``...)."""


def looks_secret(name: str) -> bool:
    return SECRET_NAME.search(name) is not None


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def policy_environment(environ: Mapping[str, str], policy: SandboxEnv) -> dict[str, str]:
    """``environ`` as a local command gets it: a name ``allow`` matches passes; else one
    ``deny`` matches or that looks like a secret is withheld; every other passes."""
    return {
        name: value
        for name, value in environ.items()
        if _matches(name, policy.allow) or not (_matches(name, policy.deny) or looks_secret(name))
    }


def container_environment(environ: Mapping[str, str], policy: SandboxEnv) -> dict[str, str]:
    """What a container gets of ``environ``: only the variables ``allow`` matches (the
    host's ``PATH`` or ``HOME`` mean nothing inside the image)."""
    return {name: value for name, value in environ.items() if _matches(name, policy.allow)}
