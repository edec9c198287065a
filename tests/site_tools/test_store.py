"""The store of executed outputs (site_tools/engine/store.py): each block runs once.

What executes is counted, never timed: a page whose code differs only in
comments and prose (a translated edition) executes nothing; an edit of a
block re-executes it and what follows; an edit deep in the package, or in a
data file a page reads, re-executes that page; a damaged entry is recomputed;
and the build, ``serve`` and the tests compute the same keys. (Whole pages, run as
the build runs them: tests/site/test_store_pages.py.)
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from site_tools.engine import deps, store

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


# --- entries --------------------------------------------------------------------------------


def test_an_entry_is_read_back_byte_for_byte(tmp_path):
    output = "π ≈ 3.14159\n<figure>…</figure>\n"
    store.write("ab" * 16, output, tmp_path)
    assert store.read("ab" * 16, tmp_path) == output
    assert store.read("cd" * 16, tmp_path) is None


@pytest.mark.parametrize("damage", ["truncated", "other output", "not json", "other key"])
def test_a_damaged_entry_is_deleted_and_never_served(tmp_path, damage):
    key = "ef" * 16
    store.write(key, "the real output\n", tmp_path)
    path = next(tmp_path.glob(f"*/{key}.json"))
    text = path.read_text("utf-8")
    data = json.loads(text)
    if damage == "truncated":
        path.write_text(text[: len(text) // 2], "utf-8")
    elif damage == "other output":
        path.write_text(json.dumps({**data, "output": "something else\n"}), "utf-8")
    elif damage == "not json":
        path.write_bytes(b"\x00\x01\x02")
    else:
        path.write_text(json.dumps({**data, "key": "0" * 32}), "utf-8")
    before = len(store.STATS.corrupt)
    assert store.read(key, tmp_path) is None
    assert not path.exists()
    assert store.STATS.corrupt[before:] == [key]


def test_entries_are_written_whole_while_others_read_them(tmp_path):
    """Writers replace the entry atomically: a reader sees a whole entry or none."""
    key = "12" * 16
    outputs = [f"output {i}\n" * 2000 for i in range(4)]
    seen, stop = [], threading.Event()

    def write_many(i):
        for _ in range(30):
            store.write(key, outputs[i], tmp_path)

    def read_many():
        while not stop.is_set():
            seen.append(store.read(key, tmp_path))

    reader = threading.Thread(target=read_many)
    reader.start()
    writers = [threading.Thread(target=write_many, args=(i,)) for i in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    reader.join()
    assert store.read(key, tmp_path) in outputs
    assert all(s is None or s in outputs for s in seen)
    assert any(s is not None for s in seen)
    assert list(tmp_path.glob("*/.tmp-*")) == []


def test_prune_keeps_what_the_last_full_build_used(tmp_path):
    for key in ("aa" * 16, "bb" * 16):
        store.write(key, "x\n", tmp_path)
    stale = tmp_path / "aa" / ".tmp-left-by-a-killed-build.json"
    stale.write_text("{", "utf-8")
    past = time.time() - 3600
    for path in tmp_path.glob("*/*"):
        os.utime(path, (past, past))
    started = time.time() - 1
    assert store.read("bb" * 16, tmp_path) == "x\n"  # used by this build
    assert store.prune(started, tmp_path) == 1
    assert store.read("aa" * 16, tmp_path) is None
    assert store.read("bb" * 16, tmp_path) == "x\n"
    assert not stale.exists()


@pytest.mark.parametrize(
    "language, started, serving, prunes",
    [
        ("en", None, False, False),  # English alone: the Chinese entries are in the store too
        ("zh", None, False, False),
        ("en", "1", False, False),  # ./dev.sh build: English first, then
        ("zh", "1", False, True),  # Chinese, which prunes what neither used
        ("zh", "1", True, False),  # ./dev.sh serve --dirty never prunes
    ],
)
def test_only_a_build_of_both_editions_prunes(monkeypatch, language, started, serving, prunes):
    from site_tools.mkdocs_plugin import AttentionPlugin

    if started is None:
        monkeypatch.delenv("ATTENTION_BUILD_STARTED", raising=False)
    else:
        monkeypatch.setenv("ATTENTION_BUILD_STARTED", started)
    plugin = AttentionPlugin()
    plugin.serving = serving
    plugin.started = time.time()  # its on_pre_build ran
    config = {"theme": {"language": language}}
    assert plugin.prunes(config) is prunes


# --- keys: what executes --------------------------------------------------------------------


def _page(blocks) -> str:
    """A page of ``blocks`` (code, kind, raises): kind "code" is executed and shown,
    "plain" only shown (a reader copies both)."""
    parts = ["A page.\n"]
    for code, kind, raises in blocks:
        info = 'python exec="on" source="above" result="text"' if kind == "code" else "python"
        if raises:
            info += f' raises="{raises}"'
        parts.append(f"```{info}\n{code}\n```\n\nSome prose.\n")
    return "\n".join(parts)


def _run_blocks(page: Path, blocks, monkeypatch, folder: Path):
    """Fill the store with ``blocks`` as one page; (indices executed, indices replayed,
    the programs that ran)."""
    monkeypatch.setenv("ATTENTION_EXEC_STORE", str(folder))
    programs = []

    def run(program, name):
        programs.append([b.code for b in program])
        return [
            {"index": b.index, "status": "raised as shown" if b.raises else "ok",
             "output": f"ran {len(b.code)}\n", "error": None}
            for b in program
        ]  # fmt: skip

    page.write_text(_page(blocks), "utf-8")
    executed_before, replayed_before = len(store.STATS.executed), len(store.STATS.replayed)
    opened = store.open_page(page.read_text("utf-8"), "page", run)
    outputs = [opened.outputs[i] for i, b in enumerate(opened.blocks) if b.executed_by_fence]
    store.end_page()
    assert len(outputs) == sum(kind == "code" for _, kind, _ in blocks)
    executed = [i for _, i in store.STATS.executed[executed_before:]]
    replayed = [i for _, i in store.STATS.replayed[replayed_before:]]
    return executed, replayed, programs


BLOCKS = [
    ("import math\nx = math.pi  # the constant", "code", None),
    ('def f(y):\n    """Twice."""\n    return 2 * y\nprint(f(x))', "code", None),
    ("print(x + 1)", "plain", None),
    ("int('a')", "code", "ValueError"),
]


def test_comments_docstrings_and_layout_do_not_execute_again(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    first, _, programs = _run_blocks(page, BLOCKS, monkeypatch, tmp_path / "store")
    assert first == [0, 1, 2, 3] and len(programs) == 1
    reworded = [
        ("import math\n\nx = math.pi  # la constante", "code", None),
        ('def f(y):\n    """Le double."""\n    return 2*y\n\nprint( f(x) )', "code", None),
        ("print(x + 1)  # 加一", "plain", None),
        ("int('a')", "code", "ValueError"),
    ]
    again, replayed, programs = _run_blocks(page, reworded, monkeypatch, tmp_path / "store")
    assert again == [] and replayed == [] and programs == []


def test_an_edited_block_executes_with_everything_after_it(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    _run_blocks(page, BLOCKS, monkeypatch, tmp_path / "store")
    edited = [BLOCKS[0], ("def f(y):\n    return 3 * y\nprint(f(x))", "code", None), *BLOCKS[2:]]
    executed, replayed, programs = _run_blocks(page, edited, monkeypatch, tmp_path / "store")
    assert executed == [1, 2, 3]
    # the page ran as one program, the block before the edit included (its output was stored)
    assert replayed == [0]
    assert programs == [[code for code, _, _ in edited]]


@pytest.mark.parametrize("change", ["kind", "raises"])
def test_the_options_that_change_execution_are_in_the_key(tmp_path, monkeypatch, change):
    page = tmp_path / "page.md"
    _run_blocks(page, BLOCKS, monkeypatch, tmp_path / "store")
    if change == "kind":  # the plain block, now executed by the build and shown
        changed, at = [*BLOCKS[:2], (BLOCKS[2][0], "code", None), BLOCKS[3]], 2
    else:  # the last block shows another exception
        changed, at = [*BLOCKS[:3], (BLOCKS[3][0], "code", "TypeError")], 3
    executed, _, _ = _run_blocks(page, changed, monkeypatch, tmp_path / "store")
    assert executed == list(range(at, len(BLOCKS)))


def test_a_failed_program_stores_nothing_after_the_failure(tmp_path, monkeypatch):
    """A block that fails (as a reader's paste would) gives no output to it and to the
    blocks after it; the page is not recorded, so the next build runs it again."""
    monkeypatch.setenv("ATTENTION_EXEC_STORE", str(tmp_path / "store"))

    def run(program, name):
        return [
            {"index": b.index, "status": s, "output": "x\n" if s == "ok" else "",
             "error": "Traceback: boom" if s == "failed" else None}
            for b, s in zip(program, ["ok", "failed", "not run", "not run"], strict=True)
        ]  # fmt: skip

    text = _page(BLOCKS)
    opened = store.fill(text, "page", run)
    assert sorted(opened.errors) == [1, 2, 3] and opened.outputs[0] == "x\n"
    store.record(opened)
    assert store.page_record(text) is None
    assert store.needs_run(text)


def test_the_real_runner_runs_the_copy_texts_as_one_program():
    """``site_tools.engine.program`` in a fresh interpreter: one namespace for every block a
    reader copies; a figure's code sees the page's names (and the names earlier
    figures made) but leaves the reader's names and random generators alone."""
    from site_tools.engine import program

    page = """
```python exec="on" source="above" session="a" result="text"
import torch
x = 1
```

```python exec="on" html="true" session="a"
x = 99
helper = "drawn"
print(torch.rand(1).item() >= 0, x)
```

```python exec="on" html="true" session="a"
print(helper)
```

```python exec="on" source="above" session="b" result="text"
print(x, torch.rand(1))
```

```python
int("no")
```
"""
    blocks = program.page_program(page)
    assert [b.kind for b in blocks] == ["code", "figure", "figure", "code", "plain"]
    results = program.run_program(blocks, "scratch")
    assert [r["status"] for r in results] == ["ok", "ok", "ok", "ok", "failed"]
    assert results[1]["output"] == "True 99\n" and results[2]["output"] == "drawn\n"
    # x is the reader's 1, and the first draw is a fresh interpreter's first draw
    import torch

    first = torch.Generator().manual_seed(program.TORCH_FRESH_SEED)
    expected = f"1 {torch.rand(1, generator=first)}\n"
    assert results[3]["output"] == expected
    assert "ValueError" in results[4]["error"]


def test_a_folded_block_is_in_the_page_fingerprint():
    """A block indented under a folded detour (``??? note``) or an exercise's solution
    runs with the page: the package code it imports is in the page's fingerprint, so
    an edit of that code re-executes the page."""
    shown = '```python exec="on"\nfrom attention_src import softmax\n```\n'
    folded = (
        '??? note "Going further"\n\n'
        '    ```python exec="on"\n'
        "    from attention_src import causal_mask\n"
        "    ```\n"
    )
    assert deps._fences(folded) == ["from attention_src import causal_mask\n"]
    alone = deps.markdown_fingerprints(shown)
    with_fold = deps.markdown_fingerprints(shown + "\n" + folded)
    assert with_fold["runs"] != alone["runs"]
    reached = deps.reachable_code(*deps._imported(deps._fences(folded)[0]))
    assert "attention_src.masks.causal_mask" in reached


def _pages_reading(name: str) -> set[str]:
    """Pages whose code blocks load the benchmark results (found by reading them)."""
    found = set()
    for page in DOCS.rglob("*.md"):
        code = "\n".join(deps._code_cells(page))
        if "load_results(" in code or name in code:
            found.add(page.relative_to(DOCS).as_posix())
    return found


def test_a_changed_data_file_re_executes_exactly_the_pages_that_read_it(tmp_path, monkeypatch):
    pages = sorted(DOCS.rglob("*.md"))
    store.forget_code()
    before = {p.relative_to(DOCS).as_posix(): store._page_base(p.read_text("utf-8")) for p in pages}
    data = tmp_path / "data"
    shutil.copytree(deps.DATA, data)
    results = data / "benchmark-cpu.json"
    results.write_bytes(results.read_bytes() + b"\n")  # new bytes, the same results
    monkeypatch.setattr(deps, "DATA", data)
    store.forget_code()  # as a new build does
    after = {p.relative_to(DOCS).as_posix(): store._page_base(p.read_text("utf-8")) for p in pages}
    changed = {page for page in before if before[page] != after[page]}
    assert changed == _pages_reading("benchmark-cpu.json")
    assert changed  # the benchmark is plotted somewhere
