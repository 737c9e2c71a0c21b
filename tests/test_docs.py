"""The documentation site builds with `mkdocs build --strict`: a broken link, a page missing
from the nav or a nav entry without a page fails the build; README stays a short front door."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_documentation_site_builds_strictly(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "site" / "differences" / "index.html").is_file()


def test_every_docs_page_is_in_the_nav():
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    listed = {page for entry in nav for page in entry.values()}
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}


def test_readme_is_a_short_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for command in ("./run python train.py task=HumanoidASE", "./run pytest"):
        assert command in readme
