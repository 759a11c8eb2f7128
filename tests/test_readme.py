"""The README's schedule example runs and prints what its comment says (derived by hand below)."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_example_prints_its_commented_counts():
    text = README.read_text()
    block = re.search(r"## Writing a schedule\s+```python\n(.*?)```", text, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README example", "exec"), {})
    # weights 48*64 = 3072 B + image 64*8*8 = 4096 B loaded once; output 48*8*8 = 3072 B stored once;
    # weight[oc, :] hits: 2 channel tiles x 4 row slabs = 8
    assert out.getvalue().split() == ["7168", "3072", "8"]
    assert "# 7168 3072 8" in block
