"""Issue 26, part 6 (numbers): one rule for sizes (`dsasim.util.format_bytes`) and thousands separators wherever
counts reach a person: simulate's summary, the SRAM overflow text, the unlimited-SRAM note.

Expected strings are derived by hand in the comments; a raw integer of 4+ digits is caught by a regex."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from dsasim import GlobalHierarchy, Schedule, Session, TensorCore, Workload, preset, run_schedule
from dsasim.errors import SramOverflowError
from dsasim.traced.segments import Segment
from dsasim.timing import simulate
from dsasim.util import format_bytes

RAW_COUNT = re.compile(r"(?<![\d,.])\d{4,}(?![\d,])")  # 4+ digits with no separator: 1234, but not 1,234 or 0.1234


@pytest.mark.parametrize("n_bytes, text", [
    (0, "0 B"),
    (1000, "1000 B"),  # below 1 KiB: exact bytes
    (1023, "1023 B"),
    (1024, "1 KiB"),
    (12_800, "12.5 KiB"),  # 12800 / 1024 = 12.5 exactly
    (126_362, "123 KiB"),  # 126362 / 1024 = 123.4: 3 significant digits
    (141_312, "138 KiB"),  # 138 x 1024
    (1_572_864, "1.5 MiB"),  # 1536 KiB, the blog's SRAM: 1.5 x 2^20
    (6_498_304, "6.2 MiB"),  # 6346 KiB (the example): 6346 / 1024 = 6.197 -> 6.20 -> 6.2
    (1_403_904, "1.34 MiB"),  # 1371 KiB: 1371 / 1024 = 1.3389
    (8_388_608, "8 MiB"),
    ((1 << 20) - 1, "1 MiB"),  # 1023.999 KiB rounds to 1024 KiB: said as the next unit, not '1024 KiB'
    (3 << 30, "3 GiB"),
    (5000 << 30, "5000 GiB"),  # the largest unit keeps its whole part
    (np.int64(65_536), "64 KiB"),  # numpy integers too
])
def test_format_bytes_by_hand(n_bytes, text):
    assert format_bytes(n_bytes) == text


@pytest.mark.parametrize("bad", [1.5, "1024", True, None])
def test_format_bytes_refuses_what_is_not_a_byte_count(bad):
    with pytest.raises(TypeError, match="integer number of bytes"):
        format_bytes(bad)


def test_the_sweep_tables_use_the_same_rule():
    from dsasim.architect.studies import sweep
    assert sweep.format_bytes is format_bytes


def _tiles(s: Session, x, w, y, k: int, width: int) -> None:
    tc = TensorCore(s)
    with GlobalHierarchy(s, "weights"):
        wt = w[:, :, :, :]
        for j in range(k):
            with GlobalHierarchy(s, "tile", buffers=2):
                cols = Segment(j * width, (j + 1) * width)
                yt = y[:, :, :, cols]
                yt += tc.conv2d(x[:, :, :, cols], wt)


def _schedule(k: int = 40, width: int = 64) -> Schedule:
    workload = Workload("tiles", inputs={"x": (1, 16, 1, k * width), "w": (24, 16, 1, 1)},
                        outputs={"y": (1, 24, 1, k * width)}, reference=lambda x, w: {"y": x})
    return Schedule("tiles", workload, lambda s, x, w, y: _tiles(s, x, w, y, k, width))


def test_simulate_summary_separates_thousands():
    # 40 tiles of 64 columns: x 16 x 2560 = 40,960 B loaded plus 384 B of weights, y 24 x 2560 = 61,440 B stored;
    # every count above 999 must print with separators
    hw = preset("blog")
    result = simulate(run_schedule(_schedule(), hw, numeric=False).trace, hw)
    text = result.summary()
    assert result.cycles >= 1000 and result.loaded_bytes == 40_960 + 384 and result.stored_bytes == 61_440
    assert f"{result.cycles:,} cycles" in text
    assert "loaded 41,344 B, stored 61,440 B" in text
    assert "of 1.5 MiB" in text  # the blog's 1,572,864 B SRAM, as a size
    assert not RAW_COUNT.search(text), RAW_COUNT.findall(text)


def test_sram_overflow_text_separates_thousands():
    # a 4 KiB SRAM: x's row (1 x 5000 words of 1 B) is 5,000 B > 4,096 B
    hw = dataclasses.replace(preset("blog"), sram_bytes=4096)
    s = Session(hw, numeric=False)
    a = s.input("a", (2, 5000))
    with GlobalHierarchy(s, "rows"):
        with pytest.raises(SramOverflowError) as info:
            a[0, :]
    text = str(info.value)
    assert "allocating 5,000 B for a[0:1, 0:5000]" in text
    assert "live footprint 5,000 B > capacity 4,096 B (4 KiB)" in text
    assert not RAW_COUNT.search(text.replace("0:5000", "")), text  # (a region's bounds are indices, not counts)
    assert (info.value.capacity_bytes, info.value.requested_bytes) == (4096, 5000)


def test_unlimited_sram_note_separates_thousands():
    # the schedule above needs 384 B of weights plus 2 ways x (16 x 64 + 24 x 64 = 2,560 B) = 5,504 B at once
    hw = dataclasses.replace(preset("blog"), sram_bytes=4096)
    r = run_schedule(_schedule(), hw, numeric=False)
    assert r.status == "overflow"
    note = r.message.split("With unlimited SRAM", 1)[1]
    assert "it would need 5,504 B peak (capacity 4,096 B), load 41,344 B, store 61,440 B" in note
    assert not RAW_COUNT.search(note), note


def test_level_overflow_text_separates_thousands():
    # blog-l1's L1acc holds 16 KiB = 16,384 B: 200 x 48 words of 1 B = 9,600 B, x 2 ways = 19,200 B do not fit
    from tests.test_hierarchy import L1
    s = Session(L1, numeric=False)
    c = s.output("c", (200, 48))
    with GlobalHierarchy(s, "sram"):
        c[0:200, 0:48]
        with GlobalHierarchy(s, "acc", level="L1acc", ways=2):
            with pytest.raises(SramOverflowError) as info:
                c[0:200, 0:48]
    text = str(info.value)
    assert "allocating 19,200 B for c[0:200, 0:48] (2-way buffered)" in text
    assert "live footprint 19,200 B > its capacity 16,384 B (16 KiB)" in text
    assert not RAW_COUNT.search(text), text


def test_reuse_error_text_separates_thousands():
    # a buffer of 1 x 2000 words (2,000 B at 1 B/word) reused for 2 x 2000 words (4,000 B): does not fit
    from dsasim.errors import ReuseError
    s = Session(preset("blog"), numeric=False)
    a = s.input("a", (2, 2000))
    with GlobalHierarchy(s, "rows"):
        a[0, :]
        with pytest.raises(ReuseError) as info:
            a[0:2, :, True]
    text = str(info.value)
    assert "(4,000 B) does not fit the buffer it reuses (buffer 0, 2,000 B," in text
    assert not RAW_COUNT.search(text.replace("0:2000", "")), text


def test_sizes_refused_by_parse_sizes_print_with_separators():
    from dsasim.architect.studies.sweep import parse_sizes
    # 8 MiB = 8,388,608 B; 1 MiB = 1,048,576 B
    with pytest.raises(ValueError, match=r"HI \(1,048,576 B\) is below LO \(8,388,608 B\)"):
        parse_sizes("8MiB:1MiB")
