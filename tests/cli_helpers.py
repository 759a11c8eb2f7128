"""Helpers shared by the CLI error-corpus tests (kept free of torch so that those tests import quickly)."""

from __future__ import annotations

from dsasim.cli import main


def one_line_error(argv: list[str], capsys, expect: str) -> str:
    """Run the CLI; assert exit 2, one stderr line naming the command and `expect`, nothing on stdout."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, code, err)
    assert "Traceback" not in err and out == "", (argv, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dsasim {argv[0]}: "), err
    assert expect in lines[0], (expect, lines[0])
    return lines[0]
