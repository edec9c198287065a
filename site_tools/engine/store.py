"""The one store of executed outputs: each page's blocks run once, whoever asks.

The build, ``mkdocs serve`` and the doc tests all render pages through the same
Python fence (:mod:`site_tools.engine.fences`), which asks this store for a block's
output before running it. A block's output is stored under a key made of
everything that determines it:

- the *shape* of the page's program up to and including this block: its copy
  texts and figures' code in page order (:mod:`site_tools.engine.program`;
  :func:`attention_src.machinery.code_shape`: the syntax tree, so comments,
  docstrings and layout do not count), with each block's kind and ``raises=``;
- the page's fingerprints (:func:`site_tools.engine.deps.page_fingerprints`, ``runs``
  and ``data``): the package code its blocks can reach (without comments or
  docstrings), ``site_tools`` itself, and the bytes of the files of
  ``docs/data`` that this code names;
- the torch and Python versions, the device, and hashes of ``pyproject.toml``
  and ``models.txt``.

The chain of earlier blocks is in the key because a block runs in the state
those left behind (their names, the random generators, files). So a page
whose prose or comments changed -- a translated edition of it, say -- reuses
every output byte for byte; a change in one block re-executes that block and
every block after it. A page runs as one program (what a reader copies, in
page order, in one fresh interpreter): when a block must run, the whole
program runs, the blocks whose outputs were stored counting as replayed.

Entries are written atomically (a temporary file, then a rename), carry the
hash of their output, and an entry that cannot be read or does not match is
deleted and recomputed, never served. Each use touches its entry; a full
build of the site deletes the entries it did not use (:func:`prune`).

:mod:`site_tools.engine.parallel` runs the programs of the pages a build needs, a
fresh interpreter each, side by side, so that the build itself only reads the store.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from site_tools.engine import blocks

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / ".cache" / "executed"
PAGES = "pages.json"  # what each page used in its last rendering


def store_dir() -> Path | None:
    """The store's folder: ``.cache/executed`` in the checkout, or
    ``$ATTENTION_EXEC_STORE`` (``off``: keep nothing, run every block)."""
    chosen = os.environ.get("ATTENTION_EXEC_STORE")
    if chosen == "off":
        return None
    return Path(chosen) if chosen else STORE


@dataclass
class Stats:
    """What the store did in this process (the tests count executions)."""

    executed: list[tuple[str, int]] = field(default_factory=list)  # (page, block)
    reused: list[tuple[str, int]] = field(default_factory=list)
    replayed: list[tuple[str, int]] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)  # keys of entries thrown away


STATS = Stats()


def _environment() -> str:
    import torch

    parts = [torch.__version__, platform.python_version()]
    parts.append(f"cuda:{torch.cuda.get_device_name()}" if torch.cuda.is_available() else "cpu")
    for name in ("pyproject.toml", "models.txt"):
        path = ROOT / name
        parts.append(hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "-")
    return "\0".join(parts)


def _code_hash(markdown: str) -> str:
    """The page's record in the store: a hash of its executed code's shape, so that
    a page whose prose or comments differ (the Chinese edition of it) shares the
    record, and :func:`needs_run` knows it needs nothing run."""
    from attention_src.machinery import code_shape

    digest = hashlib.sha256()
    for fence in blocks.fences(markdown, "python"):
        options = fence.info[len("python") :].strip()
        digest.update(f"{options}\0{code_shape(fence.code)}\0".encode())
    return digest.hexdigest()


@dataclass
class _Page:
    name: str  # for the log and the counts
    text: str  # hash of the page's executed code: its record in the store
    blocks: list = field(default_factory=list)  # the program (site_tools.engine.program.Block)
    keys: list[str] = field(default_factory=list)
    base: str | None = None
    outputs: list[str | None] = field(default_factory=list)  # per program block
    errors: dict[int, str] = field(default_factory=dict)  # block index (0-based) -> why
    next: int = 0  # the next program block a fence asks for
    pending: bool = False  # outputs shown as PENDING: being computed (./dev.sh serve)


_PAGE: list[_Page] = []  # the page being rendered, if any


_BASES: dict[str, str] = {}  # page text hash -> base, for one build (forget_code clears it)


def _page_base(markdown: str) -> str:
    text = _text_hash(markdown)
    if text not in _BASES:
        from site_tools.engine.deps import markdown_fingerprints

        prints = markdown_fingerprints(markdown)
        base = "\0".join([_environment(), prints["runs"], prints["data"]])
        _BASES[text] = hashlib.sha256(base.encode()).hexdigest()
    return _BASES[text]


def forget_code() -> None:
    """Forget the pages' fingerprints: the code may have changed (a new build)."""
    _BASES.clear()


