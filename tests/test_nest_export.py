"""`search --timeloop DIR` / `--zigzag DIR` share one exporter (dsasim/cli/nest_export.py): a format's files are
written all or none, and a nest the format cannot express writes nothing."""

import pytest

from dsasim.cli.common import CliError
from dsasim.cli.nest_export import NEST_FORMATS, NestExport, NestFormat


def _format(texts):
    return NestFormat("--x", "x files", ("a.yaml", "b.yaml"), lambda target: None, texts)


def test_a_file_that_cannot_be_written_leaves_none_written(tmp_path):
    (tmp_path / "b.yaml").mkdir()  # the second file cannot replace a folder: its write fails after a.yaml's text
    export = NestExport(_format(lambda nest, hw: ("A", "B")), tmp_path)
    with pytest.raises(OSError):
        export.write(None, None)
    assert not (tmp_path / "a.yaml").exists()


def test_a_nest_the_format_cannot_express_is_one_line_and_nothing_written(tmp_path):
    def refuse(nest, hw):
        raise ValueError("tile 5 does not divide 12")

    with pytest.raises(CliError, match=r"^--x: tile 5 does not divide 12$"):
        NestExport(_format(refuse), tmp_path).write(None, None)
    assert list(tmp_path.iterdir()) == []


def test_every_format_names_distinct_files_and_its_flag():
    assert {f.flag for f in NEST_FORMATS.values()} == {"--timeloop", "--zigzag"}
    with pytest.raises(ValueError):
        NestFormat("x", "x", ("a",), lambda t: None, lambda n, h: ("",))
    with pytest.raises(ValueError):
        NestFormat("--x", "x", ("a", "a"), lambda t: None, lambda n, h: ("",))
