"""`dsasim demo`: the table, the JSON keys, determinism, and clear errors for bad arguments."""

import dataclasses
import json

import pytest

from dsasim.cli import main

FAST = ["demo3-2", "demo6", "demo4"]  # seconds in count-only mode; demo4 overflows


def test_demo_json_has_the_documented_keys_and_is_deterministic(tmp_path, capsys):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["demo", "--count-only", "--quiet", "--only", *FAST, "--json", str(first)]) == 0
    table = capsys.readouterr().out
    assert main(["demo", "--count-only", "--quiet", "--only", *FAST, "--json", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    rows = json.loads(first.read_text())
    assert [r["name"] for r in rows] == ["demo3-2", "demo4", "demo6"]  # registration order
    for row in rows:
        assert {"name", "status", "loaded_bytes", "stored_bytes", "peak_sram_bytes", "blog_loaded_elements",
                "macs", "max_abs_err", "message"} <= set(row)
        assert row["max_abs_err"] is None  # count-only
    by_name = {r["name"]: r for r in rows}
    assert by_name["demo4"]["status"] == "overflow"
    assert "SRAM overflow" in by_name["demo4"]["message"] and "image[0:1, 0:2048, 0:56, 0:56]" in \
        by_name["demo4"]["message"]
    # demo3-2 by hand: weights once (512*2048 B) + the image once per 24-channel tile (ceil(512/24) = 22)
    assert by_name["demo3-2"]["loaded_bytes"] == 512 * 2048 + 22 * 2048 * 56 * 56
    assert by_name["demo3-2"]["status"] == "ok"
    assert "demo3-2" in table and "overflow" in table and "SRAM overflow" in table


def test_per_tensor_breakdown(capsys):
    assert main(["demo", "--count-only", "--quiet", "--only", "demo3-2", "--per-tensor", "demo3-2"]) == 0
    out = capsys.readouterr().out
    image_row = next(line for line in out.splitlines() if line.startswith("image "))
    assert "22.00x" in image_row  # the image is re-fetched once per 24-channel output tile


def test_hardware_file_applies_to_every_schedule(tmp_path):
    hw = tmp_path / "tiny.toml"
    hw.write_text('base = "blog"\nsram_bytes = 65536\n')
    out = tmp_path / "r.json"
    assert main(["demo", "--count-only", "--quiet", "--only", "demo3-2", "--hardware", str(hw),
                 "--json", str(out)]) == 0
    row = json.loads(out.read_text())[0]
    assert row["hardware"] == "tiny" and row["status"] == "overflow"
    assert "capacity 65,536 B" in row["message"]


def test_numeric_run_reports_the_error_against_torch(tmp_path):
    out = tmp_path / "r.json"
    assert main(["demo", "--quiet", "--only", "demo6-1", "--json", str(out)]) == 0
    row = json.loads(out.read_text())[0]
    assert row["status"] == "ok" and 0 <= row["max_abs_err"] < 1e-3


@pytest.mark.parametrize("argv, words", [
    (["demo", "--only", "demo9"], "unknown schedule(s) ['demo9']"),
    (["demo", "--hardware", "tpu-v9"], "unknown hardware preset 'tpu-v9'"),
    (["demo", "--only", "demo2", "--per-tensor", "demo3-2"], "--per-tensor 'demo3-2' is not among"),
    (["demo", "--jobs", "0"], "argument --jobs: must be >= 1, got 0"),
])
def test_bad_arguments_exit_2_with_a_reason(argv, words, capsys):
    assert main(argv) == 2
    assert words in capsys.readouterr().err


def test_by_scope_table(capsys):
    assert main(["demo", "--count-only", "--quiet", "--no-timing", "--only", "demo3-2", "--by-scope", "demo3-2"]) == 0
    out = capsys.readouterr().out
    image = next(line for line in out.splitlines() if line.startswith("oc ") and " image " in line)
    # 22 instances of the oc scope, each streaming the whole image (2048*56*56 B) through one reused buffer
    assert image.split()[1] == "22" and f"{22 * 2048 * 56 * 56:,}" in image


def test_parallel_jobs_give_the_same_json(tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main(["demo", "--count-only", "--quiet", "--only", *FAST, "--jobs", "1", "--json", str(one)]) == 0
    assert main(["demo", "--count-only", "--quiet", "--only", *FAST, "--jobs", "2", "--json", str(two)]) == 0
    assert one.read_bytes() == two.read_bytes()


def test_numeric_demo_on_two_workers_times_a_count_only_run_beside_it_and_prints_the_same(tmp_path, capsys):
    # with --jobs 2 a numeric schedule's timing comes from a count-only run on the other worker; the report (JSON and
    # printed tables, the by-scope table included) must be the one --jobs 1 gives, which times the numeric trace
    names = ["demo6", "demo4", "res2a-branch2b"]
    printed = []
    for jobs in ("1", "2"):
        out = tmp_path / f"{jobs}.json"
        assert main(["demo", "--quiet", "--only", *names, "--jobs", jobs, "--json", str(out),
                     "--by-scope", "demo6"]) == 0
        printed.append(capsys.readouterr().out)
    assert (tmp_path / "1.json").read_bytes() == (tmp_path / "2.json").read_bytes()
    assert printed[0] == printed[1] and "traffic by scope" in printed[0]
    rows = json.loads((tmp_path / "2.json").read_text())
    assert {r["name"]: (r["status"], r["cycles"] is not None, r["max_abs_err"] is not None) for r in rows} == {
        "demo6": ("ok", True, True), "demo4": ("overflow", False, False), "res2a-branch2b": ("ok", True, True)}


def test_a_numeric_run_and_its_timed_count_only_run_that_differ_are_an_error_row():
    from dsasim.cli.demo import _with_timing
    from dsasim.traced.schedule import RunResult, Status
    numbers = RunResult(name="s", hardware="blog", status=Status.OK, loaded_bytes=64, stored_bytes=8, hits=0,
                        max_abs_err=1e-6)
    timed = dataclasses.replace(numbers, max_abs_err=None, cycles=100, roofline_cycles=90,
                                tensorcore_utilization=0.5)
    merged = _with_timing(numbers, timed)
    assert (merged.status, merged.cycles, merged.roofline_cycles, merged.max_abs_err) == (Status.OK, 100, 90, 1e-6)
    bad = _with_timing(numbers, dataclasses.replace(timed, loaded_bytes=96))
    assert bad.status == Status.ERROR and "loaded_bytes 64 vs 96" in bad.message and bad.cycles is None
    overflowed = _with_timing(numbers, dataclasses.replace(timed, status=Status.OVERFLOW, message="SRAM overflow"))
    assert overflowed.status == Status.ERROR and "status ok vs overflow (SRAM overflow)" in overflowed.message


def test_parallel_jobs_run_every_registered_schedule_kind(tmp_path):
    # res2a-branch2b's workload holds a local function: workers must not need to pickle schedules
    out = tmp_path / "r.json"
    assert main(["demo", "--count-only", "--quiet", "--only", "res2a-branch2b", "demo6", "--jobs", "2",
                 "--json", str(out)]) == 0
    assert [r["status"] for r in json.loads(out.read_text())] == ["ok", "ok"]


def _failing_schedules() -> list:
    """One schedule that raises a ScheduleError (a stale tile), one that overflows: the two kinds of failure."""
    from dsasim import GlobalHierarchy, Schedule, Workload
    from dsasim.errors import StaleTileError

    workload = Workload("w", inputs={"x": (1, 4, 1, 4)}, outputs={"y": (1, 4, 1, 4)}, reference=lambda x: {"y": x})

    def broken(session, x, y):
        raise StaleTileError("planted: a tile used after its scope ended")

    def too_big(session, x, y):
        with GlobalHierarchy(session, "all"):
            x[:, :]
            y[:, :]  # opened as zeros: 16 B more than fit

    return [Schedule("broken", workload, broken), Schedule("too-big", workload, too_big)]


@pytest.mark.parametrize("names, code", [(["too-big"], 0), (["broken"], 1), (["broken", "too-big"], 1)])
def test_demo_exits_1_when_a_schedule_fails_and_0_for_an_overflow(names, code, tmp_path, monkeypatch, capsys):
    import dsasim.cli.common

    monkeypatch.setattr(dsasim.cli.common, "all_schedules", _failing_schedules)
    tiny = tmp_path / "tiny.toml"
    tiny.write_text('base = "blog"\nsram_bytes = 16\n')  # x and y are 16 B each: together they overflow
    out = tmp_path / "r.json"
    assert main(["demo", "--count-only", "--quiet", "--jobs", "1", "--hardware", str(tiny), "--only", *names,
                 "--json", str(out)]) == code
    statuses = {r["name"]: r["status"] for r in json.loads(out.read_text())}
    expected = {"broken": "error", "too-big": "overflow"}
    assert statuses == {name: expected[name] for name in names}
    if "broken" in names:
        assert "StaleTileError: planted" in capsys.readouterr().out


def test_simulate_exits_1_for_an_overflow(capsys):
    assert main(["simulate", "demo4"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dsasim simulate: demo4 on blog failed (overflow): SRAM overflow") and "Traceback" not in err


# --- the package: one registry, one error path, one table formatter, a fast --help ---------------------------

def test_table_aligns_names_left_numbers_right_with_separators():
    import numpy as np

    from dsasim.view.table import format_table
    # widths by hand: column 0 is max(len("name"), len("bbb")) = 4, column 1 is len("1,234") = 5
    assert format_table(("name", "n"), [("a", 1234), ("bbb", None)]) == \
        "name      n\n----  -----\na     1,234\nbbb       -"
    assert format_table(("n", "name"), [(np.int64(10 ** 6), "x")], left=(1,)) == \
        "        n  name\n---------  ----\n1,000,000  x   "
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        format_table(("a", "b", "c"), [(1, 2)])


def test_every_registered_command_shares_the_one_error_path(monkeypatch, capsys):
    """Whatever command raises: a CliError is one line `dsasim NAME: message` and exit 2, Ctrl-C exit 130."""
    import dataclasses

    import dsasim.cli
    from dsasim.cli.common import CliError

    def mistake(args):
        raise CliError(f"planted mistake in {args.command}")

    def ctrl_c(args):
        raise KeyboardInterrupt

    required = {"demo": [], "simulate": ["demo6"], "search": ["gemm-64"], "sweep-sram": ["gemm-64", "--sizes", "1"],
                "network": ["resnet18"], "shapes": ["gemm-64", "--vary", "m=1:2"], "hardware": [],
                "timeloop": ["p.yaml", "a.yaml", "m.yaml"]}
    assert [c.name for c in dsasim.cli.COMMANDS] == list(required)
    for run, code, message in ((mistake, 2, "planted mistake in {}"), (ctrl_c, 130, "interrupted")):
        monkeypatch.setattr(dsasim.cli, "COMMANDS", tuple(dataclasses.replace(c, run=run)
                                                          for c in dsasim.cli.COMMANDS))
        for name, argv in required.items():
            assert main([name, *argv]) == code
            captured = capsys.readouterr()
            assert captured.err == f"dsasim {name}: {message.format(name)}\n" and captured.out == ""


@pytest.mark.parametrize("argv", [["demo", "--only", "demo9"], ["simulate", "demo9"]])
def test_an_unknown_schedule_is_exit_2_naming_every_known_one_under_each_command(argv, capsys):
    from dsasim.cli import all_schedules

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dsasim {argv[0]}: unknown schedule") and err.count("\n") == 1, err
    known = err.split("known: ", 1)[1].split(" (")[0].strip().split(", ")
    assert sorted(known) == sorted(s.name for s in all_schedules()) and "demo9" in err


def test_building_the_parser_imports_no_model():
    """`dsasim --help` loads neither torch, matplotlib, simpy nor the search/timing/schedule modules (each
    command imports them when it runs; numpy, which the hardware checks use, is the 0.5 s budget's yardstick). The package's own __init__ is bypassed, so this holds for the CLI
    whatever `import dsasim` itself loads."""
    import subprocess
    import sys

    probe = """
import importlib.util, sys, types
spec = importlib.util.find_spec("dsasim")
package = types.ModuleType("dsasim")
package.__path__ = list(spec.submodule_search_locations)
sys.modules["dsasim"] = package  # dsasim/__init__.py not run
import dsasim.cli
for action in dsasim.cli.build_parser()._subparsers._group_actions:
    for sub in action.choices.values():
        sub.format_help()
heavy = ("torch", "matplotlib", "simpy", "dsasim.kernels", "dsasim.traced.schedule", "dsasim.architect.search.layer_search", "dsasim.architect.studies.sweep",
         "dsasim.timing", "dsasim.traced.session", "dsasim.view.plot", "dsasim.architect.problems.layers")
print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy)))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_the_library_never_imports_the_cli():
    """No module outside dsasim/cli imports it (the model packages know nothing of the command line)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "dsasim"
    offenders = []
    for path in root.rglob("*.py"):
        if path.relative_to(root).parts[0] == "cli":
            continue
        package = ".".join(("dsasim",) + path.relative_to(root).parent.parts)
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                module = ".".join(p for p in (base, node.module or "") if p)
                names = [module] + [f"{module}.{alias.name}" for alias in node.names]
            if any(n == "dsasim.cli" or n.startswith("dsasim.cli.") for n in names):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == []


def test_search_a_chain_fused_vs_layer_by_layer_json(tmp_path, capsys):
    """mobilenetv2.features.1 (depthwise 3x3 on 32 x 112 x 112, then a 1x1 projection to 16 channels), 1-byte words:
    compulsory = image 32*112*112 + weights 32*9 + 16*32 + output 16*112*112 = 602,912 B; fused with kept halos it
    moves exactly that; layer by layer also stores and reloads the 32 x 112 x 112 intermediate (2 x 401,408 B)."""
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for path in (first, second):
        assert main(["search", "mobilenetv2.features.1", "--sram", "512KiB", "--confirm", "0", "--json",
                     str(path)]) == 0
    out = capsys.readouterr().out
    assert "all fused" in out and "layer by layer" in out and "best / bound = 1.000" in out
    assert first.read_bytes() == second.read_bytes()
    data = json.loads(first.read_text())
    assert data["compulsory_bytes"] == 32 * 112 * 112 + 32 * 9 + 16 * 32 + 16 * 112 * 112 == 602_912
    assert data["fused"] is True and data["partition"] == "[1 2]" and data["traffic_bytes"] == 602_912
    assert data["layer_by_layer_bytes"] >= 602_912 + 2 * 401_408
    assert data["recomputed_macs"] == 0 and data["parts"][0]["fused_nest"]["halo"] == "keep"
    assert {"fused", "layer_by_layer_bytes", "recomputed_macs", "intermediate_peak_bytes"} <= set(data)


def test_search_an_unknown_chain_like_name_is_a_clear_error(capsys):
    assert main(["search", "mobilenetv2.features.99"]) == 2
    assert "mobilenetv2.features.1 .. mobilenetv2.features.17" in capsys.readouterr().err
