"""A sandbox's environment without the run's secrets, by value and by name.

The local sandbox's commands inherit the user's environment as the ``sandbox.env`` policy
gives it (actors/sandbox/env_policy.py: names that look secret are withheld unless allowed). A key
can live under any name (an agent's ``api_key_env`` may be ``ZQ_CRED``), so the run's own
secrets (config.run_secrets) are removed as well: every variable ``api_key_env`` names, and
every variable whose value holds a secret value, whatever it is called, after the policy.
"""

from __future__ import annotations

from collections.abc import Mapping

from conclave.config.run_secrets import RunSecrets

__all__ = ["without_secrets"]


def without_secrets(environ: Mapping[str, str], secrets: RunSecrets) -> dict[str, str]:
    """``environ`` without the variables ``secrets`` names and those whose value contains
    one of its values."""
    values = secrets.values
    return {
        name: value
        for name, value in environ.items()
        if name not in secrets.variables and not any(secret in value for secret in values)
    }
