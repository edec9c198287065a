"""``./dev.sh serve``'s work after the build (site_tools/hooks.py): Material's search index,
the chapters' notebooks and the first build's page fingerprints are made in a thread once
the build has returned, and what they write is what the build would have written.

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
from pathlib import Path
from types import SimpleNamespace

import pytest

from site_tools import deps, hooks

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

DEFERRING_HOOKS = textwrap.dedent(
    """
    from pathlib import Path
    from site_tools import hooks as site

    def on_config(config, **kwargs):
        site._wait_for_the_last_build()
        site._defer_search_index(config)
        return config

    def on_post_build(config, **kwargs):
        index = Path(config["site_dir"]) / "search" / "search_index.json"
        (Path(config["site_dir"]).parent / "interim.json").write_text(index.read_text())
        site._after_the_build([site._search_index_task(config)])
        site._wait_for_the_last_build()
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
        ran.append(("failing", threading.current_thread().name))
        raise RuntimeError("boom")

    def second():
        ran.append(("second", threading.current_thread().name))

    thread = hooks._after_the_build([None, failing, second])
    assert thread is not None and thread.name == hooks._AFTER_BUILD
    hooks._wait_for_the_last_build()
    assert not thread.is_alive()
    # A failing task is logged and does not stop the ones after it.
    assert ran == [("failing", hooks._AFTER_BUILD), ("second", hooks._AFTER_BUILD)]
    assert "a task that fails" in caplog.text and "boom" in caplog.text
    assert hooks._after_the_build([None]) is None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_after_the_build_waits_until_the_server_answers(monkeypatch):
    """Under serve, the tasks start once the server accepts connections, not while MkDocs
    finishes the build and starts it (they would hold the interpreter's lock)."""
    monkeypatch.setenv(hooks._STOPPING, "")
    port, ran = _free_port(), threading.Event()
    thread = hooks._after_the_build([ran.set], server=("127.0.0.1", port))
    assert not ran.wait(0.5), "a task ran before the server answered"
    with socket.create_server(("127.0.0.1", port)):
        assert ran.wait(5), "the tasks did not run once the server answered"
    thread.join(5)
    # A server that never answers delays them by SERVER_WAIT at most; serve stopping, not at all.
    monkeypatch.setattr(hooks, "SERVER_WAIT", 0.3)
    ran.clear()
    hooks._after_the_build([ran.set], server=("127.0.0.1", _free_port()))
    assert ran.wait(5)
    monkeypatch.setattr(hooks, "SERVER_WAIT", 60.0)
    monkeypatch.setenv(hooks._STOPPING, "1")
    ran.clear()
    hooks._after_the_build([ran.set], server=("127.0.0.1", _free_port()))
    assert ran.wait(5)


@pytest.fixture
def serve_state(tmp_path, monkeypatch):
    """Two real pages planned as under ``serve``, with the state file under tmp_path."""
    monkeypatch.setenv("ATTENTION_SERVE_DIRTY", "1")
    state = tmp_path / "state.json"
    monkeypatch.setattr(hooks, "_state_path", lambda config: state)
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
    for name in ("_BUILT", "_STATE_AT", "_SOURCES", "_REBUILT"):
        monkeypatch.setattr(hooks, name, [])
    return SimpleNamespace(state=state, pages=pages, files=files, config={"site_dir": str(site)})


def _built(pages) -> None:
    for page in pages:
        Path(page.abs_dest_path).parent.mkdir(parents=True, exist_ok=True)
        Path(page.abs_dest_path).write_text("built")


def test_the_first_serve_builds_takes_fingerprints_after_the_build(serve_state, monkeypatch):
    monkeypatch.setattr(hooks, "_newest_code_mtime", lambda: 123.0)
    hooks._plan_rebuilds(serve_state.files, serve_state.config)
    assert [fingerprints for _, fingerprints in hooks._BUILT] == [None, None]
    task = hooks._deferred_state_task()
    assert task is not None and not serve_state.state.exists()
    task()
    state = json.loads(serve_state.state.read_text())
    expected = {
        page.src_uri: deps.page_fingerprints(Path(page.abs_src_path)) for page in serve_state.pages
    }
    assert state["pages"] == expected and state["code_mtime"] == 123.0
    # The next build (the pages now built, no code edited) rebuilds nothing for code.
    _built(serve_state.pages)
    for page in serve_state.pages:
        page.is_modified = lambda: False
    hooks._plan_rebuilds(serve_state.files, serve_state.config)
    assert not any(page.is_modified() for page in serve_state.pages)
    assert hooks._deferred_state_task() is None


