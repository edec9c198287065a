"""Before any engine renders: every page's program runs, each in a fresh interpreter.

``python -m site_tools.prebuild [-f mkdocs.yml]`` runs the programs of the pages the
store of executed outputs cannot serve (site_tools.engine.program, .store), side by side
(site_tools.engine.parallel); then rendering only reads the store, on every engine. The
MkDocs plugin calls :func:`run_stale_pages` on the pages of its build.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from site_tools.engine import parallel, store

log = logging.getLogger("mkdocs.plugins.attention")
ROOT = Path(__file__).resolve().parents[1]


def run_stale_pages(pages: list[tuple[Path, str]]) -> dict[str, int]:
    """Run the programs of ``pages`` ((Markdown file, page name)) that need a run; return
    ``{page: blocks executed}`` for those that executed any."""
    stale = [
        (path, name)
        for path, name in pages
        if path.suffix == ".md" and store.needs_run(path.read_text("utf-8"))
    ]
    if not stale:
        return {}
    start = time.perf_counter()
    results = parallel.prefill(stale)
    executed = {Path(r["page"]).as_posix(): r["executed"] for r in results if r["executed"]}
    log.info(
        "executed %d blocks of %d pages in parallel in %.1f s",
        sum(executed.values()),
        len(results),
        time.perf_counter() - start,
    )
    return executed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m site_tools.prebuild")
    parser.add_argument("-f", "--config-file", type=Path, default=ROOT / "mkdocs.yml")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)-7s -  %(message)s")
    from mkdocs.config import load_config
    from mkdocs.structure.files import get_files

    config = load_config(str(args.config_file))
    pages = [
        (Path(f.abs_src_path), f.src_uri)
        for f in get_files(config).documentation_pages()
        if f.abs_src_path
    ]
    run_stale_pages(pages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
