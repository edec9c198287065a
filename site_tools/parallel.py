"""Pages executed in parallel: the independent pages of a build, each in a worker.

MkDocs renders pages one at a time. Before it does, the build hook hands the
pages whose blocks the store (:mod:`site_tools.store`) cannot serve to
:func:`prefill`, which renders their Markdown in worker processes -- one per
core unless ``$ATTENTION_WORKERS`` says otherwise -- with the site's own
Markdown extensions, so that each block runs through the same fence, in the
same order, under the same key as in the build. The build then reads every
output from the store. Each worker is a fresh interpreter (``spawn``), and each
page starts with fresh sessions and the random generators of a fresh
interpreter, so no page sees what another left behind.

``python -m site_tools.parallel PAGE.md ...`` does the same from the command
line (in this process, one page after another, unless ``--workers N``) and
prints what executed: the tests count executions with it.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from site_tools import store

ROOT = Path(__file__).resolve().parents[1]


def render_page(source: Path, name: str, extensions: list, configs: dict) -> dict:
    """Render one page's Markdown here, running (or reusing) its blocks.

    The site's extensions include :mod:`site_tools.pages`, which opens and
    closes the page in the store, as in the build. Returns
    ``{"page", "blocks", "executed", "replayed", "error"}``.
    """
    import markdown

    counts = len(store.STATS.executed), len(store.STATS.replayed)
    text = Path(source).read_text("utf-8")
    try:
        markdown.Markdown(extensions=extensions, extension_configs=configs).convert(text)
        error = None
    except Exception as exc:  # the build itself will run the page and report it
        error = f"{type(exc).__name__}: {exc}"
    store.end_page()
    record = store.page_record(text) or {"keys": []}
    return {
        "page": name,
        "blocks": len(record["keys"]),
        "executed": len(store.STATS.executed) - counts[0],
        "replayed": len(store.STATS.replayed) - counts[1],
        "error": error,
    }


def _render(job: tuple[str, str, list, dict]) -> dict:
    return render_page(Path(job[0]), *job[1:])


def markdown_config(config_file: Path = ROOT / "mkdocs.yml") -> tuple[list, dict]:
    """The site's Markdown extensions and their settings, as MkDocs reads them."""
    from mkdocs.config import load_config

    config = load_config(str(config_file))
    return config["markdown_extensions"], config["mdx_configs"]


def prefill(
    pages: list[tuple[Path, str]],
    extensions: list,
    configs: dict,
    workers: int | None = None,
) -> list[dict]:
    """Render ``pages`` (source, name) in ``workers`` processes to fill the store.

    ``workers`` defaults to ``$ATTENTION_WORKERS`` or the number of CPU cores.
    Returns :func:`render_page`'s report per page. Only extensions named by a
    string are used (those are the ones that run blocks).
    """
    if store.store_dir() is None or not pages:
        return []
    workers = workers or int(os.environ.get("ATTENTION_WORKERS", 0)) or os.cpu_count() or 1
    names = [e for e in extensions if isinstance(e, str)]
    jobs = [(str(source), name, names, configs) for source, name in pages]
    # Largest pages first: they set the build's length.
    jobs.sort(key=lambda job: -Path(job[0]).stat().st_size)
    if workers == 1 or len(jobs) == 1:
        return [_render(job) for job in jobs]
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # a fresh interpreter, like a reader's
    workers = min(workers, len(jobs))
    # One worker per core, each with its share of the threads: torch's default of
    # one thread per core in every worker oversubscribes the cores (measured: 4
    # light pages on 2 cores, 2 workers took 15.1 s with the default, 9.7 s with 1).
    threads = max(1, (os.cpu_count() or 1) // workers)
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_share_threads, initargs=(threads,)
    ) as pool:
        return list(pool.map(_render, jobs))


def _share_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def main(argv: list[str] | None = None) -> None:
    """``python -m site_tools.parallel PAGE.md ...``: run the pages' blocks through the
    store, one page after another in this process, and print a JSON report."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    extensions, configs = markdown_config()
    docs = ROOT / "docs"
    pages = [
        (p.resolve(), p.resolve().relative_to(docs).as_posix())
        if p.resolve().is_relative_to(docs)
        else (p.resolve(), p.name)
        for p in args.pages
    ]
    print(json.dumps(prefill(pages, extensions, configs, workers=args.workers)))


if __name__ == "__main__":
    main()