def test_code_edited_before_the_fingerprints_rebuilds_every_page(serve_state, monkeypatch):
    mtimes = iter([1.0, 2.0, 2.0])  # the build reads the code; an edit; the next build
    monkeypatch.setattr(hooks, "_newest_code_mtime", lambda: next(mtimes))
    hooks._plan_rebuilds(serve_state.files, serve_state.config)
    hooks._deferred_state_task()()
    assert json.loads(serve_state.state.read_text())["pages"] == {}
    _built(serve_state.pages)
    for page in serve_state.pages:
        page.is_modified = lambda: False
    hooks._plan_rebuilds(serve_state.files, serve_state.config)
    assert all(page.is_modified() for page in serve_state.pages)


def test_a_build_does_not_defer(serve_state, monkeypatch):
    """``mkdocs build`` (no serve): nothing is planned, and on_config changes nothing."""
    monkeypatch.setenv("ATTENTION_SERVE_DIRTY", "")
    assert hooks._plan_rebuilds(serve_state.files, serve_state.config) is serve_state.files
    assert hooks._BUILT == [] and hooks._deferred_state_task() is None
    config = SimpleNamespace(plugins={})
    assert hooks.on_config(config) is config


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


class _Config(dict):
    """What _key_notebooks_on_code reads of an MkDocs configuration."""

    def __init__(self, language: str, plugin):
        super().__init__(theme={"language": language})
        self.plugins = {"mkdocs-jupyter": plugin}


def test_each_edition_keeps_its_executed_labs(tmp_path, monkeypatch):
    """``./dev.sh build`` (and the tests' build) builds English, then Chinese: the Chinese
    build's mkdocs-jupyter evicts what it did not use from its cache folder, which must
    not be the English labs (an English serve after it would run them again)."""
    from mkdocs_jupyter.plugin import Plugin

    import attention_src
    from attention_src.machinery.source import code_fingerprint

    monkeypatch.delenv("ATTENTION_SERVE_DIRTY", raising=False)
    monkeypatch.setattr(hooks, "NOTEBOOK_CACHE", tmp_path)
    code = code_fingerprint(attention_src)[:16]
    older = [tmp_path / "0123456789abcdef-en", tmp_path / code, tmp_path / "stray.json"]
    older[0].mkdir()
    older[1].mkdir()  # the layout before editions had folders of their own
    older[2].write_text("{}")
    labs = {}
    for language in ("en", "zh"):
        plugin = Plugin()
        plugin.load_config({"cache": True})
        plugin._used_cache_paths = set()
        hooks._key_notebooks_on_code(_Config(language, plugin))
        folder = Path(plugin.config["cache_dir"])
        assert folder == tmp_path / f"{code}-{language}"
        folder.mkdir(parents=True, exist_ok=True)
        labs[language] = folder / "lab.json"  # what this build executed and used
        labs[language].write_text(language)
        plugin._used_cache_paths.add(labs[language])
        (folder / "unused.json").write_text("")
        plugin.on_post_build(None)  # mkdocs-jupyter's eviction
        assert not (folder / "unused.json").exists()
    assert all(lab.read_text() == language for language, lab in labs.items())
    assert not any(path.exists() for path in older)


def test_stopping_serve_stops_the_thread_at_its_next_step(monkeypatch):
    """on_shutdown (serve stops, then deletes its site folder): the thread's tasks stop at
    their next page instead of writing on; a build is never stopped."""
    monkeypatch.setenv("ATTENTION_SERVE_DIRTY", "1")
    monkeypatch.setenv(hooks._STOPPING, "")
    started, steps = threading.Event(), []

    def pages():
        started.set()
        while not hooks._stopping():
            steps.append(1)
            threading.Event().wait(0.01)

    thread = hooks._after_the_build([pages])
    started.wait(5)
    hooks.on_shutdown()
    assert not thread.is_alive() and steps
    monkeypatch.setenv("ATTENTION_SERVE_DIRTY", "")
    assert not hooks._stopping()  # a build, even with the flag left set
    monkeypatch.setenv(hooks._STOPPING, "")
    hooks.on_shutdown()
    assert os.environ[hooks._STOPPING] == ""
