"""``./dev.sh serve``'s work after the build (site_tools/serve_later.py, run by the MkDocs
plugin, site_tools/mkdocs_plugin.py): Material's search index, the chapters' notebooks and
the first build's page fingerprints (site_tools/engine/rebuilds.py) are made in a thread
once the build has returned, and what they write is what the build would have written.

The search index is compared on a small site built by MkDocs with Material's search plugin,
in a fresh interpreter per way of building (the plugin keeps its index between the builds of
one process, as under ``serve``): once as the plugin indexes, once deferred as under
``serve``, each a first build then a ``--dirty`` rebuild of an edited page.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from site_tools import serve_later
from site_tools.engine import deps, rebuilds
from site_tools.engine.rebuilds import Rebuilds
from site_tools.mkdocs_plugin import AttentionPlugin
from site_tools.outputs import labs

ROOT = Path(__file__).resolve().parents[2]

PAGES = {
    "index.md": "# Home\n\nAttention, from the ground up.\n\n## Softmax\n\nWeights sum to one.\n",
    "masks.md": (
        "# Masks\n\nA mask hides the future.\n\n## Causal\n\n"
        '!!! note "Shapes"\n    `(batch, heads, n, n)`\n\n'
        "```python\nprint(1 + 1)\n```\n\n## 中文\n\n注意力机制的掩码遮住未来的位置。\n"
    ),
}

# Builds the site twice in one interpreter (a first build, then a --dirty rebuild after an
# edit), as `mkdocs serve --dirty` does; prints the index after each, and (deferred) the
# interim index Material's on_post_build wrote before the deferred one replaced it.
BUILD = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    folder, deferred = Path(sys.argv[1]), sys.argv[2] == "deferred"
    index = folder / "site" / "search" / "search_index.json"
    out = []
    for step in ("first", "rebuild"):
        if step == "rebuild":
            time.sleep(0.05)
            page = folder / "docs" / "masks.md"
            page.write_text(page.read_text() + "\\n## Padding\\n\\nPadding is masked too.\\n")
        config = load_config(str(folder / ("deferred.yml" if deferred else "plain.yml")))
        config.plugins.on_startup(command="serve", dirty=True)
        build(config, dirty=True)
        interim = (folder / "interim.json").read_text() if deferred else None
        out.append({"step": step, "interim": interim, "index": index.read_text()})
    print(json.dumps(out))
    """
)

# The small site's hooks file (a fixture of this test, not the book's build): serve's
# deferred search index as the plugin runs it (site_tools/mkdocs_plugin.py: on_config,
# on_post_build), on its own. MkDocs loads the file afresh for each build; the thread of the
# last build is waited for at the end of each.
DEFERRING_HOOKS = textwrap.dedent(
    """
    from pathlib import Path
    from site_tools.serve_later import DeferredSearch, Later

    LATER = Later()
    SEARCH = []

    def on_config(config, **kwargs):
        LATER.wait()
        SEARCH[:] = [DeferredSearch(config)]
        return config

    def on_post_build(config, **kwargs):
        index = Path(config["site_dir"]) / "search" / "search_index.json"
        (Path(config["site_dir"]).parent / "interim.json").write_text(index.read_text())
        LATER.start([SEARCH[0].task(LATER.checkpoint)])
        LATER.wait()
    """
)


def _site(folder: Path) -> None:
    for name, text in PAGES.items():
        (folder / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "docs" / name).write_text(text, encoding="utf-8")
    base = "site_name: t\ntheme: {name: material, font: false}\nplugins: [search]\n"
    (folder / "plain.yml").write_text(base, encoding="utf-8")
    (folder / "deferred.yml").write_text(base + "hooks: [hooks.py]\n", encoding="utf-8")
    (folder / "hooks.py").write_text(DEFERRING_HOOKS, encoding="utf-8")


def _build_twice(folder: Path, way: str) -> list[dict]:
    _site(folder)
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(folder), way],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_deferred_search_index_is_the_plugins_own(tmp_path):
    plain = _build_twice(tmp_path / "plain", "plain")
    deferred = _build_twice(tmp_path / "deferred", "deferred")
    for before, after in zip(plain, deferred, strict=True):
        # Byte for byte what the plugin writes itself, after the first build and after a
        # --dirty rebuild (which merges the edited page into the last index).
        assert after["index"] == before["index"], after["step"]
    first, rebuild = (json.loads(step["index"])["docs"] for step in deferred)
    assert {doc["location"] for doc in first} >= {"", "masks/", "masks/#causal"}
    assert any("注意力" in doc["text"] for doc in first)  # segmented by the plugin (jieba)
    assert "masks/#padding" in {doc["location"] for doc in rebuild}
    # Until the thread wrote it, the file held the last build's index: none, then the first's.
    interim_first, interim_rebuild = (json.loads(step["interim"]) for step in deferred)
    assert interim_first["docs"] == []
    assert interim_rebuild["docs"] == first
    assert interim_first["config"] == json.loads(plain[0]["index"])["config"]


