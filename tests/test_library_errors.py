"""A corpus of bad library calls: each raises a specific exception whose message says what was wrong.

Every case builds its own fresh Session (`Env`), makes one mistake a user could make, and asserts the exception
type and a fragment of the message that names the mistake. A bare TypeError/IndexError/ZeroDivisionError from
deep inside, or a silent wrong result, is a failure.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import pytest

from dsasim import (Accelerator, Conv2dBoundsInfer, GlobalHierarchy, ReadOnlyError, RegionError, ReuseError,
                    Segment, Segments, Session, StaleTileError, TensorCore, UnfinishedError, VectorUnit,
                    load_hardware, preset)
from dsasim.errors import CrossSessionError, ScheduleError, SessionStateError


def tiny(sram_bytes: int = 4096) -> Accelerator:
    return dataclasses.replace(preset("blog"), sram_bytes=sram_bytes)


class Env:
    """A fresh numeric session with an input x (4, 6), a weight w (24, 16, 1, 1), an image (1, 16, 4, 4) and an
    output o (4, 6); `scope()` opens a scope the case's mistake happens in."""

    def __init__(self, numeric: bool = True) -> None:
        self.s = Session(tiny(), numeric=numeric)
        rng = np.random.default_rng(0)
        data = (lambda shape: rng.standard_normal(shape).astype(np.float32)) if numeric else (lambda shape: shape)
        self.x = self.s.input("x", data((4, 6)))
        self.img = self.s.input("img", data((1, 16, 4, 4)))
        self.w = self.s.input("w", data((24, 16, 1, 1)))
        self.o = self.s.output("o", (4, 6))
        self.tc = TensorCore(self.s)
        self.vec = VectorUnit(self.s)

    def scope(self) -> GlobalHierarchy:
        return GlobalHierarchy(self.s, "case")


def in_scope(action: Callable[["Env"], Any]) -> Callable[..., Any]:
    """Run `action` inside a scope of the env (the exception leaves the scope, as in a real schedule)."""
    def run(env: Env, _tmp_path: Any = None) -> Any:
        with env.scope():
            return action(env)
    return run


def other_session_tile(env: Env):
    """A tile of a second, independent session (left live: its scope is never exited)."""
    s2 = Session(tiny())
    a = s2.input("a", np.ones((4, 6), np.float32))
    GlobalHierarchy(s2, "foreign").__enter__()
    return a[:, :]


def foreign_weight(env: Env):
    """A (24, 16, 1, 1) weight tile of a second session."""
    s2 = Session(tiny())
    w = s2.input("w", np.ones((24, 16, 1, 1), np.float32))
    GlobalHierarchy(s2, "foreign").__enter__()
    return w[:, :]


def write_foreign(env: Env) -> None:
    """Write a product of another session's unit and tile into this session's output tile."""
    foreign = other_session_tile(env)
    with env.scope():
        env.o[:, :].assign(VectorUnit(foreign.buffer.tensor.session).copy(foreign))


def stale(env: Env):
    with env.scope():
        t = env.x[0, :]
    return t                                          # its buffer was freed when the scope exited


def exit_out_of_order(env: Env):
    outer = env.scope().__enter__()
    GlobalHierarchy(env.s, "inner").__enter__()
    outer.__exit__(None, None, None)


def poisoned(env: Env) -> Env:
    try:
        with env.scope():
            raise RuntimeError("schedule bug")
    except RuntimeError:
        pass
    return env


def write_file(tmp_path, name: str, content: bytes):
    path = tmp_path / name
    path.write_bytes(content)
    return path



