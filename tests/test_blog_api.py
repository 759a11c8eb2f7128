"""The blog's API as dsasim keeps it: unclamped Segments, Infer's get_input_segment/get_w_segment, a region given
as one list or tuple with the reuse flag, the blog counter's quirk mode, and `dsasim demo --blog-quirks`."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from dsasim import (Conv2dBoundsInfer, GlobalHierarchy, Schedule, Segment, Segments, Session, VectorUnit, Workload,
                    preset, run_schedule)
from dsasim.cli import main
from dsasim.traced.schedule import max_abs_error


def test_unclamped_segments_keep_the_last_tile_full_sized():
    assert list(Segments(0, 50, 24, clamp=False)) == [(0, 24), (24, 48), (48, 72)]
    assert list(Segments(0, 50, 24)) == [(0, 24), (24, 48), (48, 50)]
    assert list(Segments(0, 48, 24, clamp=False)) == [(0, 24), (24, 48)]  # even tiling: no difference
    with pytest.raises(ValueError, match="clamp must be True or False"):
        Segments(0, 4, 2, clamp="no")


INFER = Conv2dBoundsInfer(in_channels=2048, out_channels=512, kernel_size=1, input_shape=(1, 2048, 56, 56))


def test_get_input_segment_of_a_1x1_conv_is_the_output_rows_and_all_channels():
    seg = INFER.get_input_segment(Segment(0, 1), Segment(24, 48), Segment(4, 6), slice(0, 56))
    assert seg == [(0, 1), (0, 2048), (4, 6), (0, 56)] and isinstance(seg, list)
    seg[1] = Segment(16, 32)  # the blog narrows the channels in place
    assert seg[1] == (16, 32)


def test_an_unclamped_last_channel_tile_reaches_a_second_group_of_input_channels():
    # oc 504:528 of 512: (527 // 512 + 1) * 2048 = 4096 input channels, as the blog's group arithmetic gives
    assert INFER.get_input_segment(0, Segment(504, 528), (0, 2), (0, 56))[1] == (0, 4096)
    assert INFER.get_w_segment(Segment(504, 528)) == [(504, 528), (0, 2048), (0, 1), (0, 1)]
    grouped = Conv2dBoundsInfer(in_channels=8, out_channels=4, kernel_size=3, padding=1, groups=2,
                                input_shape=(1, 8, 5, 5))
    # groups of 2 output / 4 input channels: oc 1:3 touches groups 0 and 1; rows 0:2 of a 3x3 pad-1 conv read
    # input rows 0:3 (row -1 is padding)
    assert grouped.get_input_segment(0, (1, 3), (0, 2), (4, 5)) == [(0, 1), (0, 8), (0, 3), (3, 5)]
    assert grouped.get_w_segment(slice(2, 4)) == [(2, 4), (0, 4), (0, 3), (0, 3)]


@pytest.mark.parametrize("args, words", [
    ((0, (3, 2), 0, 0), "oc range (3, 2)"),
    ((0, (600, 601), 0, 0), "start < 512"),
    ((0, 0.5, 0, 0), "oc range 0.5"),
    ((0, slice(0, 8, 2), 0, 0), "has a step"),
])
def test_get_input_segment_rejects_bad_ranges(args, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        INFER.get_input_segment(*args)


def _session(**kw):
    s = Session(preset("blog"), numeric=False, **kw)
    return s, s.input("a", (4, 6)), s.output("o", (4, 6))


def test_a_region_as_one_list_or_tuple_with_the_reuse_flag():
    s, a, o = _session()
    with GlobalHierarchy(s, "x"):
        t = a[[Segment(0, 2), Segment(0, 3)]]                      # the blog's a[seg_list]
        assert t.region == ((0, 2), (0, 3))
        t = a[[Segment(2, 4), Segment(0, 3)], True]               # a[seg_list, reuse]
        assert t.region == ((2, 4), (0, 3)) and t.buffer.id == 0  # loaded into the same buffer
        t = o[(Segment(0, 4), Segment(0, 6)), False]              # the blog's output[(b, oc, oh, ow), reuse]
        assert t.region == ((0, 4), (0, 6))
        t = a[(1, 3), False]                                      # a tuple of ints stays one (start, stop) pair
        assert t.region == ((1, 3), (0, 6))
    assert s.counters.loaded_bytes == 6 + 6 + 12


def test_quirk_mode_counts_regions_as_written_before_clamping():
    for quirks, expected in ((False, 2 * 6 + 4 * 2 + 1 * 1 + 4 * 6), (True, 3 * 6 + 4 * 3 + 1 * 4 + 4 * 6)):
        s, a, o = _session(blog_quirks=quirks)
        with GlobalHierarchy(s, "x"):
            a[Segment(2, 5)]                   # rows 2:5 of 4: 3 rows written, 2 real
            a[:, Segment(4, 7)]                # columns 4:7 of 6
            a[3, 5:9]                          # a slice past the edge: 4 columns written, 1 real (a hit)
            a[slice(0, None)]                  # the whole tensor: 24 either way
        assert s.counters.blog_loaded_elements == expected
        assert s.counters.loaded_bytes == 2 * 6 + 4 * 2 + 24  # traffic is clamped in both modes
    with pytest.raises(ValueError, match="blog_quirks must be True or False"):
        Session(preset("blog"), blog_quirks=1)


def test_nan_or_inf_is_an_error_never_zero():
    ref = {"o": torch.tensor([1.0, 2.0], dtype=torch.float64)}
    assert max_abs_error({"o": np.array([1.0, 2.5], np.float32)}, ref) == 0.5
    assert math.isnan(max_abs_error({"o": np.array([np.nan, 2.0], np.float32)}, ref))
    assert max_abs_error({"o": np.array([np.inf, 2.0], np.float32)}, ref) == math.inf
    both = {"o": torch.tensor([math.inf, math.nan], dtype=torch.float64)}
    assert max_abs_error({"o": np.array([np.inf, np.nan], np.float32)}, both) == 0.0


def _copy_then_poison(s, x, y):
    """y = x, except that one element becomes NaN (an arithmetic bug in a schedule)."""
    vector = VectorUnit(s)
    with GlobalHierarchy(s, "all"):
        out = y[:, :]
        out.assign(vector.copy(x[:, :]))
        out.data[1, 2] = np.nan


def test_a_schedule_writing_nan_fails_the_numeric_check():
    workload = Workload("copy", inputs={"x": (2, 3)}, outputs={"y": (2, 3)}, reference=lambda x: {"y": x})
    r = run_schedule(Schedule("poisoned", workload, _copy_then_poison), preset("blog"))
    assert r.status == "error" and math.isnan(r.max_abs_err)
    assert "output y holds 1 NaN/inf value(s), first at index (1, 2)" in r.message
    assert r.to_json()["max_abs_err"] is None  # JSON has no NaN


def test_demo_blog_quirks_column(capsys):
    assert main(["demo", "--count-only", "--quiet", "--no-timing", "--blog-quirks",
                 "--only", "demo4", "demo5-1", "demo6"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("demo")}
    assert "blog printed" in out.splitlines()[0]
    assert rows["demo5-1"].split()[8:11] == ["30,515,200", "=", "30,515,200"]  # 24,092,672 + demo4 6,422,528
    assert "overflow" in rows["demo4"] and "6,422,528" in rows["demo4"]
    assert rows["demo6"].split()[8:11] == ["722,528", "=", "722,528"]
    assert main(["demo", "--count-only", "--quiet", "--no-timing", "--only", "demo5-1"]) == 0
    out = capsys.readouterr().out
    assert "blog printed" not in out and "24,092,672" in out


# -- results: keyword construction, a Status enum whose JSON value is the plain string ---------------------------
def test_run_result_is_keyword_only_and_its_status_an_enum_with_the_plain_string_value():
    from dsasim import RunResult, Status
    with pytest.raises(TypeError):
        RunResult("x", "blog", "ok", "")  # positional: 13 fields, 9 of them None, were too easy to misplace
    r = RunResult(name="x", hardware="blog", status="overflow")  # a plain string becomes the member
    assert r.status is Status.OVERFLOW and r.status == "overflow" and f"{r.status}" == "overflow"
    assert (r.loaded_bytes, r.macs, r.max_abs_err, r.tensors, r.message) == (None, None, None, (), "")
    assert [s.value for s in Status] == ["ok", "overflow", "error"]
    assert json.dumps(r.to_json()["status"]) == '"overflow"'
    with pytest.raises(ValueError, match="'fine' is not a valid Status"):
        RunResult(name="x", hardware="blog", status="fine")
    tiny = Workload("tiny", inputs={"a": (2,)}, outputs={"o": (2,)}, reference=lambda a: {"o": a})

    def copy(s, a, o):
        with GlobalHierarchy(s):
            o[:].assign(VectorUnit(s).copy(a[:]))

    ok = run_schedule(Schedule("copy", tiny, copy), preset("blog"))
    assert ok.status is Status.OK and ok.to_json()["status"] == "ok" and ok.max_abs_err == 0.0


# -- torch only where numbers are checked --------------------------------------------------------------------------
def test_import_and_a_count_only_run_never_load_torch_a_numeric_run_does():
    code = ("import dataclasses, sys, dsasim\n"
            "assert 'torch' not in sys.modules, 'import dsasim loaded torch'\n"
            "from dsasim.kernels.blog_demos import SCHEDULES\n"
            "demo = {s.name: s for s in SCHEDULES}['demo3-3']\n"
            "r = dsasim.run_schedule(demo, dsasim.preset('blog'), numeric=False, record_trace=False)\n"
            "assert r.status == 'ok' and 'torch' not in sys.modules, 'a count-only run loaded torch'\n"
            "small = dataclasses.replace(demo.workload, inputs={'image': (1, 40, 3, 5), 'weight': (20, 40, 1, 1)},\n"
            "                            outputs={'output': (1, 20, 3, 5)})\n"
            "r = dsasim.run_schedule(dataclasses.replace(demo, workload=small), dsasim.preset('blog'))\n"
            "assert r.status == 'ok' and r.max_abs_err < 1e-4 and 'torch' in sys.modules, r\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
