"""Trust, round two (outputs): nothing lost or overwritten, finished sessions, non-finite outputs, schedules for
other hardware, user schedules as MODULE:NAME / FILE.py:NAME.

Every command-line case asserts the exit status, exactly one line on stderr for a mistake, and no traceback.
"""

from __future__ import annotations

import json
import math
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from dsasim import GlobalHierarchy, Session
from dsasim.cli import main
from dsasim.errors import LevelError, ScheduleError, SessionFinishedError, SessionStateError
from dsasim.hardware import preset
from dsasim.traced.schedule import Schedule, Workload, run_schedule
from dsasim.traced.tensorcore import VectorUnit

# the example hardware file of docs/reference/hardware.md ("Hardware")
MY_TOML = 'base = "blog"\nsram_bytes = 524288\nword_bytes = 2\n'

# a user's schedule: y = x for a 2 x 3 tensor, one scope, one load, one store
USER_SCHEDULE = textwrap.dedent('''
    from dsasim import GlobalHierarchy
    from dsasim.traced.schedule import Schedule, Workload
    from dsasim.traced.tensorcore import VectorUnit

    def body(s, x, y):
        vector = VectorUnit(s)
        with GlobalHierarchy(s, "all"):
            out = y[:, :]
            out.assign(vector.copy(x[:, :]))

    WORKLOAD = Workload("copy", inputs={"x": (2, 3)}, outputs={"y": (2, 3)}, reference=lambda x: {"y": x})
    copy = Schedule("my-copy", WORKLOAD, body)
    pair = [Schedule("my-copy-a", WORKLOAD, body), Schedule("my-copy-b", WORKLOAD, body)]
    not_a_schedule = 42
    registered_name = Schedule("demo6", WORKLOAD, body)
''')


