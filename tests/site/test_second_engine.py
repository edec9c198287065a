"""The second engine: the English edition built by Zensical 0.0.73 with the book's steps
around it (``./dev.sh build --engine zensical``: site_tools.prebuild, ``zensical build``,
site_tools.after_build) gives the reader what MkDocs' build gives, page by page
(site_tools.engine_compare: executed outputs, figures and their numbers and bytes,
chapter links, copy texts, notebooks, the language switch, search), but for the gaps the
contributing page lists ("The engine"), which are named here one by one: a gap that
closes or a new difference fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from site_tools import engine_compare

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ("outputs", "figures", "links", "copies", "notebooks", "switch", "search")
LABS = ("labs/attention-maps-lab/", "labs/scaled-dot-product-lab/")
# What differs, and why: Zensical 0.0.73 does not run mkdocs-jupyter (zensical/zensical#52),
# so the labs are not pages (the nav and the attention-maps chapter link the raw .ipynb,
# which the comparison counts as a link to a notebook).
GAPS = {
    **{(lab, check): "the labs: mkdocs-jupyter does not run" for lab in LABS for check in CHECKS},
    ("", "notebooks"): "the nav links a lab's raw .ipynb",  # the home page
    ("chapters/attention-maps/", "links"): "its link to the lab is a link to the raw .ipynb",
    ("chapters/attention-maps/", "notebooks"): "the same link, to the raw .ipynb",
}


def _run(*command: str) -> tuple[str, float]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", *command],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"{command}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr), time.perf_counter() - start


def test_zensical_gives_the_reader_what_mkdocs_gives(built_site):
    out = ROOT / "site-zensical"  # mkdocs.zensical.yml's site_dir (inside the project)
    log, seconds = _run("zensical", "build", "-f", "mkdocs.zensical.yml")
    # The fences read the store the MkDocs build filled: nothing ran inside Zensical.
    assert "exited with errors" not in log and "Execution of python" not in log, log[-3000:]
    _, after_seconds = _run("site_tools.after_build", str(out), "-f", "mkdocs.zensical.yml")
    rows = engine_compare.compare_sites(built_site.dir, out, skip=("zh/",))
    found = {(row.page, check): why for row in rows for check, why in row.differs.items()}
    assert set(found) == set(GAPS), {
        "new differences": {k: v for k, v in found.items() if k not in GAPS},
        "gaps closed": sorted(set(GAPS) - set(found)),
    }
    pages = {row.page for row in rows} - set(LABS)
    assert len(pages) >= 30, pages  # every English page but the labs was compared
    numbered = sum(
        1
        for page in pages
        if (view := engine_compare.read_page(out, page)) is not None
        for figure in view.figures
        if figure[1] not in (None, "#")
    )
    assert numbered > 60, "Zensical's pages hold the numbered figures"
    print(f"zensical build {seconds:.1f} s, after_build {after_seconds:.1f} s")
