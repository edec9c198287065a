"""Every Python code block of every page runs, in page order, as the reader sees it.

- Includes (``--8<--``) are expanded first, so the code on the page is what runs.
- All blocks of a page share one namespace, like a reader pasting them one by
  one into a Python session. An included implementation runs in a copy of its
  own module's namespace, where its imports are.
- A block marked ``raises="SomeError"`` must raise exactly that.
- ``<!--pytest-codeblocks:expected-output-->`` output must match exactly.
- Pages run on the CPU (with CUDA hidden) and again on CUDA where present: the
  page code chooses its device itself.
- Nothing is skipped silently: the Python blocks run here are counted against
  the Python code blocks in the built HTML.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import io
import sys
import traceback

import pytest
import torch
from bs4 import BeautifulSoup

from .pages import ROOT, Block, markdown_pages, read_page

PAGES = markdown_pages()  # the site's pages
README = ROOT / "README.md"  # its snippets are copied too
EXECUTED: dict[str, int] = {}  # page -> visible blocks run on the CPU, for the count test


def page_id(path) -> str:
    return str(path.relative_to(ROOT))


def _exception_type(name: str) -> type[BaseException]:
    exc = getattr(builtins, name, None) or getattr(torch, name, None)
    assert isinstance(exc, type) and issubclass(exc, BaseException), f"unknown exception {name}"
    return exc


def run_block(block: Block, namespace: dict) -> None:
    if block.included_module:
        module = importlib.import_module(block.included_module)
        namespace = dict(vars(module))  # its imports and helpers; the page's names stay apart
    code = compile(block.code, f"<{block.where()}>", "exec")
    stdout = io.StringIO()
    expected = _exception_type(block.raises) if block.raises else None
    try:
        with contextlib.redirect_stdout(stdout):
            exec(code, namespace)
    except Exception as error:
        if expected is not None and isinstance(error, expected):
            return
        pytest.fail(
            f"{block.where()} raised {type(error).__name__}"
            + (f" but the page says it raises {block.raises}" if expected else "")
            + f":\n{block.code}\n{''.join(traceback.format_exception(error))}",
            pytrace=False,
        )
    if expected is not None:
        pytest.fail(
            f"{block.where()} is marked raises={block.raises!r} but ran without error:\n"
            f"{block.code}",
            pytrace=False,
        )
    if block.expected_output is not None and stdout.getvalue() != block.expected_output:
        pytest.fail(
            f"{block.where()} printed\n{stdout.getvalue()}\nbut the page shows\n"
            f"{block.expected_output}",
            pytrace=False,
        )


@pytest.fixture(params=["cpu", "cuda"])
def page_device(request, monkeypatch):
    if request.param == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("no CUDA device: the pages ran on the CPU only")
    else:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    return request.param


@pytest.mark.parametrize("path", [*PAGES, README], ids=page_id)
def test_page_code_runs(path, page_device):
    page = read_page(path)
    assert not page.problems, f"{page_id(path)}:\n" + "\n".join(page.problems)
    namespace = {"__name__": "__main__"}
    ran = 0
    try:
        for block in page.blocks:
            if block.skip_reason is not None:
                continue
            run_block(block, namespace)
            ran += block.visible
    finally:
        torch.set_printoptions(profile="default")
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    if page_device == "cpu":
        EXECUTED[page_id(path)] = ran


def _python_blocks_in_html(html_path) -> int:
    soup = BeautifulSoup(html_path.read_text(encoding="utf-8"), "html.parser")
    content = soup.select_one("article.md-content__inner") or soup
    count = 0
    for block in content.select("div.language-python.highlight"):
        if block.find_parent("div", class_="doc-object"):  # signatures and source from mkdocstrings
            continue
        count += 1
    return count


def test_every_python_block_in_the_html_was_run(built_site):
    """Runs after the page tests (same module): no block may have been skipped silently."""
    missing = [page_id(p) for p in PAGES if page_id(p) not in EXECUTED]
    if missing:
        pytest.skip(f"run together with test_page_code_runs[cpu] (not run: {missing})")
    total_html = total_marked = 0
    mismatches = []
    for path in PAGES:
        name = page_id(path)
        url = str(path.relative_to(ROOT / "docs")).removesuffix(".md").removesuffix("index")
        html = built_site.dir / url / "index.html"
        in_html = _python_blocks_in_html(html)
        blocks = read_page(path).blocks
        marked = [b for b in blocks if b.skip_reason is not None]
        unexplained = [b.where() for b in marked if not b.skip_reason]
        assert not unexplained, f"skip marks need a reason=...: {unexplained}"
        if EXECUTED[name] != in_html - len(marked):
            mismatches.append(
                f"{name}: {in_html} Python blocks in the HTML, {len(marked)} marked, "
                f"but {EXECUTED[name]} ran"
            )
        total_html += in_html
        total_marked += len(marked)
    assert not mismatches, "\n".join(mismatches)
    assert total_html > 0
    assert total_marked <= 0.05 * total_html, (
        f"{total_marked} of {total_html} Python blocks are marked to skip (limit 5 %)"
    )
