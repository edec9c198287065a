"""The store of executed outputs (site_tools/engine/store.py) over whole pages, run as the build
runs them (``python -m site_tools.engine.parallel``, from an empty store): a page whose code differs
only in comments and prose (a translated edition) executes nothing; an edit deep in the
package re-executes exactly the pages whose code reaches it; and after the build, rendering
every page again executes nothing (the build, ``serve`` and the tests compute the same keys).
The store's own behaviour, on made-up pages: tests/site_tools/test_store.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from site_tools.engine import deps, store

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TWO_CHAPTERS = ["chapters/soft-lookup.md", "chapters/scaled-dot-product-attention.md"]


# --- whole pages, run as the build runs them ------------------------------------------------


def _render(root: Path, pages: list[Path], folder: Path) -> dict[str, dict]:
    env = dict(os.environ, ATTENTION_EXEC_STORE=str(folder), PYTHONPATH=str(root))
    env.pop("PYTHONSAFEPATH", None)
    proc = subprocess.run(
        [sys.executable, "-m", "site_tools.engine.parallel", *map(str, pages)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = {r["page"]: r for r in json.loads(proc.stdout.strip().splitlines()[-1])}
    assert all(r["error"] is None for r in reports.values()), reports
    return reports


def _reword(markdown: str) -> str:
    """What a translation does to a page: other prose, other comments, same code."""
    out, inside = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            inside = not inside
            out.append(line)
        elif inside:
            code, hash_, _comment = line.partition("  # ")
            out.append(f"{code}  # 注释" if hash_ else line)
        else:
            out.append(re.sub(r"\b(the|a|and)\b", "的", line))
    return "\n".join(out)


@pytest.fixture(scope="module")
def scratch_project(tmp_path_factory):
    """A copy of the project's code and two chapters, with a store of its own."""
    root = tmp_path_factory.mktemp("project")
    for name in ("attention_src", "site_tools"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(DOCS, root / "docs", ignore=shutil.ignore_patterns("*.ipynb"))
    for path in ROOT.iterdir():  # the rest as it is (mkdocs.yml names some of it)
        if not (root / path.name).exists() and path.name not in {".git", ".cache", ".venv"}:
            (root / path.name).symlink_to(path)
    folder = root / ".cache" / "executed"
    first = _render(root, [root / "docs" / p for p in TWO_CHAPTERS], folder)
    return root, folder, first


def test_a_page_differing_only_in_comments_executes_no_block(scratch_project):
    root, folder, first = scratch_project
    for page in TWO_CHAPTERS:
        assert first[page]["executed"] == first[page]["blocks"] > 5
    edition = root / "docs" / "zz"
    for page in TWO_CHAPTERS:
        target = edition / page
        target.parent.mkdir(parents=True, exist_ok=True)
        text = (root / "docs" / page).read_text("utf-8")
        target.write_text(_reword(text), "utf-8")
        assert target.read_text("utf-8") != text
    again = _render(root, [edition / p for p in TWO_CHAPTERS], folder)
    for page in TWO_CHAPTERS:
        assert again[f"zz/{page}"]["blocks"] == first[page]["blocks"]
        assert again[f"zz/{page}"]["executed"] == 0


def test_an_edit_deep_in_the_package_re_executes_the_pages_that_reach_it(scratch_project):
    """Edit ``softmax`` in the scratch copy: a docstring changes nothing; a change
    in its code re-executes every block of each page whose code reaches it (the
    scaled dot-product chapter imports it), and nothing of a page that cannot."""
    root, folder, _ = scratch_project
    softmax = root / "attention_src" / "softmax.py"
    text = softmax.read_text("utf-8")
    pages = [root / "docs" / p for p in TWO_CHAPTERS]
    reaches = {
        p: "attention_src.softmax.softmax" in deps.reachable_code(*_targets(p))
        for p in TWO_CHAPTERS
    }
    assert reaches["chapters/scaled-dot-product-attention.md"]
    try:
        softmax.write_text(text.replace('"""Numerically stable', '"""Reworded: stable', 1), "utf-8")
        cosmetic = _render(root, pages, folder)
        assert all(r["executed"] == 0 for r in cosmetic.values()), cosmetic
        edited = text.replace(
            "return (e / total).to(x.dtype)", "return (e / total * 1).to(x.dtype)"
        )
        assert edited != text, "the line to edit was not found in softmax.py"
        softmax.write_text(edited, "utf-8")
        after = _render(root, pages, folder)
        for page in TWO_CHAPTERS:
            want = after[page]["blocks"] if reaches[page] else 0
            assert after[page]["executed"] == want, (page, after[page])
    finally:
        softmax.write_text(text, "utf-8")


def _targets(page: str) -> list[str]:
    return sorted({t for code in deps._code_cells(DOCS / page) for t in deps._imported(code)})


@pytest.mark.docs
def test_the_tests_reuse_every_output_the_build_stored(built_site):
    """The build (built_site), ``serve`` and this renderer key every block alike:
    after a build, rendering every page again executes nothing."""
    pages = sorted(DOCS.rglob("*.md"))
    reports = _render(ROOT, pages, store.store_dir())
    executed = {name: r["executed"] for name, r in reports.items() if r["executed"]}
    assert executed == {}
    assert sum(r["blocks"] for r in reports.values()) > 300
