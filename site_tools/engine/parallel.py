"""Pages executed in parallel: the independent pages of a build, side by side.

MkDocs renders pages one at a time. Before it does, the build hook hands the
pages whose blocks the store (:mod:`site_tools.engine.store`) cannot serve to
:func:`prefill`, which runs each page's program -- its copy texts in page
order, and its figures' code (:mod:`site_tools.engine.program`) -- in a fresh
interpreter of its own, as many at once as there are cores unless
``$ATTENTION_WORKERS`` says otherwise, under the same keys as the build. The
build then reads every output from the store. No page sees what another left
behind: each is a reader's fresh interpreter.

``python -m site_tools.engine.parallel PAGE.md ...`` does the same from the command
line and prints what executed: the tests count executions with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from site_tools.engine import program, store

ROOT = Path(__file__).resolve().parents[2]


def run_page(source: Path, name: str, threads: int | None = None) -> dict:
    """Fill the store with one page's outputs, running its program if it must.

    Returns ``{"page", "blocks", "executed", "replayed", "error"}``.
    """
    run = partial(program.run_program, threads=threads)
    counts = len(store.STATS.executed), len(store.STATS.replayed)
    text = Path(source).read_text("utf-8")
    executed = replayed = 0
    try:
        page = store.fill(text, name, run)
        store.record(page)
        executed = sum(1 for p, _ in store.STATS.executed[counts[0] :] if p == name)
        replayed = sum(1 for p, _ in store.STATS.replayed[counts[1] :] if p == name)
        error = next(iter(page.errors.values()), None)
        blocks = len(page.keys)
    except Exception as exc:  # the build itself will run the page and report it
        error, blocks = f"{type(exc).__name__}: {exc}", 0
    return {
        "page": name,
        "blocks": blocks,
        "executed": executed,
        "replayed": replayed,
        "error": error,
    }


def prefill(pages: list[tuple[Path, str]], workers: int | None = None) -> list[dict]:
    """Run the programs of ``pages`` (source, name), ``workers`` at a time.

    ``workers`` defaults to ``$ATTENTION_WORKERS`` or the number of CPU cores;
    torch's threads are shared among them (torch's default of one thread per core
    in every interpreter oversubscribes the cores: measured, 4 light pages on 2
    cores, 2 workers took 15.1 s with the default, 9.7 s with 1). Returns
    :func:`run_page`'s report per page.
    """
    if store.store_dir() is None or not pages:
        return []
    workers = workers or int(os.environ.get("ATTENTION_WORKERS", 0)) or os.cpu_count() or 1
    workers = min(workers, len(pages))
    threads = max(1, (os.cpu_count() or 1) // workers) if workers > 1 else None
    # Largest pages first: they set the build's length.
    jobs = sorted(pages, key=lambda job: -Path(job[0]).stat().st_size)
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda job: run_page(*job, threads=threads), jobs))


# ``./dev.sh serve``: pages whose programs run in the background while the site is served.
_BACKGROUND: dict = {}  # {"pool": executor}
PENDING_PAGES: dict[str, str] = {}  # page -> hash of the Markdown being computed
READY: set[str] = set()  # pages computed since the last rebuild: render them again


def in_background(markdown: str, name: str, done: Callable[[str], None]) -> None:
    """Run the page's program in the background (``./dev.sh serve``), nicely, as many at
    once as there are cores; ``done(name)`` when its outputs are in the store."""
    import hashlib

    digest = hashlib.sha256(markdown.encode()).hexdigest()
    if PENDING_PAGES.get(name) == digest:
        return
    PENDING_PAGES[name] = digest
    if "pool" not in _BACKGROUND:
        workers = int(os.environ.get("ATTENTION_WORKERS", 0)) or os.cpu_count() or 1
        _BACKGROUND["pool"] = ThreadPoolExecutor(workers, thread_name_prefix="serve-pages")
    run = partial(program.run_program, nice=True)

    def job() -> None:
        try:
            page = store.fill(markdown, name, run)
            store.record(page)
        finally:
            if PENDING_PAGES.get(name) == digest:
                del PENDING_PAGES[name]
                READY.add(name)
                done(name)

    _BACKGROUND["pool"].submit(job)


def main(argv: list[str] | None = None) -> None:
    """``python -m site_tools.engine.parallel PAGE.md ...``: run the pages' programs through
    the store, one page after another unless ``--workers N``, and print a JSON report."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    docs = ROOT / "docs"
    pages = [
        (p.resolve(), p.resolve().relative_to(docs).as_posix())
        if p.resolve().is_relative_to(docs)
        else (p.resolve(), p.name)
        for p in args.pages
    ]
    print(json.dumps(prefill(pages, workers=args.workers)))


if __name__ == "__main__":
    main()