# (id, call(env, tmp_path), exception type, message fragment)
CASES: list = [
    # -- Session construction --------------------------------------------------------------------------------------
    ("session-not-accelerator", lambda e, p: Session("blog"), TypeError, "needs an Accelerator"),
    ("session-numeric-string", lambda e, p: Session(tiny(), numeric="no"), ValueError, "numeric must be True or False"),
    ("session-int-dtype", lambda e, p: Session(tiny(), dtype=np.int32), ValueError, "floating dtype"),
    ("session-bogus-dtype", lambda e, p: Session(tiny(), dtype="banana"), ValueError, "floating dtype"),
    ("session-negative-event-limit", lambda e, p: Session(tiny(), trace_event_limit=-1), ValueError,
     "trace_event_limit must be None or an integer >= 0"),
    ("session-scope-buffers-zero", lambda e, p: Session(tiny(), scope_buffers={"a": 0}), ValueError,
     "scope_buffers['a'] must be an integer >= 1"),
    ("session-scope-buffers-float", lambda e, p: Session(tiny(), scope_buffers={"a": 1.5}), ValueError,
     "must be an integer >= 1"),
    ("session-scope-buffers-list", lambda e, p: Session(tiny(), scope_buffers=[("a", 2)]), ValueError,
     "scope_buffers must map scope names"),
    # -- tensors ---------------------------------------------------------------------------------------------------
    ("tensor-duplicate-name", lambda e, p: e.s.output("x", (2,)), ValueError, "already exists"),
    ("tensor-empty-name", lambda e, p: e.s.output("", (2,)), ValueError, "must be a non-empty string"),
    ("tensor-int-name", lambda e, p: e.s.output(3, (2,)), ValueError, "must be a non-empty string"),
    ("output-float-shape", lambda e, p: e.s.output("y", (2.5, 3)), ValueError, "2.5 (float) is not an integer"),
    ("output-numpy-float-shape", lambda e, p: e.s.output("y", (np.float64(2.0), 3)), ValueError,
     "is not an integer"),
    ("output-zero-dim", lambda e, p: e.s.output("y", (0, 3)), ValueError, "all positive"),
    ("output-negative-dim", lambda e, p: e.s.output("y", (2, -3)), ValueError, "all positive"),
    ("output-no-dims", lambda e, p: e.s.output("y", ()), ValueError, "at least one dimension"),
    ("output-int-shape", lambda e, p: e.s.output("y", 5), ValueError, "must be a tuple of dimensions, e.g. (5,)"),
    ("output-bool-dim", lambda e, p: e.s.output("y", (True, 3)), ValueError, "True (bool) is not an integer"),
    ("output-shape-not-iterable", lambda e, p: e.s.output("y", None), ValueError, "must be a tuple of positive"),
    ("intermediate-none-dim", lambda e, p: e.s.intermediate("m", (2, None)), ValueError, "None (NoneType)"),
    ("input-count-only-float-shape", lambda e, p: Env(numeric=False).s.input("y", (2.5, 3)), ValueError,
     "is not an integer"),
    ("input-numeric-needs-array", lambda e, p: e.s.input("y", (2, 3)), ValueError, "numeric mode needs data"),
    ("input-numeric-list", lambda e, p: e.s.input("y", [[1.0, 2.0]]), ValueError, "got list"),
    ("input-string-data", lambda e, p: e.s.input("y", np.array(["a", "b"])), ValueError, "cannot be converted"),
    ("input-complex-data", lambda e, p: e.s.input("y", np.ones(3, complex)), ValueError, "cannot be converted"),
    ("input-empty-array", lambda e, p: e.s.input("y", np.zeros((0, 3), np.float32)), ValueError, "all positive"),
    ("input-0d-array", lambda e, p: e.s.input("y", np.array(1.0)), ValueError, "at least one dimension"),
    # -- indexing a TracedArray ------------------------------------------------------------------------------------
    ("index-float-slice", in_scope(lambda e: e.x[0.5:3]), RegionError, "slice start 0.5 (float) is not an integer"),
    ("index-float-stop", in_scope(lambda e: e.x[0:2.0]), RegionError, "slice stop 2.0"),
    ("index-float", in_scope(lambda e: e.x[1.0]), RegionError, "index 1.0 (float) is not an integer"),
    ("index-numpy-float", in_scope(lambda e: e.x[np.float64(1.0)]), RegionError, "(float64) is not an integer"),
    ("index-float-pair", in_scope(lambda e: e.x[(0.5, 2), ]), RegionError, "start 0.5 (float) is not an integer"),
    ("index-float-segment", in_scope(lambda e: e.x[Segment(0.5, 2)]), RegionError, "start 0.5"),
    ("index-bool-slice", in_scope(lambda e: e.x[True:3]), RegionError, "True (bool) is not an integer"),
    ("index-bool-pair", in_scope(lambda e: e.x[(False, 3), ]), RegionError, "False (bool) is not an integer"),
    ("index-step", in_scope(lambda e: e.x[0:4:-1]), RegionError, "step -1 is not supported"),  # (2: a strided box)
    ("index-float-step", in_scope(lambda e: e.x[0:4:1.0]), RegionError, "slice step 1.0"),
    ("index-negative", in_scope(lambda e: e.x[-1]), RegionError, "negative indices are not supported"),
    ("index-negative-stop", in_scope(lambda e: e.x[0:-1]), RegionError, "negative bound"),
    ("index-past-end", in_scope(lambda e: e.x[4]), RegionError, "index 4 is outside 0:4"),
    ("index-pair-past-end", in_scope(lambda e: e.x[(5, 9), ]), RegionError, "region 5:4 is empty or outside 0:4"),
    ("index-too-many", in_scope(lambda e: e.x[0, 0, 0]), RegionError, "3 indices for a 2-d tensor"),
    ("index-string", in_scope(lambda e: e.x["a"]), RegionError, "cannot index with 'a'"),
    ("index-none", in_scope(lambda e: e.x[None]), RegionError, "cannot index with None"),
    ("index-reuse-not-last", in_scope(lambda e: e.x[True, 0]), RegionError, "reuse flag must be the last index"),
    ("load-float", in_scope(lambda e: e.x.load(0.5)), RegionError, "index 0.5 (float) is not an integer"),
    ("access-outside-scope", lambda e, p: e.x[0, :], RegionError, "outside any GlobalHierarchy scope"),
    ("reuse-larger-region", in_scope(lambda e: (e.o[0, 0:2], e.o[1, :, True])), ReuseError,
     "does not fit the buffer it reuses"),
    # -- tiles -----------------------------------------------------------------------------------------------------
    ("tile-float-index", in_scope(lambda e: e.x[:, :][0.5]), RegionError, "index 0.5 (float) is not an integer"),
    ("tile-index-outside-tile", in_scope(lambda e: e.x[0:2, :][2]), RegionError, "index 2 is outside 0:2"),
    ("tile-iadd-number", in_scope(lambda e: e.o[0, :].__iadd__(3)), TypeError, "needs a compute unit's result"),
    ("tile-assign-array", in_scope(lambda e: e.o[0, :].assign(np.zeros(6))), TypeError,
     "needs a compute unit's result"),
    ("tile-copy-by-assignment", in_scope(lambda e: e.o[:, :].__setitem__(0, e.x[0:1, :])), ValueError,
     "cannot copy one tile into another by assignment"),
    ("write-into-input", in_scope(lambda e: e.x[0, :].assign(e.vec.copy(e.x[1, :]))), ReadOnlyError,
     "x is an input"),
    ("stale-tile", lambda e, p: stale(e).data, StaleTileError, "freed when its scope exited"),
    ("stale-tile-in-compute", lambda e, p: in_scope(lambda e2: e2.o[0, :].assign(e2.vec.copy(stale(e2))))(e),
     StaleTileError, "freed when its scope exited"),
    # -- scopes and the session's end ------------------------------------------------------------------------------
    ("scope-not-session", lambda e, p: GlobalHierarchy("s"), TypeError, "needs the Session"),
    ("scope-zero-buffers", lambda e, p: GlobalHierarchy(e.s, buffers=0), ValueError, "buffers must be an integer >= 1"),
    ("scope-float-buffers", lambda e, p: GlobalHierarchy(e.s, buffers=1.5), ValueError, "buffers must be an integer"),
    ("scope-int-name", lambda e, p: GlobalHierarchy(e.s, name=3), ValueError, "name must be a non-empty string"),
    ("scope-exit-out-of-order", lambda e, p: exit_out_of_order(e), UnfinishedError, "scopes exited out of order"),
    ("scratch-float-shape", in_scope(lambda e: e.s.scratch("t", (2.5,))), ValueError, "is not an integer"),
    ("scratch-outside-scope", lambda e, p: e.s.scratch("t", (3,)), RegionError, "outside any GlobalHierarchy"),
    ("scratch-ddr-name", in_scope(lambda e: e.s.scratch("x", (3,))), ValueError, "a DDR tensor of that name exists"),
    ("scratch-grows", in_scope(lambda e: (e.s.scratch("t", (3,)), e.s.scratch("t", (4,)))), ValueError,
     "must fit inside its first shape"),
    ("scratch-reuse-not-bool", in_scope(lambda e: e.s.scratch("t", (3,), reuse="yes")), ValueError,
     "reuse must be True or False"),
    ("finish-unstored-output", lambda e, p: e.s.finish(), UnfinishedError, "24 of 24 elements were never stored"),
    ("finish-pending-product", lambda e, p: (in_scope(lambda e2: e2.vec.copy(e2.x[0, :]))(e), e.s.finish()),
     UnfinishedError, "never written into a tile"),
    ("poisoned-access", lambda e, p: in_scope(lambda e2: e2.x[0, :])(poisoned(e)), SessionStateError,
     "RuntimeError: schedule bug was raised inside scope case"),
    ("poisoned-finish", lambda e, p: poisoned(e).s.finish(), SessionStateError, "start a new Session"),
    # -- compute units ---------------------------------------------------------------------------------------------
    ("tensorcore-not-session", lambda e, p: TensorCore("s"), TypeError, "TensorCore needs the Session"),
    ("vector-not-session", lambda e, p: VectorUnit(None), TypeError, "VectorUnit needs the Session"),
    ("conv-traced-array", in_scope(lambda e: e.tc.conv2d(e.img, e.w[:, :])), TypeError,
     "operand 0 must be a Tile, got TracedArray (index it"),
    ("conv-stride-zero", in_scope(lambda e: e.tc.conv2d(e.img[:, :], e.w[:, :], stride=0)), ValueError,
     "stride must be >= 1"),
    ("conv-stride-float", in_scope(lambda e: e.tc.conv2d(e.img[:, :], e.w[:, :], stride=1.5)), ValueError,
     "stride must be an int or an (h, w) pair"),
    ("conv-dilation-zero", in_scope(lambda e: e.tc.conv2d(e.img[:, :], e.w[:, :], dilation=(1, 0))), ValueError,
     "dilation must be >= 1"),
    ("conv-groups-zero", in_scope(lambda e: e.tc.conv2d(e.img[:, :], e.w[:, :], groups=0)), ValueError,
     "groups must be an integer >= 1"),
    ("conv-crop-whole-tile", in_scope(lambda e: e.tc.conv2d(e.img[:, :], e.w[:, :], padding=(-2, -2, 0, 0))),
     ValueError, "with padding (-2, -2, 0, 0) is smaller than the kernel"),
    ("conv-short-padding", in_scope(lambda e: e.tc.conv2d(e.img[:, :], e.w[:, :], padding=(1, 1))),
     ValueError, "padding must be 4 integers"),
    ("conv-int-padding", in_scope(lambda e: e.tc.conv2d(e.img[:, :], e.w[:, :], padding=1)), ValueError,
     "padding must be 4 integers"),
    ("conv-float-padding", in_scope(lambda e: e.tc.conv2d(e.img[:, :], e.w[:, :], padding=(0.5, 0, 0, 0))),
     ValueError, "padding must be 4 integers"),
    ("conv-2d-tiles", in_scope(lambda e: e.tc.conv2d(e.x[:, :], e.x[:, :])), ValueError, "needs 4-d tiles"),
    ("conv-channel-mismatch", in_scope(lambda e: e.tc.conv2d(e.img[:, 0:8], e.w[:, :])), ValueError,
     "input tile has 8 channels"),
    ("matmul-4d", in_scope(lambda e: e.tc.matmul(e.img[:, :], e.x[:, :])), ValueError, "matmul needs 2-d tiles"),
    ("matmul-inner-mismatch", in_scope(lambda e: e.tc.matmul(e.x[:, :], e.x[:, :])), ValueError,
     "inner dimensions differ"),
    ("vector-shape-mismatch", in_scope(lambda e: e.vec.add(e.x[0, :], e.x[:, 0])), ValueError,
     "operand shapes differ"),
    ("vector-dot-sizes", in_scope(lambda e: e.vec.dot(e.x[0, :], e.x[0, 0:3])), ValueError,
     "operands have 6 and 3 elements"),
    ("product-wrong-out-shape", in_scope(lambda e: e.o[0, :].assign(e.vec.copy(e.x[0, 0:3]))), ValueError,
     "produces shape (1, 3) but the output tile o"),
    ("unit-of-other-session", in_scope(lambda e: e.vec.copy(other_session_tile(e))), CrossSessionError,
     "belongs to another Session"),
    ("dot-of-other-session", in_scope(lambda e: e.vec.dot(e.x[0, :], other_session_tile(e)[0, :])),
     CrossSessionError, "operand 1 Tile(a[0:1, 0:6]"),
    ("conv-of-other-session", in_scope(lambda e: e.tc.conv2d(e.img[:, :], foreign_weight(e))), CrossSessionError,
     "conv2d: operand 1"),
    ("write-into-other-session", lambda e, p: write_foreign(e), CrossSessionError,
     "computed in another Session than the output tile"),
    # -- Segments, bounds inference --------------------------------------------------------------------------------
    ("segments-zero-tile", lambda e, p: Segments(0, 10, 0), ValueError, "tile must be a positive number"),
    ("segments-float-stop", lambda e, p: Segments(0, 10.5, 2), ValueError, "stop must be a Python int"),
    ("segments-reversed", lambda e, p: Segments(10, 0, 2), ValueError, "stop (0) is smaller than start (10)"),
    ("segments-bool-tile", lambda e, p: Segments(0, 10, True), ValueError, "tile must be a Python int"),
    ("bounds-zero-channels", lambda e, p: Conv2dBoundsInfer(0, 8, 3, input_shape=(1, 0, 8, 8)), ValueError,
     "in_channels must be a positive int"),
    ("bounds-float-kernel", lambda e, p: Conv2dBoundsInfer(8, 8, 2.5, input_shape=(1, 8, 8, 8)), ValueError,
     "kernel_size must be an int or an (h, w) pair"),
    ("bounds-negative-padding", lambda e, p: Conv2dBoundsInfer(8, 8, 3, padding=-1, input_shape=(1, 8, 8, 8)),
     ValueError, "padding must be >= 0"),
    ("bounds-no-input-shape", lambda e, p: Conv2dBoundsInfer(8, 8, 3), ValueError,
     "input_shape (N, C, H, W) is required"),
    ("bounds-bad-out-region", lambda e, p: Conv2dBoundsInfer(8, 8, 3, input_shape=(1, 8, 8, 8)).input_region(
        ((0, 1), (0, 8))), ValueError, "out_region must be a tuple of 4"),
    # -- hardware --------------------------------------------------------------------------------------------------
    ("preset-unknown", lambda e, p: preset("nope"), ValueError, "unknown hardware preset 'nope'"),
    ("load-hardware-missing-file", lambda e, p: load_hardware(p / "none.toml"), ValueError, "does not exist"),
    ("accelerator-zero-sram", lambda e, p: dataclasses.replace(preset("blog"), sram_bytes=0), ValueError,
     "sram_bytes must be a positive integer"),
    ("accelerator-float-word", lambda e, p: dataclasses.replace(preset("blog"), word_bytes=2.5), ValueError,
     "word_bytes must be a positive integer"),
    ("accelerator-nan-clock", lambda e, p: dataclasses.replace(preset("blog"), clock_hz=float("nan")), ValueError,
     "clock_hz must be a positive number"),
    ("accelerator-word-above-sram", lambda e, p: dataclasses.replace(preset("blog"), sram_bytes=2, word_bytes=4),
     ValueError, "not even one element fits"),
    ("toml-tiny-float", lambda e, p: load_hardware(write_file(p, "h.toml", b'base = "blog"\nsram_bytes = 1e-300\n')),
     ValueError, "sram_bytes must be a positive integer"),
    pytest.param("load-hardware-directory", lambda e, p: load_hardware(p), ValueError, "is a folder, not a file"),
    pytest.param("toml-not-utf8", lambda e, p: load_hardware(write_file(p, "h.toml", b'base = "blog"\n# \xff\n')),
                 ValueError, "UTF-8"),
    pytest.param("toml-inf-clock", lambda e, p: load_hardware(write_file(p, "h.toml",
                                                                         b'base = "blog"\nclock_hz = inf\n')),
                 ValueError, "clock_hz must be a positive"),
    pytest.param("toml-base-list", lambda e, p: load_hardware(write_file(p, "h.toml", b'base = ["blog"]\n')),
                 ValueError, "base"),
    pytest.param("accelerator-int-name", lambda e, p: dataclasses.replace(preset("blog"), name=3), ValueError,
                 "name"),
]


