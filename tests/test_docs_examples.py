"""The examples in examples/ print what the .out file beside each holds, and the figures they show are the ones
derived by hand below."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
_printed: dict[str, str] = {}


def printed(name: str, tmp_path_factory) -> str:
    """What examples/NAME.py prints, run once per session from an empty folder (its files land there)."""
    if name not in _printed:
        folder = tmp_path_factory.mktemp(name)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
                   MPLBACKEND="Agg")
        done = subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py")], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stderr
        _printed[name] = done.stdout
    return _printed[name]


def test_every_example_has_its_expected_output_and_nothing_else_is_there():
    names = {p.name for p in (ROOT / "examples").iterdir()}
    assert len(EXAMPLES) >= 3
    assert names == {p.name for p in EXAMPLES} | {p.stem + ".out" for p in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_example_prints_its_expected_output(example, tmp_path_factory):
    expected = example.with_suffix(".out").read_text(encoding="utf-8")
    assert printed(example.stem, tmp_path_factory) == expected


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def test_user_schedule_traffic_and_cycles_by_hand(tmp_path_factory):
    out = printed("user_schedule", tmp_path_factory)
    # weights 48*64 = 3072 B + image 64*8*8 = 4096 B loaded once; output 48*8*8 = 3072 B stored once;
    # weight[oc, :] hits: 2 channel tiles x 4 row slabs = 8
    assert out.split("\n")[0] == "7168 3072 8"
    # blog: a transfer takes 64 cycles of setup + bytes / 32 B per cycle: weights 64 + 3072/32 = 160, an image slab
    # (64 x 2 x 8 = 1024 B) 64 + 32 = 96, an output slab (48 x 2 x 8 = 768 B) 64 + 24 = 88. A slab's computes:
    # 2 channel tiles x ceil(64/16) x ceil(24/24) x 16 pixels = 128. One buffer per scope and one DDR port: each
    # slab's load waits for the previous slab's compute and store: 160 + 4 x (96 + 128) + 4 x 88 = 1408.
    assert _number(re.search(r"^([\d,]+) cycles", out, re.M).group(1)) == 1408
    # roofline: the TensorCore 4 x 128 = 512; DDR (7168 + 3072) / 32 = 320
    assert "roofline bound 512 cycles (tensorcore 512, vector 0, ddr 320)" in out
    # idle = 1408 - 512 = 896: 4 image loads (384), 3 stores the next load waits behind (264), the weights (160)
    # and the last store after the last compute (88)
    assert "TensorCore idle 896 cycles: load:image 384, store-port 264, load:weight 160, drain 88" in out
    # peak SRAM: the weights + one image slab + one output slab = 3072 + 1024 + 768
    assert "SRAM peak 4,864 B" in out


def test_network_sram_compulsory_traffic_by_hand(tmp_path_factory):
    out = printed("network_sram", tmp_path_factory)
    # 1-byte words. stem: image 3x112x112 = 37,632, weights 32x3x3x3 = 864 + bias 32, output 32x56x56 = 100,352;
    # conv1+conv2 (a chain: the stem's output feeds the residual too, so the stem is outside it): input 100,352,
    # weights 2 x 32x32x3x3 = 18,432 + biases 64, output 100,352; the residual add is the chain's own input, on
    # chip; pool reads 100,352 and writes 32; fc reads 32 + weights 320 + bias 10 and writes 10.
    compulsory = (37_632 + 864 + 32 + 100_352) + (100_352 + 18_432 + 64 + 100_352) + (100_352 + 32) + (32 + 320 + 10 + 10)
    assert compulsory == 458_836
    rows = re.findall(r"^ *(\d+) KiB +([\d,]+) +([\d,]+) +([\d,]+)$", out, re.M)
    assert [int(r[0]) for r in rows] == [16, 32, 64, 128, 256, 512, 1024]
    assert {_number(r[2]) for r in rows} == {compulsory}
    traffic = [_number(r[1]) for r in rows]
    assert all(t >= compulsory for t in traffic) and traffic == sorted(traffic, reverse=True)
    # the smallest size within 10 % of compulsory is the first row whose traffic is at most 1.1 x compulsory
    first = next(int(r[0]) for r in rows if _number(r[1]) <= 1.1 * compulsory)
    assert out.rstrip().endswith(f"smallest SRAM within 10 % of compulsory: {first} KiB")


def test_bandwidth_plot_windows_cover_the_run(tmp_path_factory):
    out = printed("bandwidth_plot", tmp_path_factory)
    cycles = _number(re.search(r"demo2 on blog: ([\d,]+) cycles", out).group(1))
    windows, width = (_number(x) for x in re.search(r"^(\d+) windows of ([\d,]+) cycles", out, re.M).groups())
    assert (windows - 1) * width < cycles <= windows * width
    # demo2's traffic, as the demo table counts it: the output 512 x 56 x 56 = 1,605,632 B stored once
    assert "1,605,632 B stored" in out
