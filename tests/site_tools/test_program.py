"""A page is one program (site_tools/engine/program.py): what its copy buttons give, in page
order, run once by the build in a fresh interpreter; the page shows what that run printed.

"Every copy text runs" is a fact of the build: a page whose plain block or listing
fails, where the page does not say so, fails ``mkdocs build --strict``
(tests/site/test_program_build.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from site_tools.engine import program

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_a_listing_copies_with_its_imports_and_a_copy_skip_block_is_not_run():
    page = """
```python title="attention_src/softmax.py"
--8<-- "attention_src/softmax.py:softmax"
```

<div class="copy-skip" data-skip-reason="compiling takes seconds" markdown>

```python
compiled = torch.compile(softmax)
```

</div>

````markdown
```python
this is an example of a fence, not a block
```
````

1. A list item:

    ```python exec="on" source="above" session="s" result="text"
    print(softmax(torch.tensor([0.0, 0.0])))
    ```
"""
    blocks = program.page_program(page)
    assert [b.kind for b in blocks] == ["listing", "plain", "code"]
    listing = blocks[0]
    assert listing.listing == "attention_src/softmax.py"
    assert "\nimport torch\n" in listing.code and listing.code.endswith(listing.shown)
    assert blocks[1].skip == "compiling takes seconds"
    assert blocks[2].code == "print(softmax(torch.tensor([0.0, 0.0])))"  # dedented
    results = program.run_program(blocks, "scratch")
    assert [r["status"] for r in results] == ["ok", "skipped", "ok"]
    assert results[2]["output"] == "tensor([0.5000, 0.5000])\n"


def test_only_an_executed_block_shows_an_exception():
    with pytest.raises(program.ProgramError, match="does not show running"):
        program.page_program('```python raises="ValueError"\nint("x")\n```\n')


def test_an_executed_block_cannot_be_marked_to_skip():
    page = """<div class="copy-skip" data-skip-reason="slow" markdown>

```python exec="on" source="above" session="s"
print(1)
```

</div>
"""
    with pytest.raises(program.ProgramError, match="cannot be marked copy-skip"):
        program.page_program(page)


@pytest.mark.parametrize("edition", ["docs", "docs-zh"])
def test_every_page_is_a_program_the_store_can_key(edition):
    """Every page of both editions reads as a program (includes found, no executed
    block marked to skip); the Chinese pages' programs equal the English ones as code
    (comments and docstrings aside), except the check page's ``--lang zh``."""
    from attention_src.machinery import code_shape

    folder = ROOT / edition
    pages = sorted(folder.rglob("*.md"))
    total = 0
    for page in pages:
        blocks = program.page_program(page.read_text("utf-8"))
        total += len(blocks)
        if edition == "docs-zh" and "check-your-attention" not in page.name:
            english = program.page_program((DOCS / page.relative_to(folder)).read_text("utf-8"))
            assert [(b.kind, code_shape(b.code)) for b in blocks] == [
                (b.kind, code_shape(b.code)) for b in english
            ], page.relative_to(ROOT)
    assert total > 600, f"only {total} Python blocks on the {edition} pages"


def test_serve_shows_a_pending_output_and_stores_nothing_of_it(tmp_path, monkeypatch):
    """``./dev.sh serve`` hands a page whose outputs are not stored to the background and
    shows PENDING for them: nothing of it reaches the store."""
    from site_tools.engine import store

    monkeypatch.setenv("ATTENTION_EXEC_STORE", str(tmp_path / "store"))
    deferred = []
    text = '```python exec="on" source="above" session="s" result="text"\nprint(1)\n```\n'
    page = store.fill(text, "page", defer=lambda markdown, name: deferred.append(name))
    assert deferred == ["page"] and page.pending
    assert page.outputs == [store.PENDING + "\n"]
    store.record(page)
    assert store.page_record(text) is None and store.needs_run(text)
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").rglob("*.json"))
