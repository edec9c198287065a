"""MkDocs hooks (see ``hooks:`` in mkdocs.yml)."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
import shutil
import struct
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from site_tools import i18n
from site_tools.engine import copytext, deps, numbering, parallel, program, store
from site_tools.outputs import notebooks
from site_tools.outputs.wheel import DOWNLOADS, build_wheel

log = logging.getLogger("mkdocs.hooks")
NOTEBOOK_CACHE = Path(".cache") / "mkdocs-jupyter"
WHEEL_CACHE = Path(__file__).resolve().parents[1] / ".cache" / "wheel"
CHAPTER_NOTEBOOKS = Path(__file__).resolve().parents[1] / ".cache" / "notebooks"
_BUILT: list = []  # (page, fingerprints) of the pages this build builds
_STATE_AT: list = []  # [state file, code mtime, fingerprints of deferred pages]
_SOURCES: list = []  # the pages of a first serve build, whose fingerprints come after it
_PENDING_SECOND_BUILD = False
_REBUILT: list = []  # pages this build rebuilds because code they reach changed
_NUMBERS: dict = {}  # page url -> (chapter number, title), from the nav
_STARTED: list = []  # when this build started, for pruning the store
_EXECUTED: dict = {}  # page -> blocks this process executed for it (the log reports them)
_AT_PAGE_START: list = [0]
# The pages' programs, as the store opened them, by page: MkDocs renders every page's
# Markdown first (on_page_markdown, on_page_content), then writes every page (on_post_page).
_PROGRAMS: dict = {}

# The pictures of a page (a built figure's SVG, a notebook's PNG) as files the page
# references, named by a hash of their bytes, rather than data URIs in its HTML: a page
# is about half as heavy, a picture is fetched once for every page that shows it, and
# a picture below the fold only when the reader scrolls to it (loading="lazy"; its
# width and height are given, so that the text does not move when it arrives). Each
# edition has its own folder, so that either builds and is served alone.
FIGURE_DIR = "assets/figures"
_FIGURE_FILES: dict[str, bytes] = {}  # "assets/figures/<sha256[:16]>.svg" -> its bytes
_IMG_TAG = re.compile(r"""<img\b(?:[^>"']|"[^"]*"|'[^']*')*>""")
_DATA_SRC = re.compile(
    r'\ssrc="data:image/(?P<kind>svg\+xml|png|gif);base64,(?P<data>[A-Za-z0-9+/=\s]+)"'
)
_SUFFIX = {"svg+xml": "svg", "png": "png", "gif": "gif"}
_MIME = {suffix: f"image/{kind}" for kind, suffix in _SUFFIX.items()}
_FILE_SRC = re.compile(
    rf'\ssrc="(?P<up>(?:\.\./)*){FIGURE_DIR}/(?P<name>[0-9a-f]{{16}}\.(?:svg|png|gif))"'
)
_CSS_PX = {"": 1.0, "px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54}
_SVG_BOX = re.compile(rb'viewBox="\s*[-\d.]+[\s,]+[-\d.]+[\s,]+([\d.]+)[\s,]+([\d.]+)\s*"')

# A lab's copy buttons (mkdocs-jupyter 0.26.3's <clipboard-copy>) are named "Copy to
# Clipboard" by an aria-label in every edition, and show "Copied!" for a second after a
# click: a visible text their name does not contain (label-content-name-mismatch, even
# with the notice aria-hidden). The name comes from the button's own words instead: the
# notice, then "Copy to clipboard" for screen readers only (a11y.css), in the edition's
# language; a screen reader hears the copy from the live region of figures.js.
_CLIPBOARD = re.compile(
    r'(<clipboard-copy\b[^>]*?)\s*,?\s*aria-label="Copy to Clipboard"([^>]*>\s*<div>\s*)'
    r'<span class="notice" hidden(?:="")?>Copied!</span>'
)
CLIPBOARD_WORDS = {"en": ("Copy to clipboard", "Copied!"), "zh": ("复制", "已复制")}
_EMPTY_SCRIPT = re.compile(r"""<script\s+src=(?:""|'')\s*>\s*</script>\n?""")

ROOT = Path(__file__).resolve().parents[1]
CODE_DIRS = (ROOT / "attention_src", ROOT / "site_tools")
TRIGGER = ROOT / ".cache" / "site-deps" / "second-build"


def edition(config) -> str:
    """``en`` or ``zh``: which edition this configuration builds (mkdocs.zh.yml: zh)."""
    return "zh" if str(config["theme"]["language"]).startswith("zh") else "en"


def _prunes(config) -> bool:
    """Whether this build deletes the store's and the notebooks' unused entries: the
    last build of a run that builds both editions. ``./dev.sh build`` builds English
    then Chinese with ``ATTENTION_BUILD_STARTED`` set, and the Chinese build prunes what
    neither used. A build of one edition alone prunes nothing: the store and the
    notebooks' cache serve both editions, and what the other one uses (the Chinese check
    page's outputs, the Chinese notebooks) would be deleted, to be computed again by the
    next build of that edition."""
    if not _STARTED or os.environ.get("ATTENTION_SERVE_DIRTY"):
        return False
    return bool(os.environ.get("ATTENTION_BUILD_STARTED")) and edition(config) == "zh"


def _prune_since() -> float:
    return float(os.environ.get("ATTENTION_BUILD_STARTED") or _STARTED[0])


def on_pre_build(config, **kwargs) -> None:
    _STARTED[:] = [time.time()]
    _EXECUTED.clear()
    _FIGURE_FILES.clear()
    store.forget_code()
    # Under `mkdocs serve` the Python process lives on between rebuilds. Drop
    # the book's modules so that the next build imports the edited source
    # instead of running stale code on the pages.
    for name in list(sys.modules):
        if name.split(".")[0] == "attention_src" or name == "site_tools.outputs.figures":
            del sys.modules[name]
    _key_notebooks_on_code(config)


def _key_notebooks_on_code(config) -> None:
    """mkdocs-jupyter keys its executed notebooks on their bytes only; give it a
    cache folder named after the package code, so that a lab runs again when
    the code it imports changes (the labs import ``attention_src`` as a whole),
    and one folder per edition: mkdocs-jupyter (0.26.3, pinned) evicts, after a
    build, every executed notebook of its folder that the build did not use, so
    the Chinese build of ``./dev.sh build`` (and of the tests) would otherwise
    evict the English labs, and the next English build or serve would run them
    again."""
    plugin = config.plugins.get("mkdocs-jupyter")
    if plugin is None or not plugin.config.get("cache"):
        return
    import attention_src
    from attention_src.machinery.source import code_fingerprint

    code = code_fingerprint(attention_src)[:16]
    folder = NOTEBOOK_CACHE / f"{code}-{edition(config)}"
    plugin.config["cache_dir"] = str(folder)
    if os.environ.get("ATTENTION_SERVE_DIRTY") and hasattr(plugin, "_used_cache_paths"):
        # A --dirty rebuild renders no notebook, and mkdocs-jupyter would then evict
        # their executed copies; keep them.
        plugin._used_cache_paths.update(Path(folder).glob("*.json"))
    if NOTEBOOK_CACHE.is_dir():  # outputs of older code are never read again
        for old in NOTEBOOK_CACHE.iterdir():
            if old.is_dir() and not old.name.startswith(f"{code}-"):
                shutil.rmtree(old, ignore_errors=True)
            elif old.suffix == ".json":
                old.unlink()


def _newest_code_mtime() -> float:
    return max((p.stat().st_mtime for d in CODE_DIRS for p in d.rglob("*.py")), default=0.0)


def _state_path(config) -> Path:
    site = hashlib.sha256(str(Path(config["site_dir"]).resolve()).encode()).hexdigest()[:12]
    return ROOT / ".cache" / "site-deps" / f"{site}.json"


def on_startup(command, dirty, **kwargs):
    # The hooks module is loaded afresh for every rebuild of `mkdocs serve`; the
    # environment lasts the whole process.
    os.environ["ATTENTION_SERVE_DIRTY"] = "1" if (command == "serve" and dirty) else ""
    os.environ[_STOPPING] = ""
    # The build keeps its results in the checkout however mkdocs is started (./dev.sh,
    # the tests, the Pages workflow, a bare `mkdocs build`), never in the user's cache
    # folder, where the reader's 50 MB rule would recompute SmolLM2's weights each time.
    os.environ.setdefault("ATTENTION_CACHE_DIR", str(ROOT / ".cache" / "attention_src"))


def on_config(config, **kwargs):
    if _serving():
        # The work the last build left for after it (below) is done before this one starts.
        _wait_for_the_last_build()
        _defer_search_index(config)
    return config


# Under ``./dev.sh serve`` (only there) the work that no page needs to be shown is done
# in one thread once the build has returned and the server answers: Material's
# search index (the plugin parses every page's HTML: several seconds), the chapters'
# notebooks (made from the finished pages: seconds when their cache does not hold
# them, e.g. the first serve after a build for another site_url) and, in the first
# build, the pages' code fingerprints for later rebuilds (site_tools.engine.deps: seconds).
# A rebuild waits for that thread first. ``./dev.sh build`` and CI do all of it in
# the build, as before.
_AFTER_BUILD = "site-after-build"  # the thread's name: the hooks module is loaded per build


SERVER_WAIT = 30.0  # seconds the thread waits for the server before it works anyway


def _after_the_build(tasks, server: tuple[str, int] | None = None) -> threading.Thread | None:
    """Run ``tasks`` (callables) one after the other in a thread; return it.

    With ``server`` (host, port), the thread first waits until the server accepts a
    connection (at most :data:`SERVER_WAIT` seconds): the tasks are Python work that would
    hold the interpreter's lock while ``mkdocs serve`` finishes the build and starts its
    server (measured after .ci/run: the first page about 4 s later when they ran at once).
    """
    tasks = [task for task in tasks if task is not None]
    if not tasks:
        return None

    def run() -> None:
        if server is not None:
            _wait_for_server(*server)
        for task in tasks:
            try:
                task()
            except Exception:
                log.exception("after the build: %s failed", task.__doc__ or task)

    thread = threading.Thread(target=run, name=_AFTER_BUILD, daemon=True)
    thread.start()
    return thread


def _wait_for_server(host: str, port: int) -> bool:
    """Whether the server at (host, port) accepted a connection within SERVER_WAIT."""
    import socket

    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    end = time.monotonic() + SERVER_WAIT
    while time.monotonic() < end and not os.environ.get(_STOPPING):
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def on_shutdown(**kwargs) -> None:
    # mkdocs serve deletes its site folder next: the thread stops at its next page
    # (_stopping) rather than write into a folder being deleted, or keep the reader waiting.
    if _serving():
        os.environ[_STOPPING] = "1"
        _wait_for_the_last_build()


_STOPPING = "ATTENTION_SERVE_STOPPING"


def _stopping() -> bool:
    """Whether ``serve`` is stopping (never true in a build: it does all its work)."""
    return _serving() and bool(os.environ.get(_STOPPING))


def _wait_for_the_last_build() -> None:
    for thread in threading.enumerate():
        if thread.name == _AFTER_BUILD and thread is not threading.current_thread():
            thread.join()


def _search_plugin(config):
    from material.plugins.search.plugin import SearchPlugin

    found = [p for p in config.plugins.values() if isinstance(p, SearchPlugin)]
    return found[0] if found and found[0].config.enabled else None


def _defer_search_index(config) -> None:
    """Under ``serve``: Material's search plugin records each page as it is rendered
    instead of parsing it; :func:`_search_index_task` parses them, with the plugin's
    own code, after the build. Until then ``search/search_index.json`` holds the last
    build's index (the first build: no pages)."""
    plugin = _search_plugin(config)
    if plugin is None:
        return
    index = plugin.search_index  # made by the plugin's on_config for this build
    pages: list = []
    index.add_entry_from_context = lambda page: pages.append(_page_for_search(page))
    generate = type(index).generate_search_index

    def interim(prev):
        index._attention_pending = (pages, prev)
        entries = prev.entries if prev is not None else []
        return json.dumps(
            {"config": json.loads(generate(index, None))["config"], "docs": entries},
            separators=(",", ":"),
            default=str,
        )

    index.generate_search_index = interim


def _page_for_search(page) -> SimpleNamespace:
    """What the search plugin reads of a page (SearchIndex.add_entry_from_context), as
    it is now: the plugin then strips attributes from ``page.content``."""
    return SimpleNamespace(
        content=page.content, toc=page.toc, url=page.url, meta=page.meta, title=page.title
    )


def _search_index_task(config):
    """The task that writes this build's search index (None: nothing deferred)."""
    plugin = _search_plugin(config)
    pending = getattr(getattr(plugin, "search_index", None), "_attention_pending", None)
    if pending is None:
        return None
    index = plugin.search_index
    del index._attention_pending
    pages, prev = pending
    path = Path(config["site_dir"]) / "search" / "search_index.json"

    def search_index() -> None:
        """the search index"""
        start = time.perf_counter()
        cls = type(index)
        for page in pages:
            if _stopping():
                return
            cls.add_entry_from_context(index, page)
        write_atomically(path, cls.generate_search_index(index, prev).encode("utf-8"))
        log.info(
            "search index of %d pages written in %.1f s, after the build",
            len(pages),
            time.perf_counter() - start,
        )

    return search_index


def write_atomically(path: Path, data: bytes) -> None:
    """``data`` as ``path``, which is never seen half written (a server may read it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def on_serve(server, config, builder, **kwargs):
    # The second build of a code edit (see on_files) is started by touching this file.
    TRIGGER.parent.mkdir(parents=True, exist_ok=True)
    TRIGGER.touch()
    server.watch(str(TRIGGER), recursive=False)
    return server


def on_files(files, config, **kwargs):
    if edition(config) == "zh":
        _share_english_files(files, config)
    files = _plan_rebuilds(files, config)
    _render_the_pages_computed_since(files)
    _run_pages_in_parallel(files, config)
    _serve_the_package(files, config)
    return files


def _share_english_files(files, config) -> None:
    """The Chinese edition serves the English edition's assets and data (stylesheets,
    scripts, KaTeX, docs/data): one copy in the repository, not a translated one."""
    from mkdocs.structure.files import File

    english = ROOT / "docs"
    for path in sorted(english.rglob("*")):
        uri = path.relative_to(english).as_posix()
        if path.is_dir() or path.suffix in i18n.PAGE_SUFFIXES:
            continue
        if files.get_file_from_path(uri) is None:
            files.append(File(uri, str(english), config["site_dir"], config["use_directory_urls"]))


def _serve_the_package(files, config) -> None:
    """The wheel of ``attention_src`` and ``models.txt``, under ``downloads/``, for the
    home page's install lines (site_tools/outputs/wheel.py). A rebuild under ``serve``
    reuses the last wheel built rather than build one for every code edit."""
    from mkdocs.structure.files import File

    wheel = build_wheel(WHEEL_CACHE, reuse_any=bool(os.environ.get("ATTENTION_SERVE_DIRTY")))
    for name, source in ((wheel.name, wheel), ("models.txt", ROOT / "models.txt")):
        uri = f"{DOWNLOADS}/{name}"
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(source)))


def _serving() -> bool:
    """``./dev.sh serve`` (``mkdocs serve --dirty``): pages are served before their
    programs have run; those run in the background (site_tools/engine/parallel.py)."""
    return bool(os.environ.get("ATTENTION_SERVE_DIRTY"))


def _defer(markdown: str, name: str) -> None:
    parallel.in_background(markdown, name, done=lambda _name: TRIGGER.touch())


def _render_the_pages_computed_since(files) -> None:
    """Under ``serve``, the pages whose programs finished in the background since the
    last rebuild are rendered again, now from the store (TRIGGER started this rebuild)."""
    if not _serving():
        return
    for file in files.documentation_pages():
        if file.src_uri in parallel.READY:
            parallel.READY.discard(file.src_uri)
            file.is_modified = lambda: True


def _run_pages_in_parallel(files, config) -> None:
    """Run the programs of the pages this build renders that the store cannot serve
    (site_tools/engine/program.py, site_tools/engine/store.py), each in a fresh interpreter, side
    by side, before MkDocs renders them one by one: then the rendering only reads
    the store. The pages of a rebuild under ``serve`` run as MkDocs reaches them."""
    if _serving():
        return  # serve shows pages at once: their programs run in the background
    stale = []
    for file in files.documentation_pages():
        if not (file.abs_src_path or "").endswith(".md"):
            continue
        if store.needs_run(Path(file.abs_src_path).read_text("utf-8")):
            stale.append((Path(file.abs_src_path), file.src_uri))
    if not stale:
        return
    start = time.perf_counter()
    results = parallel.prefill(stale)
    executed = sum(r["executed"] for r in results)
    for result in results:
        if result["executed"]:
            _EXECUTED[Path(result["page"]).as_posix()] = result["executed"]
    log.info(
        "executed %d blocks of %d pages in parallel in %.1f s",
        executed,
        len(results),
        time.perf_counter() - start,
    )


def _plan_rebuilds(files, config):
    # `./dev.sh serve` runs `mkdocs serve --dirty`, which rebuilds only the pages
    # whose markdown changed. After an edit in attention_src or site_tools, the
    # pages that depend on the edited code (site_tools.engine.deps) are rebuilt in two
    # builds: first those that show the edited code in a listing, then, in a
    # build that on_post_build starts at once, every other page that can reach
    # it. Pages that cannot reach it are not rebuilt.
    global _PENDING_SECOND_BUILD
    _PENDING_SECOND_BUILD = False
    if not os.environ.get("ATTENTION_SERVE_DIRTY"):
        return files  # a full build builds every page
    path = _state_path(config)
    state = json.loads(path.read_text("utf-8")) if path.exists() else {}
    newest = _newest_code_mtime()
    pages = [f for f in files.documentation_pages() if f.abs_src_path]
    code_changed = state.get("code_mtime") != newest
    if not code_changed and all(f.src_uri in state.get("pages", {}) for f in pages):
        return files
    if _serving() and not any(Path(f.abs_dest_path).exists() for f in pages):
        # The first build of a serve (an empty site folder): every page is built, and
        # the fingerprints are needed only by later rebuilds. They are taken after
        # the build (on_post_build), unless the code changes meanwhile.
        _BUILT[:] = [(f.src_uri, None) for f in pages]
        _SOURCES[:] = pages
        _REBUILT.clear()
        _STATE_AT[:] = [str(path), newest, {}]
        return files
    fingerprints = {f.src_uri: deps.page_fingerprints(Path(f.abs_src_path)) for f in pages}
    first, second = [], []
    for file in pages:
        if not Path(file.abs_dest_path).exists():
            continue  # built anyway
        old = state.get("pages", {}).get(file.src_uri)
        new = fingerprints[file.src_uri]
        if old is None or old["listings"] != new["listings"]:
            first.append(file)
        elif old["code"] != new["code"]:
            second.append(file)
    if not first:
        first, second = second, []
    for file in first:
        file.is_modified = lambda: True
    _REBUILT[:] = sorted(f.src_uri for f in first)
    _BUILT[:] = [(f.src_uri, fingerprints[f.src_uri]) for f in pages if f not in second]
    _PENDING_SECOND_BUILD = bool(second)
    _STATE_AT[:] = [
        str(path),
        newest,
        {f.src_uri: state.get("pages", {}).get(f.src_uri) for f in second},
    ]
    return files


def on_nav(nav, config, files, **kwargs):
    _NUMBERS.clear()
    _NUMBERS.update(numbering.nav_numbers(nav))
    return nav


def on_post_build(config, **kwargs):
    log.info(
        "store of executed outputs: executed %d blocks in this build: %s",
        sum(_EXECUTED.values()),
        json.dumps(_EXECUTED, sort_keys=True),
    )
    if _prunes(config):
        # A full build of the site: the store keeps only what it used.
        removed = store.prune(_prune_since())
        if removed:
            log.info("store of executed outputs: %d unused entries removed", removed)
    _write_figure_files(config["site_dir"])  # before anything reads the pages back
    # References to figures of other pages, now that every page's figures are numbered.
    numbering.resolve_site(config["site_dir"], _NUMBERS)
    if _serving():
        # After Material's on_post_build wrote its interim index; see _after_the_build.
        chapters = _write_chapter_notebooks_task(config)
        _after_the_build(
            [_search_index_task(config), chapters, _deferred_state_task()],
            server=(config["dev_addr"].host, config["dev_addr"].port),
        )
    else:
        _write_chapter_notebooks(config)
    if _prunes(config):
        notebooks.prune_notebooks(CHAPTER_NOTEBOOKS, _prune_since())
    if not _STATE_AT or any(fingerprints is None for _, fingerprints in _BUILT):
        return
    _write_state()


def _deferred_state_task():
    """The task that takes the first build's fingerprints (None: none deferred)."""
    if not _STATE_AT or not any(fingerprints is None for _, fingerprints in _BUILT):
        return None
    built, state_at = list(_BUILT), list(_STATE_AT)
    sources = {f.src_uri: f.abs_src_path for f in _SOURCES}

    def fingerprints() -> None:
        """the pages' fingerprints"""
        newest = state_at[1]
        taken = []
        for uri, _ in built:
            if _stopping():
                return
            taken.append((uri, deps.page_fingerprints(Path(sources[uri]))))
        _BUILT[:] = taken
        if _newest_code_mtime() != newest:
            # Code edited since the build read it: no fingerprint is trusted, and the
            # next build rebuilds every page (old fingerprint None: see _plan_rebuilds).
            _BUILT.clear()
        _STATE_AT[:] = state_at
        _write_state()

    return fingerprints


def _write_state() -> None:
    path, newest, pending = _STATE_AT
    pages = dict(_BUILT)
    pages.update({k: v for k, v in pending.items() if v is not None})
    # A page left for the second build keeps its old fingerprint, so that the
    # second build sees it as changed and rebuilds it.
    previous = json.loads(Path(path).read_text("utf-8")) if Path(path).exists() else {}
    builds = [*previous.get("builds", [])[-1:], _REBUILT]
    state = {
        "code_mtime": newest if not _PENDING_SECOND_BUILD else -1.0,
        "pages": pages,
        "builds": builds,  # the pages the last two builds rebuilt for code edits
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(state), encoding="utf-8")
    _STATE_AT.clear()
    if _PENDING_SECOND_BUILD:
        TRIGGER.touch()  # mkdocs serve watches it: the second build starts now


def _write_chapter_notebooks_task(config):
    """The task that writes the chapters' notebooks of this build (after it, under serve)."""

    def chapter_notebooks() -> None:
        """the chapters' notebooks"""
        _write_chapter_notebooks(config)

    return chapter_notebooks


def _write_chapter_notebooks(config) -> None:
    """Each chapter as a notebook next to its page (site_tools/outputs/notebooks.py), made
    from the finished page: its figure references are numbered by now."""
    start = time.perf_counter()
    written = 0
    for url in _NUMBERS:
        if _stopping():
            return  # serve is stopping (on_shutdown)
        page = Path(config["site_dir"]) / url / "index.html"
        if url.startswith("chapters/") and page.exists():
            if store.PENDING in page.read_text("utf-8"):
                continue  # serve: outputs still being computed, no notebook yet
            notebooks.write_notebook(  # a notebook is one file: its figures inside
                inline_figure_files(page.read_text("utf-8"), config["site_dir"]),
                page_url=url,
                site_dir=config["site_dir"],
                cache=CHAPTER_NOTEBOOKS,
            )
            written += 1
    log.info("%d chapter notebooks in %.1f s", written, time.perf_counter() - start)


def on_page_context(context, page, config, nav, **kwargs):
    # The download button of overrides/main.html, for a chapter's notebook.
    if page.url.startswith("chapters/"):
        page.meta["notebook"] = notebooks.notebook_name(page.url)
    return context


def on_page_markdown(markdown, page, config, files, **kwargs):
    _AT_PAGE_START[0] = len(store.STATS.executed)
    _PROGRAMS.pop(page.file.src_uri, None)
    if page.file.src_uri.endswith(".md"):
        # The page's program: its copy texts and figures, run once in a fresh interpreter
        # (or served by the store); the Python fence shows what that run printed.
        defer = _defer if _serving() else None
        _PROGRAMS[page.file.src_uri] = store.open_page(markdown, page.file.src_uri, defer=defer)
    if edition(config) == "zh" and page.file.src_uri.endswith(".md"):
        # A translation older than its English page, or a placeholder, says so.
        return i18n.banner(page.file.src_uri, page.url) + markdown
    return markdown


def on_page_content(html, page, config, files, **kwargs):
    store.end_page()  # record what the page's blocks used (site_tools/engine/store.py)
    program_page = _PROGRAMS.get(page.file.src_uri)
    if program_page is not None:
        for index, why in sorted(program_page.errors.items()):
            block = program_page.blocks[index]
            if block.executed_by_fence:
                continue  # the fence reports it, in the page and in the log
            log.warning(
                "%s: block %d (%s) of the page's program, as a reader copies it, fails:\n%s",
                page.file.src_uri,
                block.index,
                block.kind,
                why,
            )
    executed = len(store.STATS.executed) - _AT_PAGE_START[0]
    if executed:
        _EXECUTED[page.file.src_uri] = executed
    # Figures printed by code blocks are raw HTML that MkDocs' link check does not
    # see: make their ids valid anchors, for links like [figure #](#fig-…).
    if getattr(page, "present_anchor_ids", None) is not None:
        page.present_anchor_ids |= numbering.figure_ids(html)
    # Figures numbered, numbered references filled in (site_tools/engine/numbering.py).
    html = numbering.number_page(html, page.url, _NUMBERS, edition(config))
    numbering.retitle_toc(html, page.toc)
    # Listings included from attention_src copy with the imports they need; in the Chinese
    # edition they show and copy Chinese comments (i18n/comments.zh.yml).
    html = copytext.add_listing_copies(html, edition(config))
    if edition(config) == "zh":
        html = i18n.chinese_listings(html)
    if page.file.src_uri.endswith(".ipynb"):
        html = notebook_copy_buttons(html, edition(config))
    # Pictures as files (before the search plugin reads the page: no data URIs to parse).
    return figure_files(html, page.url)


def on_post_page(output, page, config, **kwargs):
    # The copy texts of the page, as its copy buttons give them, with what the build's
    # run of them did, for the doc tests and for runs where no site can be built
    # (site_tools.engine.copyrun: the CUDA run). A notebook's cells are read from its HTML.
    if store.PENDING in output and not _serving():
        log.warning("%s: an output is still pending (%r): never built", page.url, store.PENDING)
    opened = _PROGRAMS.pop(page.file.src_uri, None)
    if opened is not None and opened.pending:
        pass  # outputs still being computed (serve): no copy texts until they ran
    elif opened is not None:
        written = program.write_copies(config["site_dir"], page.url, opened)
        if written is not None and edition(config) == "zh":
            i18n.chinese_copies(written)  # the listings' comments, as the page shows them
    else:
        copytext.write_page_copies(config["site_dir"], page.url, output)
    # mkdocs-jupyter loads MathJax from its option's URL, which is empty here (KaTeX
    # typesets the labs): a <script src=""> that would fetch the page itself again.
    return _EMPTY_SCRIPT.sub("", output)


def _picture_size(kind: str, data: bytes) -> tuple[int, int] | None:
    """A picture's width and height in CSS pixels, as a browser shows it (None when its
    bytes do not say)."""
    if kind == "png" and data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    if kind == "gif" and data[:6] in (b"GIF87a", b"GIF89a"):
        return struct.unpack("<HH", data[6:10])
    if kind != "svg+xml":
        return None
    root = re.search(rb"<svg\b[^>]*>", data)
    if root is None:
        return None
    sizes = []
    for name in (b"width", b"height"):
        value = re.search(rb"\s" + name + rb'="\s*([\d.]+)\s*([a-z]*)\s*"', root[0])
        if value is None or value[2].decode() not in _CSS_PX:
            break  # a percentage, or none: the viewBox's
        sizes.append(float(value[1]) * _CSS_PX[value[2].decode()])
    if len(sizes) < 2:
        box = _SVG_BOX.search(root[0])
        if box is None:
            return None
        sizes = [float(box[1]), float(box[2])]
    width, height = (max(1, round(size)) for size in sizes)
    return width, height


def figure_files(html: str, page_url: str) -> str:
    """The page with each data-URI picture (``<img src="data:image/svg+xml;base64,…">``,
    PNG or GIF) turned into a reference to ``assets/figures/<sha256[:16]>.<suffix>`` of
    its edition, relative to the page, loaded lazily, with its width and height; the
    files are written by :func:`_write_figure_files`. A picture whose size its bytes do
    not give stays inline."""
    prefix = "../" * page_url.count("/")

    def swap(tag: re.Match) -> str:
        source = _DATA_SRC.search(tag[0])
        if source is None:
            return tag[0]
        data = base64.b64decode(re.sub(r"\s", "", source["data"]), validate=True)
        size = _picture_size(source["kind"], data)
        if size is None:
            return tag[0]
        name = f"{FIGURE_DIR}/{hashlib.sha256(data).hexdigest()[:16]}.{_SUFFIX[source['kind']]}"
        known = _FIGURE_FILES.setdefault(name, data)
        if known != data:  # two pictures under one name: 64 bits of sha256 collided
            raise ValueError(f"{page_url}: two different pictures are both named {name}")
        attributes = f' src="{prefix}{name}"'
        if not re.search(r"\s(width|height)=", tag[0]):
            attributes += f' width="{size[0]}" height="{size[1]}"'
        if not re.search(r"\sloading=", tag[0]):
            attributes += ' loading="lazy" decoding="async"'
        return tag[0][: source.start()] + attributes + tag[0][source.end() :]

    return _IMG_TAG.sub(swap, html)


def _write_figure_files(site_dir) -> None:
    """This build's pictures under the edition's ``assets/figures/``; a file already
    there with the same name has the same bytes (the name is their hash)."""
    written = 0
    for name, data in sorted(_FIGURE_FILES.items()):
        path = Path(site_dir) / name
        if path.exists() and path.stat().st_size == len(data):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        written += 1
    if _FIGURE_FILES:
        log.info("%d pictures as files (%d written)", len(_FIGURE_FILES), written)


def inline_figure_files(html: str, site_dir) -> str:
    """The page with its picture files (:func:`figure_files`) back as data URIs, read
    from the edition's ``assets/figures/``: for a copy of the page that stands alone,
    such as its notebook."""

    def inline(source: re.Match) -> str:
        name = source["name"]
        data = _FIGURE_FILES.get(f"{FIGURE_DIR}/{name}")
        if data is None:
            data = (Path(site_dir) / FIGURE_DIR / name).read_bytes()
        mime = _MIME[name.rsplit(".", 1)[1]]
        return f' src="data:{mime};base64,{base64.b64encode(data).decode("ascii")}"'

    return _FILE_SRC.sub(inline, html)


def notebook_copy_buttons(html: str, language: str) -> str:
    """A lab's copy buttons named by their words in the page's language (``_CLIPBOARD``);
    mkdocs-jupyter's stray ``,`` attribute gone."""
    name, notice = CLIPBOARD_WORDS[language]

    def fix(match: re.Match) -> str:
        opening = re.sub(r'\s,=""|(?<=")\s*,', "", match[1])  # as parsed, or as written
        return (
            f'{opening}{match[2]}<span class="notice" hidden>{notice}</span>'
            f'<span class="a11y-visually-hidden">{name}</span>'
        )

    html = _CLIPBOARD.sub(fix, html)
    if 'aria-label="Copy to Clipboard"' in html:  # another mkdocs-jupyter's markup
        log.warning("a lab's copy button kept its English name: see hooks._CLIPBOARD")
    return html
