"""``${VAR}`` and ``${VAR:-default}`` in config values, from the environment.

A config names its keys and endpoints through the environment (``api_key: ${GROQ_KEY}``,
``base_url: ${OPENAI_BASE_URL:-https://api.openai.com/v1}``) so one file serves every
machine and no key is written into it. The rules, as in a POSIX shell and docker compose:

- ``${VAR}``: the variable's value (an empty value is a value);
- ``${VAR:-default}``: the value, or ``default`` when the variable is unset or empty;
- ``$${``: a literal ``${``; a ``$`` not followed by ``{`` is itself.

A variable that is unset with no default is an error naming it (:class:`MissingVariable`),
never an empty string: an empty key or URL would fail later, further from the cause.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["BadReference", "MissingVariable", "interpolate", "mentions_variables"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class BadReference(ValueError):
    """``${`` that does not start a reference: no closing ``}`` or not a variable name."""


class MissingVariable(ValueError):
    """``${VAR}`` names a variable that is not set, and gives no default."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"${{{name}}} names an environment variable that is not set; set {name}, or give "
            f"a default as ${{{name}:-value}}"
        )
        self.name = name


def mentions_variables(text: str) -> bool:
    """Whether :func:`interpolate` could change ``text`` (it holds ``${`` or ``$${``)."""
    return "${" in text


def interpolate(text: str, environ: Mapping[str, str]) -> str:
    """``text`` with every reference replaced (see the module docstring)."""
    out: list[str] = []
    i = 0
    while True:
        start = text.find("$", i)
        if start < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:start])
        if text.startswith("$${", start):
            out.append("${")
            i = start + 3
        elif text.startswith("${", start):
            end = text.find("}", start + 2)
            if end < 0:
                raise BadReference(
                    f"{text[start:]!r} opens ${{ without a closing }}; write ${{VAR}} or "
                    "${VAR:-default}, or $${ for a literal ${"
                )
            out.append(_resolve(text[start + 2 : end], environ))
            i = end + 1
        else:
            out.append("$")
            i = start + 1


def _resolve(reference: str, environ: Mapping[str, str]) -> str:
    name, has_default, default = reference.partition(":-")
    if not _NAME.fullmatch(name):
        raise BadReference(
            f"${{{reference}}} is not a variable reference: a name is letters, digits and "
            "'_', not starting with a digit (write $${ for a literal ${)"
        )
    value = environ.get(name)
    if has_default:
        return value if value else default
    if value is None:
        raise MissingVariable(name)
    return value
