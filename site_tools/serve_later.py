"""Under ``./dev.sh serve`` (only there): the work no page needs to be shown, after the build.

Material's search index (the plugin parses every page's HTML: several seconds), the
chapters' notebooks (made from the finished pages) and, in the first build, the pages'
code fingerprints for later rebuilds (site_tools.engine.rebuilds) are done in one thread
once the build has returned and the server answers. A rebuild waits for that thread
first. ``./dev.sh build`` and CI do all of it in the build.

Material's search plugin has no public way to defer its index: :class:`DeferredSearch`
sets two attributes of the plugin's ``SearchIndex`` object for this build (which entries
it records, what its ``generate_search_index`` writes now) and later calls the class's
own methods on the recorded pages, so the index written is the plugin's own, byte for
byte (tests/site_tools/test_serve_after_build.py builds a site both ways and compares them).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

log = logging.getLogger("mkdocs.plugins.attention")
SERVER_WAIT = 30.0  # seconds the thread waits for the server before it works anyway


def write_atomically(path: Path, data: bytes) -> None:
    """``data`` as ``path``, which is never seen half written (a server may read it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class Later:
    """The work left for after the builds, in one thread that runs it in order.

    A rebuild does not wait for it: :meth:`pause` (the next build's ``on_config``) holds
    the thread at its next :meth:`checkpoint` (tasks call it between pages) until that
    build has queued its own work (:meth:`start`), so an edit is served within the time
    of its rebuild; the work then goes on where it stopped, the new build's after it.
    """

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()
        self.running = threading.Event()  # cleared: paused at the next checkpoint
        self.running.set()
        self.tasks: list = []
        self.lock = threading.Lock()
        self.working = False  # a thread is taking tasks (under the lock)
        self.waited_for_server = False

    def start(self, tasks, server: tuple[str, int] | None = None) -> threading.Thread | None:
        """Queue ``tasks`` (callables) after the work already queued, and resume.

        With ``server`` (host, port), the thread first waits until the server accepts a
        connection (at most :data:`SERVER_WAIT` seconds, once): the tasks are Python work
        that would hold the interpreter's lock while ``mkdocs serve`` finishes the build
        and starts its server (measured after .ci/run: the first page about 4 s later
        when they ran at once)."""
        tasks = [task for task in tasks if task is not None]
        with self.lock:
            self.tasks += tasks
            working = self.working
            if not working and self.tasks:
                self.working = True
                self.thread = threading.Thread(
                    target=self._run, args=(server,), name="site-after-build", daemon=True
                )
                self.thread.start()
        self.running.set()
        return self.thread if tasks or working else None

    def _run(self, server) -> None:
        if server is not None and not self.waited_for_server:
            self.waited_for_server = True
            self.wait_for_server(*server)
        while True:
            self.checkpoint()
            with self.lock:  # (each task returns at its first checkpoint once stopping)
                if not self.tasks:
                    self.working = False
                    return
                task = self.tasks.pop(0)
            try:
                task()
            except Exception:
                log.exception("after the build: %s failed", task.__doc__ or task)

    def checkpoint(self) -> bool:
        """Where a task may be held (a build is running): wait until it is resumed;
        then whether serve is stopping (the task returns)."""
        while not self.running.wait(0.1):
            if self.stopping.is_set():
                break
        return self.stopping.is_set()

    def pause(self) -> None:
        """A build starts: hold the thread at its next checkpoint."""
        self.running.clear()

    def wait(self) -> None:
        """Until all the queued work is done (resumed first)."""
        self.running.set()
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def stop(self) -> None:
        """serve is stopping: the thread stops at its next checkpoint."""
        self.stopping.set()
        self.wait()

    def wait_for_server(self, host: str, port: int) -> bool:
        """Whether the server at (host, port) accepted a connection within SERVER_WAIT."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
        end = time.monotonic() + SERVER_WAIT
        while time.monotonic() < end and not self.stopping.is_set():
            try:
                with socket.create_connection((host, port), timeout=0.5):
                    return True
            except OSError:
                time.sleep(0.05)
        return False


def search_plugin(config):
    from material.plugins.search.plugin import SearchPlugin

    found = [p for p in config.plugins.values() if isinstance(p, SearchPlugin)]
    return found[0] if found and found[0].config.enabled else None


class DeferredSearch:
    """Material's search index of one build, written after it (see the module's text)."""

    def __init__(self, config) -> None:
        """Under ``serve``: the search plugin records each page as it is rendered instead
        of parsing it; until :meth:`task` has run, ``search/search_index.json`` holds
        the last build's index (the first build: no pages)."""
        self.plugin = search_plugin(config)
        self.pending: tuple | None = None
        self.path = Path(config["site_dir"]) / "search" / "search_index.json"
        if self.plugin is None:
            return
        index = self.plugin.search_index  # made by the plugin's on_config for this build
        pages: list = []
        index.add_entry_from_context = lambda page: pages.append(_page_for_search(page))
        generate = type(index).generate_search_index

        def interim(prev):
            self.pending = (pages, prev)
            entries = prev.entries if prev is not None else []
            return json.dumps(
                {"config": json.loads(generate(index, None))["config"], "docs": entries},
                separators=(",", ":"),
                default=str,
            )

        index.generate_search_index = interim

    def task(self, checkpoint: Callable[[], bool]):
        """The task that writes this build's search index (None: nothing deferred)."""
        if self.pending is None:
            return None
        index = self.plugin.search_index
        pages, prev = self.pending
        self.pending = None

        def search_index() -> None:
            """the search index"""
            start = time.perf_counter()
            cls = type(index)
            for page in pages:
                if checkpoint():
                    return
                cls.add_entry_from_context(index, page)
            write_atomically(self.path, cls.generate_search_index(index, prev).encode("utf-8"))
            log.info(
                "search index of %d pages written in %.1f s, after the build",
                len(pages),
                time.perf_counter() - start,
            )

        return search_index


def _page_for_search(page) -> SimpleNamespace:
    """What the search plugin reads of a page (SearchIndex.add_entry_from_context), as it
    is now: the plugin then strips attributes from ``page.content``."""
    return SimpleNamespace(
        content=page.content, toc=page.toc, url=page.url, meta=page.meta, title=page.title
    )