def test_after_the_build_runs_every_task_in_order_in_one_thread(caplog):
    ran = []

    def failing():
        """a task that fails"""
        ran.append(("failing", threading.current_thread()))
        raise RuntimeError("boom")

    def second():
        ran.append(("second", threading.current_thread()))

    later = serve_later.Later()
    thread = later.start([None, failing, second])
    assert thread is not None and thread is later.thread
    assert thread is not threading.current_thread()
    later.wait()
    assert not thread.is_alive()
    # A failing task is logged and does not stop the ones after it.
    assert ran == [("failing", thread), ("second", thread)]
    assert "a task that fails" in caplog.text and "boom" in caplog.text
    assert serve_later.Later().start([None]) is None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_after_the_build_waits_until_the_server_answers(monkeypatch):
    """Under serve, the tasks start once the server accepts connections, not while MkDocs
    finishes the build and starts it (they would hold the interpreter's lock)."""
    later, port, ran = serve_later.Later(), _free_port(), threading.Event()
    thread = later.start([ran.set], server=("127.0.0.1", port))
    assert not ran.wait(0.5), "a task ran before the server answered"
    with socket.create_server(("127.0.0.1", port)):
        assert ran.wait(5), "the tasks did not run once the server answered"
    thread.join(5)
    # A server that never answers delays them by SERVER_WAIT at most; serve stopping, not at all.
    monkeypatch.setattr(serve_later, "SERVER_WAIT", 0.3)
    ran.clear()
    later.start([ran.set], server=("127.0.0.1", _free_port()))
    assert ran.wait(5)
    monkeypatch.setattr(serve_later, "SERVER_WAIT", 60.0)
    later = serve_later.Later()
    later.stopping.set()
    ran.clear()
    later.start([ran.set], server=("127.0.0.1", _free_port()))
    assert ran.wait(5)


@pytest.fixture
def serve_state(tmp_path, monkeypatch):
    """Two real pages planned as under ``serve``, with the state file under tmp_path."""
    state = tmp_path / "state.json"
    monkeypatch.setattr(rebuilds, "state_path", lambda site_dir: state)
    site = tmp_path / "site"
    pages = [
        SimpleNamespace(
            src_uri=f"chapters/{name}.md",
            abs_src_path=str(ROOT / "docs" / "chapters" / f"{name}.md"),
            abs_dest_path=str(site / "chapters" / name / "index.html"),
        )
        for name in ("masks", "soft-lookup")
    ]
    files = SimpleNamespace(documentation_pages=lambda: pages)
    return SimpleNamespace(
        state=state, pages=pages, files=files, site_dir=str(site), rebuilds=Rebuilds()
    )


def _built(pages) -> None:
    for page in pages:
        Path(page.abs_dest_path).parent.mkdir(parents=True, exist_ok=True)
        Path(page.abs_dest_path).write_text("built")


def _never() -> bool:
    return False


def test_the_first_serve_builds_takes_fingerprints_after_the_build(serve_state, monkeypatch):
    plan = serve_state.rebuilds
    monkeypatch.setattr(rebuilds, "newest_code_mtime", lambda: 123.0)
    plan.plan(serve_state.files, serve_state.site_dir, serving=True)
    assert [fingerprints for _, fingerprints in plan.built] == [None, None]
    plan.after_build()  # what the plugin's on_post_build does: nothing to write yet
    task = plan.deferred_task(_never)
    assert task is not None and not serve_state.state.exists()
    task()
    state = json.loads(serve_state.state.read_text())
    expected = {
        page.src_uri: deps.page_fingerprints(Path(page.abs_src_path)) for page in serve_state.pages
    }
    assert state["pages"] == expected and state["code_mtime"] == 123.0
    # The next build (the pages now built, no code edited) rebuilds nothing for code, and
    # reads no page's code to know it.
    _built(serve_state.pages)
    for page in serve_state.pages:
        page.is_modified = lambda: False
    monkeypatch.setattr(deps, "page_fingerprints", lambda path: pytest.fail(f"read {path}"))
    plan.plan(serve_state.files, serve_state.site_dir, serving=True)
    assert not any(page.is_modified() for page in serve_state.pages)
    assert plan.deferred_task(_never) is None