def _text_hash(markdown: str) -> str:
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


def program_keys(blocks: list, base: str) -> list[str]:
    """One key per block of the page's program: the shape of the program up to and
    including it (the copy texts' syntax trees, each block's kind, ``raises=`` and
    whether it is run), with the page's environment and fingerprints."""
    from attention_src.machinery import code_shape

    chain = hashlib.sha256()
    keys = []
    for block in blocks:
        chain.update(
            f"{block.kind}\0{code_shape(block.code)}\0{block.raises}\0"
            f"{block.skip is not None}\0".encode()
        )
        keys.append(hashlib.sha256(f"{base}\0{chain.hexdigest()}".encode()).hexdigest()[:32])
    return keys


# What ``./dev.sh serve`` shows for an output whose page is still running in the background
# (never stored, never copied, never in a notebook; a build that finds it fails).
PENDING = "⏳ [output pending] ./dev.sh serve is computing this page; it reloads when done."


def open_page(
    markdown: str,
    name: str = "page",
    run: Callable | None = None,
    defer: Callable[[str, str], None] | None = None,
) -> _Page:
    """Start a page: find its program's outputs in the store, or run its program.

    The page's program (:func:`site_tools.engine.program.page_program`: its copy texts in
    page order, and its figures' code) runs whole in a fresh interpreter when any
    of its blocks has no stored output; the blocks whose outputs were stored
    already count as replayed, the others as executed. ``run(blocks, page)``
    replaces :func:`site_tools.engine.program.run_program` (the tests count with it).
    The Python fence then takes the outputs in order (:func:`output_for`).

    ``defer(markdown, name)`` (``./dev.sh serve``): instead of running a program,
    hand the page to it and show :data:`PENDING` for the outputs not stored yet.
    """
    end_page()  # the page before, if nothing closed it
    page = fill(markdown, name, run, defer)
    _PAGE.append(page)
    return page


def fill(
    markdown: str,
    name: str = "page",
    run: Callable | None = None,
    defer: Callable[[str, str], None] | None = None,
) -> _Page:
    """:func:`open_page` without opening it: the page's outputs, from the store or
    from a run of its program (which stores them). Safe to call from threads."""
    from site_tools.engine import program

    # Reading the page parses Python (ast); CPython 3.11's parser is not safe to run in two
    # threads at once (seen here: "AST constructor recursion depth mismatch"), and
    # site_tools.engine.parallel fills pages from threads: one page is read at a time.
    with _READING:
        page = _Page(name, _code_hash(markdown))
        page.blocks = program.page_program(markdown)
        if not page.blocks:
            return page
        page.base = _page_base(markdown)
        page.keys = program_keys(page.blocks, page.base)
    stored = [read(key) for key in page.keys]
    if all(s is not None for s in stored):
        page.outputs = stored
        STATS.reused.extend((name, i) for i in range(len(stored)))
        return page
    if defer is not None:
        defer(markdown, name)
        page.pending = True
        page.outputs = [PENDING + "\n" if s is None else s for s in stored]
        return page
    results = (run or program.run_program)(page.blocks, name)
    page.outputs = [None] * len(page.blocks)
    for index, (key, result, before) in enumerate(zip(page.keys, results, stored, strict=True)):
        if result["status"] in {"failed", "not run"}:
            page.errors[index] = result["error"] or "not run: a block before it failed"
            continue
        page.outputs[index] = result["output"]
        if before is None:
            write(key, result["output"])
            STATS.executed.append((name, index))
        else:
            STATS.replayed.append((name, index))
    return page


def is_open(markdown: str) -> bool:
    """Whether the page open now is this one (the MkDocs plugin opens each page before
    it renders; a page's Markdown with a banner before it is the same page)."""
    return bool(_PAGE) and _PAGE[-1].text == _code_hash(markdown)


def end_page() -> list[str]:
    """Finish the page and record the keys its blocks used (returned, in order).

    Called after a page is rendered (the build's hook, :mod:`site_tools.engine.parallel`),
    or by the next :func:`open_page`."""
    page = _PAGE.pop() if _PAGE else None
    if page is None:
        return []
    record(page)
    return page.keys


def record(page: _Page) -> None:
    """Remember the keys a page's program used (a program that failed is not recorded)."""
    folder = store_dir()
    if folder is not None and page.keys and not page.errors and not page.pending:
        _record(folder, page.text, {"keys": page.keys, "base": page.base})


