"""Which pages a rebuild under ``./dev.sh serve`` renders after a code edit.

``./dev.sh serve`` runs ``mkdocs serve --dirty``, which rebuilds only the pages whose
Markdown changed. After an edit in ``attention_src`` or ``site_tools``, the pages that
depend on the edited code (:mod:`site_tools.engine.deps`) are rebuilt in two builds:
first those that show the edited code in a listing, then, in a build started at once by
touching :data:`TRIGGER` (which serve watches), every other page that can reach it.
Pages that cannot reach it are not rebuilt. The pages' fingerprints are kept in a state
file per site folder (``.cache/site-deps/``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path

from site_tools.engine import deps

ROOT = Path(__file__).resolve().parents[2]
CODE_DIRS = (ROOT / "attention_src", ROOT / "site_tools")
TRIGGER = ROOT / ".cache" / "site-deps" / "second-build"


def newest_code_mtime() -> float:
    return max((p.stat().st_mtime for d in CODE_DIRS for p in d.rglob("*.py")), default=0.0)


def state_path(site_dir) -> Path:
    site = hashlib.sha256(str(Path(site_dir).resolve()).encode()).hexdigest()[:12]
    return ROOT / ".cache" / "site-deps" / f"{site}.json"


class Rebuilds:
    """The plan of one serve process's rebuilds (it lives as long as the plugin)."""

    def __init__(self) -> None:
        self.built: list = []  # (page, fingerprints) of the pages this build builds
        self.state_at: list = []  # [state file, code mtime, fingerprints of deferred pages]
        self.sources: list = []  # a first serve build's pages, fingerprinted after it
        self.pending_second = False
        self.rebuilt: list = []  # pages this build rebuilds because code they reach changed
        self.lock = threading.Lock()  # the deferred task writes the state from a thread
        self.queued = False  # the deferred task of the pending fingerprints is queued

    def plan(self, files, site_dir, serving: bool):
        """Mark the pages this ``--dirty`` build must render again; return ``files``."""
        self.pending_second = False
        if not serving:
            return files  # a full build builds every page
        with self.lock:
            if self.state_at and self.has_unknown() and self.state_at[1] == newest_code_mtime():
                # The first build's fingerprints are still to be taken (after it, in a
                # thread), and no code changed since: a page edit rebuilds that page alone.
                return files
        path = state_path(site_dir)
        state = json.loads(path.read_text("utf-8")) if path.exists() else {}
        newest = newest_code_mtime()
        pages = [f for f in files.documentation_pages() if f.abs_src_path]
        code_changed = state.get("code_mtime") != newest
        if not code_changed and all(f.src_uri in state.get("pages", {}) for f in pages):
            return files
        if not any(Path(f.abs_dest_path).exists() for f in pages):
            # The first build of a serve (an empty site folder): every page is built; the
            # fingerprints are needed only by later rebuilds and are taken after the build
            # (deferred_task), unless the code changes meanwhile.
            self.built = [(f.src_uri, None) for f in pages]
            self.queued = False
            self.sources = pages
            self.rebuilt = []
            self.state_at = [str(path), newest, {}]
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
        self.rebuilt = sorted(f.src_uri for f in first)
        self.built = [(f.src_uri, fingerprints[f.src_uri]) for f in pages if f not in second]
        self.pending_second = bool(second)
        self.state_at = [
            str(path),
            newest,
            {f.src_uri: state.get("pages", {}).get(f.src_uri) for f in second},
        ]
        return files

    def needs_deferred_fingerprints(self) -> bool:
        """Whether the first build's fingerprints are still to be taken and code changed
        since: the next plan needs them."""
        with self.lock:
            pending = bool(self.state_at) and self.has_unknown()
            return pending and self.state_at[1] != newest_code_mtime()

    def has_unknown(self) -> bool:
        """Whether fingerprints were left for after the build (a first serve build)."""
        return any(fingerprints is None for _, fingerprints in self.built)

    def after_build(self) -> None:
        """Write the state now, unless there is none or its fingerprints come later."""
        if self.state_at and not self.has_unknown():
            self.write_state()

    def deferred_task(self, checkpoint: Callable[[], bool]):
        """The task that takes the first build's fingerprints (None: none deferred)."""
        if not self.state_at or not self.has_unknown() or self.queued:
            return None
        self.queued = True
        built, state_at = list(self.built), list(self.state_at)
        sources = {f.src_uri: f.abs_src_path for f in self.sources}

        def fingerprints() -> None:
            """the pages' fingerprints"""
            taken = []
            for uri, _ in built:
                if checkpoint():
                    return
                taken.append((uri, deps.page_fingerprints(Path(sources[uri]))))
            with self.lock:
                self.built = taken
                if newest_code_mtime() != state_at[1]:
                    # Code edited since the build read it: no fingerprint is trusted, and
                    # the next build rebuilds every page (old fingerprint None: see plan).
                    self.built = []
                self.state_at = state_at
                self.write_state()

        return fingerprints

    def write_state(self) -> None:
        path, newest, pending = self.state_at
        pages = dict(self.built)
        # A page left for the second build keeps its old fingerprint, so that the second
        # build sees it as changed and rebuilds it.
        pages.update({k: v for k, v in pending.items() if v is not None})
        previous = json.loads(Path(path).read_text("utf-8")) if Path(path).exists() else {}
        state = {
            "code_mtime": newest if not self.pending_second else -1.0,
            "pages": pages,
            # the pages the last two builds rebuilt for code edits
            "builds": [*previous.get("builds", [])[-1:], self.rebuilt],
        }
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(state), encoding="utf-8")
        self.state_at = []
        if self.pending_second:
            TRIGGER.touch()  # mkdocs serve watches it: the second build starts now