def test_code_edited_before_the_fingerprints_rebuilds_every_page(serve_state, monkeypatch):
    plan = serve_state.rebuilds
    mtimes = iter([1.0, 2.0, 2.0])  # the build reads the code; an edit; the next build
    monkeypatch.setattr(rebuilds, "newest_code_mtime", lambda: next(mtimes))
    plan.plan(serve_state.files, serve_state.site_dir, serving=True)
    plan.deferred_task(_never)()
    assert json.loads(serve_state.state.read_text())["pages"] == {}
    _built(serve_state.pages)
    for page in serve_state.pages:
        page.is_modified = lambda: False
    plan.plan(serve_state.files, serve_state.site_dir, serving=True)
    assert all(page.is_modified() for page in serve_state.pages)


@pytest.mark.parametrize(
    "command, dirty, serving",
    [("build", False, False), ("serve", False, False), ("serve", True, True)],
)
def test_only_serve_dirty_serves(command, dirty, serving):
    """The plugin plans rebuilds and defers work only under ``mkdocs serve --dirty``
    (``./dev.sh serve``)."""
    plugin = AttentionPlugin()
    plugin.on_startup(command=command, dirty=dirty)
    assert plugin.serving is serving


def test_a_build_does_not_defer(serve_state):
    """``mkdocs build`` (no serve): nothing is planned, and on_config changes nothing."""
    plan = serve_state.rebuilds
    assert plan.plan(serve_state.files, serve_state.site_dir, serving=False) is serve_state.files
    assert plan.built == [] and plan.deferred_task(_never) is None
    plan.after_build()
    assert not serve_state.state.exists()
    plugin = AttentionPlugin()
    plugin.on_startup(command="build", dirty=False)
    config = SimpleNamespace(plugins={})
    assert plugin.on_config(config) is config
    assert plugin.search is None and plugin.later.thread is None


@pytest.mark.parametrize("site_packages", [True, False])
def test_dev_sh_asks_for_torch_without_importing_it(site_packages):
    """dev.sh's set-up check: exit 0 when torch is installed, 1 when it is not (an
    interpreter without site-packages), and torch is not imported either way."""
    line = next(
        line for line in (ROOT / "dev.sh").read_text().splitlines() if "find_spec('torch')" in line
    )
    check = line.split('-c "', 1)[1].split('"', 1)[0]
    flags = [] if site_packages else ["-S", "-I"]
    done = subprocess.run([sys.executable, *flags, "-c", check], capture_output=True, text=True)
    assert done.returncode == (0 if site_packages else 1), done.stderr
    probe = check.replace("sys.exit(", "print(") + "; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, *flags, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split() == [str(not site_packages), "False"], done.stderr


def test_each_edition_keeps_its_executed_labs(tmp_path, monkeypatch):
    """``./dev.sh build`` (and the tests' build) builds English, then Chinese: the Chinese
    build's mkdocs-jupyter evicts what it did not use from its cache folder, which must
    not be the English labs (an English serve after it would run them again)."""
    from mkdocs_jupyter.plugin import Plugin

    import attention_src
    from attention_src.machinery.source import code_fingerprint

    monkeypatch.setattr(labs, "NOTEBOOK_CACHE", tmp_path)
    code = code_fingerprint(attention_src)[:16]
    older = [tmp_path / "0123456789abcdef-en", tmp_path / code, tmp_path / "stray.json"]
    older[0].mkdir()
    older[1].mkdir()  # the layout before editions had folders of their own
    older[2].write_text("{}")
    executed = {}
    for language in ("en", "zh"):
        plugin = Plugin()
        plugin.load_config({"cache": True})
        plugin._used_cache_paths = set()
        labs.key_cache_on_code(plugin, language, keep_cached=False)
        folder = Path(plugin.config["cache_dir"])
        assert folder == tmp_path / f"{code}-{language}"
        folder.mkdir(parents=True, exist_ok=True)
        executed[language] = folder / "lab.json"  # what this build executed and used
        executed[language].write_text(language)
        plugin._used_cache_paths.add(executed[language])
        (folder / "unused.json").write_text("")
        plugin.on_post_build(None)  # mkdocs-jupyter's eviction
        assert not (folder / "unused.json").exists()
    assert all(lab.read_text() == language for language, lab in executed.items())
    assert not any(path.exists() for path in older)