def _call(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _refused(argv: list[str], capsys, fragment: str) -> str:
    """Run argv; it must exit 2 with one line `dsasim COMMAND: ...` holding `fragment`, and no traceback."""
    code, out, err = _call(argv, capsys)
    assert "Traceback" not in out + err
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith(f"dsasim {argv[0]}: "), err
    assert fragment in err, err
    return err


@pytest.fixture
def hw(tmp_path) -> Path:
    path = tmp_path / "my.toml"
    path.write_text(MY_TOML)
    return path


@pytest.fixture
def user_file(tmp_path) -> Path:
    path = tmp_path / "mysched.py"
    path.write_text(USER_SCHEDULE)
    return path


# --- 1. no output overwrites another output or an input -----------------------------------------------------

def test_simulate_json_that_the_plot_folder_would_overwrite_is_refused_before_any_work(tmp_path, capsys):
    figs = tmp_path / "figs"
    _refused(["simulate", "demo6", "--json", figs / "demo6-gantt.png", "--plot", figs], capsys, "both name")
    assert not figs.exists()  # refused before --plot created its folder


def test_simulate_perfetto_that_the_plot_folder_would_overwrite_is_refused(tmp_path, capsys):
    _refused(["simulate", "demo6", "--perfetto", tmp_path / "demo6-sram.png", "--plot", tmp_path], capsys,
             "both name")


def test_the_plot_folder_is_compared_through_a_link(tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    _refused(["simulate", "demo6", "--json", real / "demo6-bandwidth.png", "--plot", tmp_path / "link"], capsys,
             "both name")


def test_dot_slash_and_plain_paths_are_the_same_output(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _refused(["simulate", "demo6", "--json", "./x.json", "--perfetto", "x.json"], capsys, "both name")


@pytest.mark.parametrize("argv", [
    ["simulate", "demo6", "--hardware", "{hw}", "--json", "{hw}"],
    ["simulate", "demo6", "--hardware", "{hw}", "--perfetto", "{hw}"],
    ["demo", "--only", "demo6", "--hardware", "{hw}", "--json", "{hw}"],
    ["search", "gemm-64", "--hardware", "{hw}", "--json", "{hw}"],
    ["sweep-sram", "gemm-64", "--sizes", "1MiB", "--hardware", "{hw}", "--json", "{hw}"],
    ["sweep-sram", "--network", "resnet18", "--sizes", "1MiB", "--hardware", "blog,{hw}", "--json", "{hw}"],
    ["network", "resnet18", "--hardware", "{hw}", "--json", "{hw}"],
    ["shapes", "gemm-1024", "--vary", "m=1:4", "--hardware", "{hw}", "--json", "{hw}"],
], ids=lambda a: " ".join(a[:2]) + (" (list)" if "blog,{hw}" in a else ""))
def test_an_output_naming_the_hardware_file_is_refused_and_the_file_kept(argv, hw, capsys):
    _refused([a.replace("{hw}", str(hw)) for a in argv], capsys, "the --hardware file, which this command reads")
    assert hw.read_text() == MY_TOML


@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_an_output_reaching_the_hardware_file_by_a_link_is_refused(how, hw, tmp_path, capsys):
    other = tmp_path / "other.json"
    (other.symlink_to if how == "symlink" else other.hardlink_to)(hw)
    _refused(["simulate", "demo6", "--hardware", hw, "--json", other], capsys, "the same file as")
    assert hw.read_text() == MY_TOML


@pytest.mark.parametrize("argv", [
    ["shapes", "gemm-1024", "--vary", "m=1:4", "--json", "{d}/s.png", "--plot", "{d}/./s.png"],
    ["network", "resnet18", "--json", "{d}/n.png", "--plot", "{d}/n.png"],
])
def test_json_and_plot_naming_one_file_are_refused(argv, tmp_path, capsys):
    _refused([a.replace("{d}", str(tmp_path)) for a in argv], capsys, "both name")


def test_an_output_naming_a_user_schedule_source_is_refused(user_file, capsys):
    _refused(["simulate", f"{user_file}:copy", "--json", user_file], capsys, "the source of schedule")
    _refused(["demo", "--only", f"{user_file}:copy", "--json", user_file], capsys, "the source of schedule")
    _refused(["network", f"{user_file}:Net", "--json", user_file], capsys, "the source of network")
    assert user_file.read_text() == USER_SCHEDULE


# --- 1. a finished session refuses further use; its Trace never changes ------------------------------------

def _copy_session(hardware_name: str) -> tuple[Session, object, object, VectorUnit]:
    s = Session(preset(hardware_name), numeric=False)
    x, y = s.input("x", (2, 3)), s.output("y", (2, 3))
    vector = VectorUnit(s)
    with GlobalHierarchy(s, "all"):
        out = y[:, :]
        out.assign(vector.copy(x[:, :]))
    return s, x, y, vector


@pytest.mark.parametrize("hardware", ["blog", "blog-l1"])  # the compiled core, and the levels' Python path
def test_a_finished_session_refuses_every_further_use_and_its_trace_stays(hardware):
    s, x, y, vector = _copy_session(hardware)
    trace = s.finish()
    events = list(trace.events)
    counts = (s.counters.loaded_bytes, s.counters.stored_bytes)

    def more_traffic():
        with GlobalHierarchy(s, "again"):
            y[:, :].assign(vector.copy(x[:, :]))

    for use in (more_traffic, lambda: x[0:1, 0:3], lambda: s.access(x, (slice(0, 1), slice(0, 3)), False),
                lambda: s.input("z", (2,)), lambda: s.output("w", (2,)), lambda: s.scratch("t", (2,)),
                lambda: s.finish()):
        with pytest.raises(SessionFinishedError, match="this Session has finished"):
            use()
    assert issubclass(SessionFinishedError, SessionStateError) and issubclass(SessionFinishedError, ScheduleError)
    assert list(trace.events) == events and (s.counters.loaded_bytes, s.counters.stored_bytes) == counts
    assert sorted(s.tensors) == ["x", "y"]


def test_a_unit_refuses_to_compute_for_a_finished_session():
    s = Session(preset("blog"), numeric=False)
    x, y = s.input("x", (2, 3)), s.output("y", (2, 3))
    vector = VectorUnit(s)
    with GlobalHierarchy(s, "all"):
        kept = x[:, :]  # a tile taken before the end: the unit, not the access, must refuse
        y[:, :].assign(vector.copy(kept))
    s.finish()
    with pytest.raises(SessionFinishedError):
        vector.copy(kept)
    assert not s.pending_products


# --- 1. any non-finite output is an error naming the tensor and the first index ----------------------------

def _copy_then_set(value: float, where: tuple[int, int] | None):
    def body(s, x, y):
        vector = VectorUnit(s)
        with GlobalHierarchy(s, "all"):
            out = y[:, :]
            out.assign(vector.copy(x[:, :]))
            if where is None:
                out.data[...] = value
            else:
                out.data[where] = value
    return body


@pytest.mark.parametrize("value, where, first, count", [
    (math.nan, None, (0, 0), 6),       # every element NaN, torch's too
    (math.nan, (1, 2), (1, 2), 1),     # one NaN where torch has NaN
    (math.inf, (0, 1), (0, 1), 1),     # inf where torch has inf: a difference of 0, still not a number to trust
])
def test_a_non_finite_output_fails_even_where_torch_agrees(value, where, first, count):
    def reference(x):
        y = x.clone()
        if where is None:
            y[...] = value
        else:
            y[where] = value
        return {"y": y}

    workload = Workload("copy", inputs={"x": (2, 3)}, outputs={"y": (2, 3)}, reference=reference)
    r = run_schedule(Schedule("agreeing-on-nan", workload, _copy_then_set(value, where)), preset("blog"))
    assert r.status == "error"
    assert f"output y holds {count} NaN/inf value(s), first at index {first}" in r.message
    assert "\n" not in r.message


def _plain_copy(s, x, y):
    vector = VectorUnit(s)
    with GlobalHierarchy(s, "all"):
        y[:, :].assign(vector.copy(x[:, :]))


def test_a_finite_output_still_passes():
    workload = Workload("copy", inputs={"x": (2, 3)}, outputs={"y": (2, 3)}, reference=lambda x: {"y": x})
    r = run_schedule(Schedule("plain", workload, _plain_copy), preset("blog"))
    assert r.status == "ok" and r.max_abs_err == 0.0  # a copy is exact


# --- 2. a schedule for other hardware is one error row; an unknown level is a LevelError --------------------

def test_an_unknown_level_is_a_level_error():
    s = Session(preset("blog"), numeric=False)
    with pytest.raises(LevelError, match="level 'L1w' is not a memory level of hardware 'blog'"):
        GlobalHierarchy(s, "w", level="L1w")
    assert issubclass(LevelError, ScheduleError) and issubclass(LevelError, ValueError)


def test_run_schedule_turns_an_unknown_level_into_a_status():
    def body(s, x, y):
        with GlobalHierarchy(s, "w", level="L1w"):
            pass

    workload = Workload("copy", inputs={"x": (2, 3)}, outputs={"y": (2, 3)}, reference=lambda x: {"y": x})
    r = run_schedule(Schedule("needs-l1", workload, body), preset("blog"), numeric=False)
    assert r.status == "error" and r.message.startswith("LevelError: ") and "\n" not in r.message


@pytest.mark.parametrize("hardware", ["blog", "blog-fp32", "{hw}"])
def test_demo_on_hardware_without_the_level_reports_one_error_row(hardware, hw, tmp_path, capsys):
    out = tmp_path / "demo.json"
    argv = ["demo", "--only", "res2a-branch2b-l1", "conv1-direct", "--hardware", hardware.replace("{hw}", str(hw)),
            "--count-only", "--jobs", "1", "--quiet", "--json", out]
    if hardware != "blog":
        argv.append("--no-timing")
    code, stdout, err = _call(argv, capsys)
    assert "Traceback" not in stdout + err and err == ""
    assert code == 1  # a schedule failed; the rest is reported
    rows = {r["name"]: r for r in json.loads(out.read_text())}
    assert {n: r["status"] for n, r in rows.items()} == {"res2a-branch2b-l1": "error", "conv1-direct": "ok"}
    assert rows["res2a-branch2b-l1"]["message"].startswith("LevelError: GlobalHierarchy")
    assert "\n" not in rows["res2a-branch2b-l1"]["message"]
    table = {line.split()[0]: line.split()[2] for line in stdout.splitlines()[2:4]}  # name, hw, status, ...
    assert table == {"res2a-branch2b-l1": "error", "conv1-direct": "ok"}


def test_simulate_on_hardware_without_the_level_is_one_line_exit_1(capsys):
    code, out, err = _call(["simulate", "res2a-branch2b-l1", "--hardware", "blog"], capsys)
    assert "Traceback" not in out + err and code == 1
    assert err.count("\n") == 1 and "LevelError" in err and "'L1w' is not a memory level" in err


# --- 6. a user's schedule as FILE.py:NAME or MODULE:NAME ----------------------------------------------------

def test_simulate_runs_a_schedule_from_a_file(user_file, tmp_path, capsys):
    out = tmp_path / "s.json"
    code, stdout, err = _call(["simulate", f"{user_file}:copy", "--json", out], capsys)
    assert code == 0 and "Traceback" not in stdout + err
    result = json.loads(out.read_text())
    # by hand: x and y are 2 x 3 elements of 1 B (blog): one load of x (6 B), one store of y (6 B), both buffers
    # live together in the one scope: 12 B peak
    assert (result["name"], result["loaded_bytes"], result["stored_bytes"], result["peak_sram_bytes"]) == \
        ("my-copy", 6, 6, 12)


def test_demo_runs_schedules_from_a_module_beside_registered_ones(user_file, tmp_path, capsys, monkeypatch):
    module = "trust_outputs_user_module"
    (tmp_path / f"{module}.py").write_text(USER_SCHEDULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "d.json"
    code, stdout, err = _call(["demo", "--only", "conv1-direct", f"{module}:pair", "--count-only", "--no-timing",
                               "--jobs", "1", "--quiet", "--json", out], capsys)
    assert code == 0 and "Traceback" not in stdout + err
    rows = {r["name"]: r for r in json.loads(out.read_text())}
    assert list(rows) == ["conv1-direct", "my-copy-a", "my-copy-b"]
    for name in ("my-copy-a", "my-copy-b"):  # as above, by hand: 6 B in, 6 B out, 12 B peak
        assert (rows[name]["loaded_bytes"], rows[name]["stored_bytes"], rows[name]["peak_sram_bytes"]) == (6, 6, 12)


@pytest.mark.parametrize("source, attr, fragment", [
    ("raise RuntimeError('boom')\n", "x", "importing it raised RuntimeError: boom"),
    ("def f(:\n", "x", "SyntaxError at"),
    ("import sys\nsys.exit(3)\n", "x", "it called sys.exit(3) while being imported"),
    ("raise KeyError('k')\n", "x", "importing it raised KeyError"),
    (USER_SCHEDULE, "nope", "has no attribute 'nope'"),
    (USER_SCHEDULE, "not_a_schedule", "names an object of type int, not a dsasim.traced.schedule.Schedule"),
    (USER_SCHEDULE, "registered_name", "its name 'demo6' is a registered schedule's"),
])
@pytest.mark.parametrize("command", ["simulate", "demo"])
def test_a_broken_user_module_is_one_line_exit_2(source, attr, fragment, command, tmp_path, capsys):
    path = tmp_path / "user.py"
    path.write_text(source)
    argv = ["simulate", f"{path}:{attr}"] if command == "simulate" else ["demo", "--only", f"{path}:{attr}"]
    _refused(argv, capsys, fragment)


@pytest.mark.parametrize("spec, fragment", [
    ("{d}/missing.py:x", "does not exist or is not a file"),
    ("trust_outputs_no_such_module:x", "no such module"),
    ("{f}:pair", "holds 2 schedules (my-copy-a, my-copy-b); name one Schedule"),
    ("{f}:1x", "is not a Python name"),
])
def test_a_bad_user_schedule_spec_is_one_line_exit_2(spec, fragment, user_file, tmp_path, capsys):
    _refused(["simulate", spec.replace("{d}", str(tmp_path)).replace("{f}", str(user_file))], capsys, fragment)
