"""What needs the whole finished site, after any engine has rendered the pages.

``python -m site_tools.after_build SITE_DIR [-f mkdocs.yml]`` runs it on a site built by
another engine; the MkDocs plugin (site_tools.mkdocs_plugin) calls the same functions at
the end of its build:

- :func:`finish_pages`: the pictures as files (site_tools.engine.figure_files), then the
  references to figures of other pages, now that every page's figures are numbered
  (site_tools.engine.numbering.resolve_site);
- :func:`chapter_notebooks`: each chapter as a notebook next to its page
  (site_tools.outputs.notebooks), made from the finished page;
- :func:`downloads`: the wheel of ``attention_src`` and ``models.txt`` under
  ``downloads/`` (site_tools.outputs.wheel), for the home page's install lines;
- :func:`live_models`: the in-browser models' weights (site_tools.outputs.live_models);
- :func:`prune`: the store's and the notebooks' unused entries, after a build of both
  editions.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from site_tools.engine import numbering, store
from site_tools.engine.figure_files import FigureFiles

log = logging.getLogger("mkdocs.plugins.attention")
ROOT = Path(__file__).resolve().parents[1]
WHEEL_CACHE = ROOT / ".cache" / "wheel"
CHAPTER_NOTEBOOKS = ROOT / ".cache" / "notebooks"


def finish_pages(site_dir, numbers: dict, figures: FigureFiles) -> None:
    written = figures.write(site_dir)  # before anything reads the pages back
    if figures.files:
        log.info("%d pictures as files (%d written)", len(figures.files), written)
    numbering.resolve_site(site_dir, numbers)


def chapter_notebooks(
    site_dir, numbers: dict, figures: FigureFiles, stopping: Callable[[], bool] = bool
) -> int:
    """Each chapter as a notebook next to its page, made from the finished page: its
    figure references are numbered by now. Returns how many were written."""
    from site_tools.outputs import notebooks

    start = time.perf_counter()
    written = 0
    for url in numbers:
        if stopping():
            return written  # serve is stopping
        page = Path(site_dir) / url / "index.html"
        if url.startswith("chapters/") and page.exists():
            html = page.read_text("utf-8")
            if store.PENDING in html:
                continue  # serve: outputs still being computed, no notebook yet
            notebooks.write_notebook(  # a notebook is one file: its figures inside
                figures.inline(html, site_dir),
                page_url=url,
                site_dir=site_dir,
                cache=CHAPTER_NOTEBOOKS,
            )
            written += 1
    log.info("%d chapter notebooks in %.1f s", written, time.perf_counter() - start)
    return written


def downloads(reuse_any: bool = False) -> list[tuple[str, Path]]:
    """``(site path, source file)`` of what ``downloads/`` serves: the wheel (a rebuild
    under serve reuses the last wheel built) and ``models.txt``."""
    from site_tools.outputs import wheel as wheels

    wheel = wheels.build_wheel(WHEEL_CACHE, reuse_any=reuse_any)
    return [
        (f"{wheels.DOWNLOADS}/{name}", source)
        for name, source in ((wheel.name, wheel), ("models.txt", ROOT / "models.txt"))
    ]


def live_models(site_dir, shared: bool = False) -> None:
    from site_tools.outputs.live_models import write_live_models

    write_live_models(site_dir, shared=shared)


def prune(since: float) -> None:
    """The store's and the chapter notebooks' entries that no build since ``since`` used
    (a build of both editions: what neither used)."""
    from site_tools.outputs import notebooks

    removed = store.prune(since)
    if removed:
        log.info("store of executed outputs: %d unused entries removed", removed)
    notebooks.prune_notebooks(CHAPTER_NOTEBOOKS, since)


def _config(config_file: Path):
    from mkdocs.config import load_config

    return load_config(str(config_file))


def nav_numbers(config) -> dict[str, tuple[str, str]]:
    """The numbered pages of a config's nav, as numbering.nav_numbers reads MkDocs' nav."""
    from mkdocs.structure.files import get_files
    from mkdocs.structure.nav import get_navigation

    return numbering.nav_numbers(get_navigation(get_files(config), config))


def finish_foreign_page(html: str, url: str, lang: str, numbers: dict, figures: FigureFiles) -> str:
    """What the MkDocs plugin does to a page's content as it renders it, done on the
    finished page of another engine: numbers, the listings' copy texts (in Chinese in
    the Chinese edition), the pictures as files."""
    from site_tools import edition
    from site_tools.engine import copytext

    html = numbering.number_page(html, url, numbers, lang)
    html = copytext.add_listing_copies(html, lang)
    if lang == "zh":
        html = edition.chinese_listings(html)
    return figures.swap(html, url)


def write_foreign_copies(site_dir, url: str, source: Path, lang: str) -> None:
    """The page's copy texts (``_copies/``), from its Markdown and the store, as the
    MkDocs plugin writes them."""
    from site_tools import edition
    from site_tools.engine import program

    opened = store.fill(source.read_text("utf-8"), url)
    written = program.write_copies(site_dir, url, opened)
    if written is not None and lang == "zh":
        edition.chinese_copies(written)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m site_tools.after_build")
    parser.add_argument("site_dir", type=Path)
    parser.add_argument("-f", "--config-file", type=Path, default=ROOT / "mkdocs.yml")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)-7s -  %(message)s")
    config = _config(args.config_file)
    lang = "zh" if str(config["theme"]["language"]).startswith("zh") else "en"
    docs = Path(config["docs_dir"])
    numbers = nav_numbers(config)
    figures = FigureFiles()
    for path in sorted(args.site_dir.rglob("index.html")):
        url = path.relative_to(args.site_dir).parent.as_posix()
        url = "" if url == "." else f"{url}/"
        source = docs / (f"{url[:-1]}.md" if url else "index.md")
        if not source.is_file() or url.startswith("zh/"):
            continue  # not a page of this edition (the other edition's, a lab's, …)
        html = path.read_text("utf-8")
        finished = finish_foreign_page(html, url, lang, numbers, figures)
        if finished != html:
            path.write_text(finished, "utf-8")
        write_foreign_copies(args.site_dir, url, source, lang)
    finish_pages(args.site_dir, numbers, figures)
    chapter_notebooks(args.site_dir, numbers, figures)
    for uri, source in downloads():
        (args.site_dir / uri).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, args.site_dir / uri)
    live_models(args.site_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