def test_a_dirty_rebuild_keeps_the_executed_labs(tmp_path, monkeypatch):
    """A ``--dirty`` rebuild under serve renders no lab: mkdocs-jupyter would evict every
    executed lab of the folder after it (and the next render would run them again);
    ``keep_cached`` keeps them. A build evicts what it did not use."""
    from mkdocs_jupyter.plugin import Plugin

    import attention_src
    from attention_src.machinery.source import code_fingerprint

    monkeypatch.setattr(labs, "NOTEBOOK_CACHE", tmp_path)
    folder = tmp_path / f"{code_fingerprint(attention_src)[:16]}-en"
    for keep_cached in (True, False):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "lab.json").write_text("{}")  # executed by an earlier build
        plugin = Plugin()
        plugin.load_config({"cache": True})
        plugin._used_cache_paths = set()
        labs.key_cache_on_code(plugin, "en", keep_cached=keep_cached)
        assert Path(plugin.config["cache_dir"]) == folder
        plugin.on_post_build(None)  # mkdocs-jupyter's eviction: the rebuild rendered none
        assert (folder / "lab.json").exists() is keep_cached


def test_stopping_serve_stops_the_thread_at_its_next_step():
    """on_shutdown (serve stops, then deletes its site folder): the thread's tasks stop at
    their next page instead of writing on."""
    plugin = AttentionPlugin()
    plugin.on_startup(command="serve", dirty=True)
    started, steps = threading.Event(), []

    def pages():
        started.set()
        while not plugin.later.stopping.is_set():
            steps.append(1)
            threading.Event().wait(0.01)

    thread = plugin.later.start([pages])
    started.wait(5)
    plugin.on_shutdown()
    assert not thread.is_alive() and steps


def test_a_build_is_never_stopped(tmp_path, monkeypatch):
    """A build (no serve) writes the chapters' notebooks in the build, not in the thread,
    and with nothing that stops them, even with serve's stop flag left set."""
    from site_tools import after_build

    calls = []

    def chapter_notebooks(site_dir, numbers, figures, stopping=bool):
        calls.append(stopping())

    monkeypatch.setattr(after_build, "chapter_notebooks", chapter_notebooks)
    for name in ("finish_pages", "live_models", "prune"):
        monkeypatch.setattr(after_build, name, lambda *args, **kwargs: None)
    plugin = AttentionPlugin()
    plugin.on_startup(command="build", dirty=False)
    plugin.later.stopping.set()
    plugin.on_post_build(config={"site_dir": str(tmp_path), "theme": {"language": "en"}})
    assert calls == [False] and plugin.later.thread is None


def test_a_rebuild_holds_the_work_after_the_last_build_and_it_goes_on_after():
    """An edit is served within its rebuild's time: the next build's on_config pauses the
    thread at its next checkpoint (between pages), and the work goes on, in order, once
    that build has queued its own."""
    later = serve_later.Later()
    pages_done, first_page, may_go = [], threading.Event(), threading.Event()

    def old_work() -> None:
        for page in range(3):
            if later.checkpoint():
                return
            pages_done.append(("old", page))
            first_page.set()
            may_go.wait(5)

    later.start([old_work])
    assert first_page.wait(5)
    later.pause()  # the next build starts
    may_go.set()
    time.sleep(0.3)  # the build runs: the old work does not go on meanwhile
    assert pages_done == [("old", 0)]
    later.start([lambda: pages_done.append(("new", 0))])  # the build's on_post_build
    later.wait()
    assert pages_done == [("old", 0), ("old", 1), ("old", 2), ("new", 0)]


def test_a_page_edit_before_the_fingerprints_rebuilds_that_page_alone(serve_state, monkeypatch):
    plan = serve_state.rebuilds
    monkeypatch.setattr(rebuilds, "newest_code_mtime", lambda: 7.0)
    plan.plan(serve_state.files, serve_state.site_dir, serving=True)  # the first build
    assert plan.deferred_task(_never) is not None  # queued after it, not yet run
    assert plan.deferred_task(_never) is None  # queued once
    _built(serve_state.pages)
    for page in serve_state.pages:
        page.is_modified = lambda: False
    assert not plan.needs_deferred_fingerprints()  # the next build need not wait
    monkeypatch.setattr(deps, "page_fingerprints", lambda path: pytest.fail(f"read {path}"))
    plan.plan(serve_state.files, serve_state.site_dir, serving=True)  # a page edit
    assert not any(page.is_modified() for page in serve_state.pages)
    monkeypatch.setattr(rebuilds, "newest_code_mtime", lambda: 8.0)  # a code edit
    assert plan.needs_deferred_fingerprints()  # this build waits for them (plan needs them)