def _id(case) -> str:
    return case.values[0] if hasattr(case, "values") else case[0]


@pytest.mark.parametrize("name, call, exc_type, fragment", CASES, ids=[_id(c) for c in CASES])
def test_bad_library_call_raises_a_specific_error(name, call, exc_type, fragment, tmp_path):
    env = Env()
    with pytest.raises(exc_type) as info:
        call(env, tmp_path)
    assert fragment in str(info.value), f"{name}: message {str(info.value)!r} lacks {fragment!r}"
    # never a bare error from deep inside: our own messages are single sentences naming the thing
    assert type(info.value) is not ZeroDivisionError and not isinstance(info.value, AttributeError)


def test_the_corpus_is_large_and_specific():
    assert len(CASES) >= 50
    # a ScheduleError case is never asserted as a plain Exception: the types are the specific ones
    assert all((c.values[2] if hasattr(c, "values") else c[2]) is not Exception for c in CASES)


def test_numpy_integer_indices_keep_working():
    env = Env()
    with env.scope():
        t = env.x[np.int64(1), np.int32(2):np.int64(5)]
        u = env.x[(np.int16(0), np.int64(2)), Segment(np.int64(1), np.int64(3))]
        assert t.region == ((1, 2), (2, 5)) and u.region == ((0, 2), (1, 3))
        assert all(type(v) is int for box in (t.region, u.region) for pair in box for v in pair)
    assert env.s.counters.loaded_bytes == 3 + 4      # 1 x 3 and 2 x 2 elements at 1 B/word


def test_cross_session_write_leaves_both_sessions_untouched():
    s1, s2 = Session(tiny()), Session(tiny())
    a = s1.input("a", np.ones((2, 2), np.float32))
    o2 = s2.output("o", (2, 2))
    with GlobalHierarchy(s1, "one"), GlobalHierarchy(s2, "two"):
        out = o2[:, :]
        with pytest.raises(CrossSessionError):
            out.assign(VectorUnit(s1).copy(a[:, :]))
        with pytest.raises(CrossSessionError):
            out.assign(VectorUnit(s2).copy(a[:, :]))
        assert not out.buffer.dirty                   # nothing was written
    assert s1.counters.vector_cycles == 0 and s2.counters.vector_cycles == 0
    assert isinstance(CrossSessionError("x"), ScheduleError)
