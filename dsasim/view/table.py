"""The one table formatter: every table `dsasim` prints (the command line, `python -m dsasim.kernels.conv_mapping`)
goes through `format_table`. A view of numbers, so the kernels and the library may use it without the CLI."""

from __future__ import annotations

from typing import Collection, Sequence

__all__ = ["cell", "format_table"]


def cell(value: int | str | None) -> str:
    """A table cell: a count (int or numpy integer) with thousands separators, '-' for a missing value, text
    as it is (ratios and percentages come formatted by the caller)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{value:,}"


def format_table(header: Sequence[str], rows: Sequence[Sequence[int | str | None]],
                 left: Collection[int] = (0,)) -> str:
    """Columns padded to their widest cell, two spaces apart, a dashed rule under the header; the columns
    numbered in `left` are left-aligned (names), the others right-aligned (numbers)."""
    cells = [list(header)] + [[cell(v) for v in row] for row in rows]
    for row in cells:
        if len(row) != len(header):
            raise ValueError(f"a table row has {len(row)} cells for {len(header)} columns: {row}")
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
