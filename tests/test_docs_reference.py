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
