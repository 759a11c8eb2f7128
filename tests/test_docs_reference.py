"""The reference pages cover what the code accepts: every key a hardware file may set is described in
docs/reference/hardware.md, so a user describing their hardware finds each setting (e.g. the DDR port rule)."""

import dataclasses
import re
from pathlib import Path

from dsasim.hardware import Accelerator, _LEVEL_FIELDS

HARDWARE_PAGE = Path(__file__).resolve().parent.parent / "docs" / "reference" / "hardware.md"


def test_every_key_of_a_hardware_file_is_described_on_the_hardware_page():
    text = HARDWARE_PAGE.read_text(encoding="utf-8")
    fences = re.findall(r"^```\w*\n(.*?)^```", text, re.M | re.S)  # the TOML examples
    prose = re.sub(r"^```\w*\n.*?^```", "", text, flags=re.M | re.S)
    spans = fences + re.findall(r"`([^`]+)`", prose)  # code spans, which may wrap across a line
    described = {word for span in spans for word in re.findall(r"\w+", span)}
    keys = [f.name for f in dataclasses.fields(Accelerator)] + list(_LEVEL_FIELDS)
    assert len(keys) >= 15
    assert [key for key in keys if key not in described] == []


def test_the_network_commands_help_names_both_forms_of_a_users_network():
    """`dsasim network` and `sweep-sram --network` load a user's nn.Module from an importable module or from a
    file (docs/sizing-sram.md shows `my_net.py:Net`); their --help says both, not MODULE:ATTR alone."""
    import contextlib
    import io

    from dsasim.cli import build_parser

    for argv in (["network", "--help"], ["sweep-sram", "--help"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            build_parser().parse_args(argv)
        text = " ".join(out.getvalue().split())
        assert "MODULE:ATTR" in text and "FILE.py:ATTR" in text, argv
