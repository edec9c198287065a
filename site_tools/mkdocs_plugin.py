"""The MkDocs adapter: one plugin object (``attention`` under ``plugins:``) that wires
MkDocs' events to the package. It holds the state of the builds of one process on the
instance, which MkDocs keeps across the rebuilds of ``mkdocs serve`` (a plugin with an
``on_startup`` event is kept), and no logic of its own beyond calling the package:

- before the pages render: site_tools.prebuild (every page's program, in fresh
  interpreters, side by side), site_tools.engine.rebuilds (serve's rebuilds);
- per page: site_tools.engine.store (the outputs), .numbering, .copytext, .figure_files,
  site_tools.edition (the Chinese edition), site_tools.outputs.labs;
- after the build: site_tools.after_build; under serve, site_tools.serve_later.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

from mkdocs.plugins import BasePlugin
from mkdocs.structure.files import File

from site_tools import after_build, edition, prebuild, serve_later
from site_tools.engine import copytext, numbering, parallel, program, rebuilds, store
from site_tools.engine.figure_files import FigureFiles
from site_tools.outputs import labs, live_models, notebooks

log = logging.getLogger("mkdocs.plugins.attention")
ROOT = Path(__file__).resolve().parents[1]


def language(config) -> str:
    """``en`` or ``zh``: which edition this configuration builds (mkdocs.zh.yml: zh)."""
    return "zh" if str(config["theme"]["language"]).startswith("zh") else "en"


class AttentionPlugin(BasePlugin):
    def __init__(self) -> None:
        super().__init__()
        self.serving = False  # ./dev.sh serve: mkdocs serve --dirty
        self.later = serve_later.Later()
        self.rebuilds = rebuilds.Rebuilds()
        self.figures = FigureFiles()
        self.search: serve_later.DeferredSearch | None = None
        self.numbers: dict = {}  # page url -> (chapter number, title), from the nav
        self.started = 0.0  # when this build started, for pruning the store
        self.executed: dict = {}  # page -> blocks executed for it (the log reports them)
        self.at_page_start = 0
        self.shared_live = False  # the Chinese edition uses the English MiniLM export
        # The pages' programs, as the store opened them: MkDocs renders every page's
        # Markdown first (on_page_markdown, on_page_content), then writes every page.
        self.programs: dict = {}

    # --- the process -----------------------------------------------------------------

    def on_startup(self, *, command, dirty) -> None:
        self.serving = command == "serve" and dirty
        # The build keeps its results in the checkout however mkdocs is started (./dev.sh,
        # the tests, the Pages workflow, a bare `mkdocs build`), never in the user's cache
        # folder, where the reader's 50 MB rule would recompute SmolLM2's weights each time.
        os.environ.setdefault("ATTENTION_CACHE_DIR", str(ROOT / ".cache" / "attention_src"))

    def on_shutdown(self) -> None:
        # mkdocs serve deletes its site folder next: the thread stops at its next page
        # rather than write into a folder being deleted, or keep the reader waiting.
        self.later.stop()

    def on_serve(self, server, *, config, builder):
        # The second build of a code edit (site_tools.engine.rebuilds) starts by touching this.
        rebuilds.TRIGGER.parent.mkdir(parents=True, exist_ok=True)
        rebuilds.TRIGGER.touch()
        server.watch(str(rebuilds.TRIGGER), recursive=False)
        return server

    # --- one build -------------------------------------------------------------------

    def on_config(self, config):
        if self.serving:
            if self.rebuilds.needs_deferred_fingerprints():
                self.later.wait()  # code edited: the plan needs the first build's fingerprints
            else:
                self.later.pause()  # the last build's work waits for this one
            self.search = serve_later.DeferredSearch(config)
        return config

    def on_pre_build(self, *, config) -> None:
        self.started = time.time()
        self.executed.clear()
        self.figures.clear()
        store.forget_code()
        # Under `mkdocs serve` the process lives on between rebuilds: drop the book's
        # modules, so that the next build imports the edited source.
        for name in list(sys.modules):
            if name.split(".")[0] == "attention_src" or name == "site_tools.outputs.figures":
                del sys.modules[name]
        jupyter = config.plugins.get("mkdocs-jupyter")
        labs.key_cache_on_code(jupyter, language(config), keep_cached=self.serving)
        live_models.minilm_export()  # before the pages: on_post_page writes its size
        self.shared_live = (
            language(config) == "zh"
            and not self.serving
            and live_models.english_copy(config["site_dir"]) is not None
        )

    def on_files(self, files, *, config):
        if language(config) == "zh":
            _share_english_files(files, config)
        files = self.rebuilds.plan(files, config["site_dir"], self.serving)
        if self.serving:
            # Pages whose programs finished in the background since the last rebuild are
            # rendered again, now from the store (the trigger started this rebuild).
            for file in files.documentation_pages():
                if file.src_uri in parallel.READY:
                    parallel.READY.discard(file.src_uri)
                    file.is_modified = lambda: True
        else:  # serve shows pages at once: their programs run in the background
            pages = [
                (Path(f.abs_src_path), f.src_uri)
                for f in files.documentation_pages()
                if (f.abs_src_path or "").endswith(".md")
            ]
            self.executed.update(prebuild.run_stale_pages(pages))
        for uri, source in after_build.downloads(reuse_any=self.serving):
            if files.get_file_from_path(uri) is None:
                files.append(File.generated(config, uri, abs_src_path=str(source)))
        return files

    def on_nav(self, nav, *, config, files):
        self.numbers = numbering.nav_numbers(nav)
        return nav

    def on_page_markdown(self, markdown, *, page, config, files):
        self.at_page_start = len(store.STATS.executed)
        self.programs.pop(page.file.src_uri, None)
        if not page.file.src_uri.endswith(".md"):
            return markdown
        # The page's program: its copy texts and figures, run once in a fresh interpreter
        # (or served by the store); the Python fence shows what that run printed.
        defer = self._defer if self.serving else None
        opened = store.open_page(markdown, page.file.src_uri, defer=defer)
        self.programs[page.file.src_uri] = opened
        if language(config) == "zh":
            # A translation older than its English page, or a placeholder, says so.
            return edition.banner(page.file.src_uri, page.url) + markdown
        return markdown

    def _defer(self, markdown: str, name: str) -> None:
        parallel.in_background(markdown, name, done=lambda _name: rebuilds.TRIGGER.touch())

    def on_page_content(self, html, *, page, config, files):
        store.end_page()  # record what the page's blocks used
        _report_failures(page, self.programs.get(page.file.src_uri))
        executed = len(store.STATS.executed) - self.at_page_start
        if executed:
            self.executed[page.file.src_uri] = executed
        # Figures printed by code blocks are raw HTML that MkDocs' link check does not
        # see: make their ids valid anchors, for links like [figure #](#fig-…).
        if getattr(page, "present_anchor_ids", None) is not None:
            page.present_anchor_ids |= numbering.figure_ids(html)
        lang = language(config)
        html = numbering.number_page(html, page.url, self.numbers, lang)
        numbering.retitle_toc(html, page.toc)
        # Listings included from attention_src copy with the imports they need; in the
        # Chinese edition they show and copy Chinese comments (i18n/comments.zh.yml).
        html = copytext.add_listing_copies(html, lang)
        if lang == "zh":
            html = edition.chinese_listings(html)
        if page.file.src_uri.endswith(".ipynb"):
            html = labs.copy_buttons(html, lang)
        # Pictures as files (before the search plugin reads the page: no data URIs).
        return self.figures.swap(html, page.url)

    def on_page_context(self, context, *, page, config, nav):
        if page.url.startswith("chapters/"):  # the download button of overrides/main.html
            page.meta["notebook"] = notebooks.notebook_name(page.url)
        return context

    def on_post_page(self, output, *, page, config):
        # The copy texts of the page, as its copy buttons give them, with what the build's
        # run of them did, for the doc tests and for runs where no site can be built
        # (site_tools.engine.copyrun: the CUDA run). A notebook's cells come from its HTML.
        if store.PENDING in output and not self.serving:
            log.warning("%s: an output is still pending (%r): never built", page.url, store.PENDING)
        opened = self.programs.pop(page.file.src_uri, None)
        if opened is None:
            copytext.write_page_copies(config["site_dir"], page.url, output)
        elif not opened.pending:  # (pending: outputs still being computed under serve)
            written = program.write_copies(config["site_dir"], page.url, opened)
            if written is not None and language(config) == "zh":
                edition.chinese_copies(written)  # the listings' comments, as the page shows
        return live_models.fill_sizes(labs.without_empty_scripts(output), self.shared_live)

    def on_post_build(self, *, config) -> None:
        log.info(
            "store of executed outputs: executed %d blocks in this build: %s",
            sum(self.executed.values()),
            json.dumps(self.executed, sort_keys=True),
        )
        site_dir = config["site_dir"]
        after_build.finish_pages(site_dir, self.numbers, self.figures)
        after_build.live_models(site_dir, shared=self.shared_live)
        if self.serving:
            # After Material's on_post_build wrote its interim index.
            numbers, figures, checkpoint = dict(self.numbers), self.figures, self.later.checkpoint

            def chapter_notebooks() -> None:
                """the chapters' notebooks"""
                after_build.chapter_notebooks(site_dir, numbers, figures, checkpoint)

            self.later.start(
                [  # the fingerprints first: a code edit's rebuild needs them
                    self.rebuilds.deferred_task(checkpoint),
                    self.search.task(checkpoint) if self.search else None,
                    chapter_notebooks,
                ],
                server=(config["dev_addr"].host, config["dev_addr"].port),
            )
        else:
            after_build.chapter_notebooks(site_dir, self.numbers, self.figures)
        if self.prunes(config):
            after_build.prune(self.prune_since())
        self.rebuilds.after_build()

    def prunes(self, config) -> bool:
        """Whether this build deletes the store's and the notebooks' unused entries: the
        last build of a run that builds both editions. ``./dev.sh build`` builds English
        then Chinese with ``ATTENTION_BUILD_STARTED`` set (the one environment variable
        between two builds: two processes), and the Chinese build prunes what neither
        used. A build of one edition alone prunes nothing: the store and the notebooks'
        cache serve both editions."""
        if not self.started or self.serving:
            return False
        return bool(os.environ.get("ATTENTION_BUILD_STARTED")) and language(config) == "zh"

    def prune_since(self) -> float:
        return float(os.environ.get("ATTENTION_BUILD_STARTED") or self.started)


def _share_english_files(files, config) -> None:
    """The Chinese edition serves the English edition's assets and data (stylesheets,
    scripts, KaTeX, docs/data): one copy in the repository, not a translated one."""
    english = ROOT / "docs"
    for path in sorted(english.rglob("*")):
        uri = path.relative_to(english).as_posix()
        if path.is_dir() or path.suffix in edition.PAGE_SUFFIXES:
            continue
        if files.get_file_from_path(uri) is None:
            files.append(File(uri, str(english), config["site_dir"], config["use_directory_urls"]))


def _report_failures(page, opened) -> None:
    """A block of the page's program that fails as a reader copies it (the fence reports
    those it shows)."""
    if opened is None:
        return
    for index, why in sorted(opened.errors.items()):
        block = opened.blocks[index]
        if not block.executed_by_fence:
            log.warning(
                "%s: block %d (%s) of the page's program, as a reader copies it, fails:\n%s",
                page.file.src_uri,
                block.index,
                block.kind,
                why,
            )
