"""The one store of executed outputs: each page's blocks run once, whoever asks.

The build, ``mkdocs serve`` and the doc tests all render pages through the same
Python fence (:mod:`site_tools.fences`), which asks this store for a block's
output before running it. A block's output is stored under a key made of
everything that determines it:

- the *shape* of the page's executed blocks up to and including this one, in
  the order the page runs them (:func:`attention_src.machinery.code_shape`:
  the syntax tree, so comments, docstrings and layout do not count), with each
  block's session and ``raises=``;
- the page's fingerprints (:func:`site_tools.deps.page_fingerprints`, ``runs``
  and ``data``): the package code its blocks can reach (without comments or
  docstrings), ``site_tools`` itself, and the bytes of the files of
  ``docs/data`` that this code names;
- the torch and Python versions, the device, and hashes of ``pyproject.toml``
  and ``models.txt``.

The chain of earlier blocks is in the key because a block runs in the state
those left behind (their names, the random generators, files). So a page
whose prose or comments changed -- a translated edition of it, say -- reuses
every output byte for byte; a change in one block re-executes that block and
every block after it; when a block must run, the blocks before it whose outputs
came from the store run first (silently), to rebuild the state it expects.

Entries are written atomically (a temporary file, then a rename), carry the
hash of their output, and an entry that cannot be read or does not match is
deleted and recomputed, never served. Each use touches its entry; a full
build of the site deletes the entries it did not use (:func:`prune`).

:mod:`site_tools.parallel` renders pages' Markdown in worker processes, so
that the independent pages of a build execute in parallel and the build itself
only reads the store.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
    for found in _FENCE.finditer(markdown):
        code = textwrap.dedent(found["code"])
        digest.update(f"{found['info'].strip()}\0{code_shape(code)}\0".encode())
    return digest.hexdigest()


_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```python(?P<info>[^\n]*)\n(?P<code>.*?)^(?P=indent)```",
    re.MULTILINE | re.DOTALL,
)


@dataclass
class _Page:
    markdown: str
    text: str  # hash of the page's executed code: its record in the store
    base: str | None = None  # environment and fingerprints, computed at the first block
    chain: hashlib._Hash = field(default_factory=hashlib.sha256)
    index: int = 0
    keys: list[str] = field(default_factory=list)
    pending: list[tuple[str, str | None, str | None]] = field(default_factory=list)


_PAGE: list[_Page] = []  # the page being rendered, if any
TORCH_FRESH_SEED = 67280421310721  # torch's default seed in a fresh interpreter


_BASES: dict[str, str] = {}  # page text hash -> base, for one build (forget_code clears it)


def _page_base(markdown: str) -> str:
    text = _text_hash(markdown)
    if text not in _BASES:
        from site_tools.deps import markdown_fingerprints

        prints = markdown_fingerprints(markdown)
        base = "\0".join([_environment(), prints["runs"], prints["data"]])
        _BASES[text] = hashlib.sha256(base.encode()).hexdigest()
    return _BASES[text]


def forget_code() -> None:
    """Forget the pages' fingerprints: the code may have changed (a new build)."""
    _BASES.clear()


def _text_hash(markdown: str) -> str:
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


def begin_page(markdown: str) -> None:
    """Start a page (given its Markdown): its blocks are keyed on its code from now on.

    The random generators start as a reader's fresh interpreter has them
    (torch's default seed; Python's and NumPy's seeded with 0), so that a page's
    outputs do not depend on which pages ran before it in the same process.
    """
    import random

    import numpy as np
    import torch

    torch.manual_seed(TORCH_FRESH_SEED)
    random.seed(0)
    np.random.seed(0)
    end_page()  # the page before, if nothing closed it
    _PAGE.append(_Page(markdown, _code_hash(markdown)))


def end_page() -> list[str]:
    """Finish the page and record the keys its blocks used (returned, in order).

    Called after a page is rendered (the build's hook, :mod:`site_tools.parallel`),
    or by the next :func:`begin_page`. (Python-Markdown runs postprocessors on
    fragments too, such as headings, so the end of a page is not an extension's
    event.)"""
    page = _PAGE.pop() if _PAGE else None
    if page is None:
        return []
    folder = store_dir()
    if folder is not None and page.keys:
        _record(folder, page.text, {"keys": page.keys, "base": page.base})
    return page.keys


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


def output_for(
    code: str,
    session: str | None,
    raises: str | None,
    run: Callable[[str, str | None, str | None], str],
) -> str:
    """The output of one block: from the store, or from ``run(code, session, raises)``.

    Outside a page (no :func:`begin_page`) the block simply runs.
    """
    from attention_src.machinery import code_shape

    if not _PAGE:
        return run(code, session, raises)
    page = _PAGE[-1]
    if page.base is None:
        page.base = _page_base(page.markdown)
    page.chain.update(f"{code_shape(code)}\0{session}\0{raises}\0".encode())
    key = hashlib.sha256(f"{page.base}\0{page.chain.hexdigest()}".encode()).hexdigest()[:32]
    page.keys.append(key)
    where = (page.text[:12], page.index)
    page.index += 1
    stored = read(key)
    if stored is not None:
        page.pending.append((code, session, raises))
        STATS.reused.append(where)
        return stored
    # Rebuild the state the block expects, then run it.
    for index, (earlier, earlier_session, earlier_raises) in enumerate(page.pending):
        run(earlier, earlier_session, earlier_raises)
        STATS.replayed.append((where[0], where[1] - len(page.pending) + index))
    page.pending.clear()
    output = run(code, session, raises)
    STATS.executed.append(where)
    write(key, output)
    return output


def _record(folder: Path, name: str, record: dict) -> None:
    """Remember which entries the page used (for :func:`needs_run`)."""
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
    if folder is None or 'exec="' not in markdown:
        return False
    record = page_record(markdown, folder)
    if not record or record.get("base") != _page_base(markdown):
        return True
    return not all(_entry(folder, key).exists() for key in record["keys"])