def page_record(markdown: str, folder: Path | None = None) -> dict | None:
    """What the store recorded for a page with this Markdown: ``{"keys", "base"}``."""
    folder = folder or store_dir()
    try:
        return json.loads((folder / PAGES).read_text("utf-8")).get(_code_hash(markdown))
    except (OSError, ValueError, TypeError):
        return None


def _entry(folder: Path, key: str) -> Path:
    return folder / key[:2] / f"{key}.json"


def read(key: str, folder: Path | None = None) -> str | None:
    """The stored output under ``key``, or None (a damaged entry is deleted)."""
    folder = folder or store_dir()
    if folder is None:
        return None
    path = _entry(folder, key)
    try:
        data = json.loads(path.read_text("utf-8"))
        output = data["output"]
        ok = data["key"] == key and hashlib.sha256(output.encode()).hexdigest() == data["sha256"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        STATS.corrupt.append(key)
        path.unlink(missing_ok=True)
        return None
    os.utime(path)  # used: pruning keeps it
    return output


def write(key: str, output: str, folder: Path | None = None) -> None:
    """Store ``output`` under ``key``, atomically."""
    folder = folder or store_dir()
    if folder is None:
        return
    path = _entry(folder, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"key": key, "sha256": hashlib.sha256(output.encode()).hexdigest(), "output": output}
    _write_json(path, data)


def _write_json(path: Path, data) -> None:
    """Write ``path`` whole or not at all: a temporary file beside it, then a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class PageError(Exception):
    """The page's program did not give this block an output (it failed, or does not
    match the page the fence renders)."""


def output_for(
    code: str,
    session: str | None,
    raises: str | None,
    run: Callable[[str, str | None, str | None], str],
) -> str:
    """The output of one executed block, from its page's program run.

    Outside a page (no :func:`open_page`) the block simply runs, through ``run``.
    """
    from attention_src.machinery import code_shape

    if not _PAGE or not _PAGE[-1].blocks:
        return run(code, session, raises)
    page = _PAGE[-1]
    while page.next < len(page.blocks) and not page.blocks[page.next].executed_by_fence:
        page.next += 1
    if page.next >= len(page.blocks):
        raise PageError(f"{page.name}: the page has more executed blocks than its program")
    index, block = page.next, page.blocks[page.next]
    page.next += 1
    if code_shape(code) != code_shape(block.code) or (raises or None) != (block.raises or None):
        raise PageError(
            f"{page.name}: block {block.index} of the program is not the block rendered "
            f"here:\n{block.code[:300]}\n---\n{code[:300]}"
        )
    if index in page.errors:
        raise PageError(f"{page.name}, block {block.index}:\n{page.errors[index]}")
    return page.outputs[index]


_RECORDING = threading.Lock()
_READING = threading.Lock()


def _record(folder: Path, name: str, record: dict) -> None:
    """Remember which entries the page used (for :func:`needs_run`)."""
    with _RECORDING:
        _record_unlocked(folder, name, record)


def _record_unlocked(folder: Path, name: str, record: dict) -> None:
    path = folder / PAGES
    folder.mkdir(parents=True, exist_ok=True)
    try:  # written whole by _write_json, so never read half-written
        pages = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        pages = {}
    pages[name] = record
    _write_json(path, pages)


def prune(started: float, folder: Path | None = None) -> int:
    """Delete the entries not used since ``started`` (a full build's start time)."""
    folder = folder or store_dir()
    if folder is None or not folder.is_dir():
        return 0
    removed = 0
    for path in folder.glob("*/*.json"):
        if path.name.startswith(".tmp-"):
            continue
        if path.stat().st_mtime < started:
            path.unlink(missing_ok=True)
            removed += 1
    for tmp in [*folder.glob(".tmp-*"), *folder.glob("*/.tmp-*")]:  # left by a killed process
        if tmp.stat().st_mtime < started:
            tmp.unlink(missing_ok=True)
    return removed


def needs_run(markdown: str, folder: Path | None = None) -> bool:
    """Whether a page may have a block without a stored output: the page, or the
    code it reaches, changed since it was last rendered, or an entry it used is gone."""
    folder = folder or store_dir()
    if folder is None or not blocks.fences(markdown, "python"):
        return False
    record = page_record(markdown, folder)
    if not record or record.get("base") != _page_base(markdown):
        return True
    return not all(_entry(folder, key).exists() for key in record["keys"])
