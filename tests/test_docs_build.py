"""The documentation site builds with `mkdocs build --strict`: a link to a missing page or anchor, or a page left
out of the navigation, fails it (mkdocs comes with the `test` extra)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _build(tmp_path: Path, config: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_the_site_builds_strictly_with_every_page_and_figure(tmp_path):
    done = _build(tmp_path, ROOT / "mkdocs.yml")
    assert done.returncode == 0, done.stderr
    site = tmp_path / "site"
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").rglob("*.md"))
    assert len(pages) >= 15
    for page in pages:
        built = site / "index.html" if page.name == "index" else site / page / "index.html"
        assert built.is_file(), page
    # the figures of plots/ are served beside the pages (docs/hooks.py), and a page's link reaches them
    assert (site / "plots" / "timing-demo2-n2-gantt.png").is_file()
    assert 'src="../plots/timing-demo2-n2-gantt.png"' in (site / "writing-schedules" / "index.html").read_text()


def test_a_broken_link_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# x\n\n[gone](nowhere.md)\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: t\ndocs_dir: docs\n")
    done = _build(tmp_path, config)
    assert done.returncode == 1 and "nowhere.md" in done.stderr
