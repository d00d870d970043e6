"""A sandbox's environment without the run's secrets, by value and by name.

The local sandbox's commands inherit the user's environment, scrubbed of variables whose
*names* say they hold secrets (``*_API_KEY``, ``*_TOKEN``...: actors/sandbox/local.py). A key
can live under any name (an agent's ``api_key_env`` may be ``ZQ_CRED``), so the run's own
secrets (config.run_secrets) are removed as well: every variable ``api_key_env`` names, and
every variable whose value holds a secret value, whatever it is called. The docker sandbox
passes no variable of the user's (only ``HOME``), so it needs neither.
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
