"""A table of text cells, drawn two ways: aligned columns for a terminal (the batch's
summary) or Markdown (``conclave report``), so both show the same figures."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

__all__ = ["Table"]


@attrs.frozen(kw_only=True)
class Table:
    header: Sequence[str]
    rows: Sequence[Sequence[str]]

    def aligned(self) -> str:
        """The first column left-aligned, the others right-aligned, two spaces apart."""
        widths = [max(len(h), *(len(r[i]) for r in self.rows)) for i, h in enumerate(self.header)]

        def line(values: Sequence[str]) -> str:
            return "  ".join(
                v.ljust(w) if i == 0 else v.rjust(w)
                for i, (v, w) in enumerate(zip(values, widths, strict=True))
            )

        return "\n".join([line(self.header), *(line(r) for r in self.rows)])

    def markdown(self) -> str:
        """A GitHub-flavoured Markdown table; ``|`` in a cell is escaped."""

        def line(values: Sequence[str]) -> str:
            return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"

        rule = "|" + "|".join("---" if i == 0 else "---:" for i in range(len(self.header))) + "|"
        return "\n".join([line(self.header), rule, *(line(r) for r in self.rows)])
