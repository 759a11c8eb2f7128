"""One self-contained HTML page: headings, facts, tables, figures inline as SVG, preformatted text; CSS inline, no
script, no link to anything outside the file (it opens offline, from a mail attachment or an archive).

Three rules hold for every page (tests/test_html_report.py checks each, bench/mutation.py plants their bugs):

* every string put into the page is escaped (`escape`): layer, tensor, schedule and hardware names come from user
  files, and a name such as `<script>` must read as text, never run;
* the same content gives the same bytes: no date, no random id. matplotlib's SVG ids are random unless
  `svg.hashsalt` is set and its metadata carries a date unless `Date` is None; `figure_svg` sets both, and prefixes
  every id of a figure with its key (matplotlib numbers `figure_1`, `axes_1` ... afresh in each figure), so that
  two figures on one page never share an id;
* the page is written whole or not at all (`dsasim.atomic`): never a truncated file, never a temporary one left.
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path
from typing import TYPE_CHECKING, Collection, Sequence

from dsasim.atomic import write_text_atomic
from dsasim.view.table import cell

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["HtmlPage", "escape", "figure_svg"]

# text as glyph paths (matplotlib's default, said here): the figure looks as laid out whatever fonts the reader has
# (as <text>, another font's widths push titles and labels over the edges); the page's tables carry the numbers
SVG_RC = {"svg.fonttype": "path"}
SVG_SALT = "dsasim"  # matplotlib's ids hash their content with it: deterministic (it draws a random salt otherwise)
# an id, and the references to one (url(#id) in styles and clip paths, href="#id" of markers), inside a tag: text
# is outside tags (matplotlib escapes its < and >, and the " of attribute values), so a label never matches
_SVG_TAG = re.compile(r"<[^>]*>")
_SVG_ID = re.compile(r'(\sid="|url\(#|href="#)')

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; margin: 1.5em auto;
       max-width: 1200px; padding: 0 1em; color: #1b1b1b; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
p.subtitle { color: #555; margin-top: 0; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #e4e4e4; }
th { background: #f3f3f3; text-align: left; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.facts th { background: none; font-weight: normal; color: #444; white-space: nowrap; }
table.facts td { font-weight: 600; }
div.table { overflow-x: auto; }
div.table.long { max-height: 36em; overflow-y: auto; border: 1px solid #e4e4e4; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: 0.85em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
p.warning { background: #fff3cd; border-left: 4px solid #e0a800; padding: 0.4em 0.8em; }
"""


def escape(value: object) -> str:
    """`value` as text safe inside an HTML element or a quoted attribute (& < > " ' escaped)."""
    return html.escape(str(value), quote=True)


def figure_svg(fig: Figure, key: str) -> str:
    """`fig` as an inline <svg> element (no XML prolog): byte-identical for the same figure and `key`; every id
    (and every reference to one) starts with `key`, so figures with distinct keys on one page never share an id."""
    import matplotlib

    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", key):
        raise ValueError(f"a figure key starts with a letter and holds letters, digits, _ and - only, got {key!r}")
    buffer = io.StringIO()
    with matplotlib.rc_context({**SVG_RC, "svg.hashsalt": SVG_SALT}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return _SVG_TAG.sub(lambda tag: _SVG_ID.sub(lambda m: m.group(1) + key + "-", tag.group(0)),
                        text[text.index("<svg"):].strip())


class HtmlPage:
    """A page built in order (title, then sections of facts, tables, figures, text) and written as one file.

    Every method escapes what it is given; `html()` is the page, `write(path)` writes it atomically."""

    def __init__(self, title: str, subtitle: str = "") -> None:
        self.title = title
        self._body: list[str] = [f"<h1>{escape(title)}</h1>"]
        if subtitle:
            self._body.append(f'<p class="subtitle">{escape(subtitle)}</p>')
        self._figures = 0

    def section(self, heading: str) -> None:
        """Start a section under `heading`."""
        self._body.append(f"<h2>{escape(heading)}</h2>")

    def paragraph(self, text: str, warning: bool = False) -> None:
        """A paragraph of plain text (`warning`: set apart, for a partial result)."""
        self._body.append(f'<p class="warning">{escape(text)}</p>' if warning else f"<p>{escape(text)}</p>")

    def bullets(self, items: Sequence[str]) -> None:
        """A bulleted list of plain-text items (nothing when empty)."""
        if items:
            self._body.append("<ul>" + "".join(f"<li>{escape(item)}</li>" for item in items) + "</ul>")

    def facts(self, items: Sequence[tuple[str, int | str | None]]) -> None:
        """Label and value pairs, one per row (counts get thousands separators, None reads '-')."""
        rows = "".join(f"<tr><th>{escape(label)}</th><td>{escape(cell(value))}</td></tr>" for label, value in items)
        self._body.append(f'<table class="facts">{rows}</table>')

    def table(self, header: Sequence[str], rows: Sequence[Sequence[int | str | None]],
              left: Collection[int] = (0,)) -> None:
        """A table as `dsasim.view.table.format_table` prints it: cells by `cell`, the columns in `left` (names)
        left-aligned, the others (numbers) right-aligned; a long table scrolls inside its box."""
        for row in rows:
            if len(row) != len(header):
                raise ValueError(f"a table row has {len(row)} cells for {len(header)} columns: {row}")
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{escape(cell(v))}</td>" if i in left else
                                        f'<td class="num">{escape(cell(v))}</td>' for i, v in enumerate(row))
                       + "</tr>" for row in rows)
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        box = "table long" if len(rows) > 25 else "table"
        self._body.append(f'<div class="{box}">{table}</div>')

    def figure(self, fig: Figure, caption: str) -> None:
        """A matplotlib figure inline as SVG, with its caption (plain text)."""
        self._figures += 1
        self._body.append(f"<figure>{figure_svg(fig, f'figure{self._figures}')}"
                          f"<figcaption>{escape(caption)}</figcaption></figure>")

    def preformatted(self, text: str, summary: str | None = None) -> None:
        """Text as printed, in a fixed-width block; with `summary`, folded under it (opened by a click)."""
        block = f"<pre>{escape(text)}</pre>"
        self._body.append(f"<details><summary>{escape(summary)}</summary>{block}</details>" if summary else block)

    def html(self) -> str:
        """The whole page: a UTF-8 HTML5 document, CSS inline, no script, nothing loaded from elsewhere."""
        return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                "<link rel=\"icon\" href=\"data:,\">\n"
                f"<title>{escape(self.title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
                + "\n".join(self._body) + "\n</body>\n</html>\n")

    def write(self, path: str | Path) -> Path:
        """Write the page to `path` atomically (whole or not at all); the path written."""
        return write_text_atomic(path, self.html())
