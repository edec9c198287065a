"""site_tools.engine.copytext on its own (no build): a listing's copy carries what it needs."""

from __future__ import annotations

import inspect
import re

import pytest

from attention_src import masks, multi_head
from site_tools.engine import copytext


def _region(module, name: str) -> str:
    text = inspect.getsource(module)
    found = re.search(
        rf"# --8<-- \[start:{name}\]\n(.*?)^\s*# --8<-- \[end:{name}\]", text, re.S | re.M
    )
    return found[1]


def test_a_listing_copies_with_its_imports_and_runs_alone():
    code = _region(masks, "causal_mask")
    copy = copytext.listing_copy(code, "attention_src.masks")
    assert "from attention_src.validate import check_positive_int" in copy.imports
    assert copy.text.endswith(code.rstrip())
    assert copytext.free_names(copy.text) == set()
    namespace = {"__name__": "__main__"}
    exec(copy.text, namespace)
    assert namespace["causal_mask"](2, 3).tolist() == [[True, True, False], [True, True, True]]


def test_a_region_that_ends_inside_a_class_copies_the_rest_of_it():
    code = _region(multi_head, "mha")
    copy = copytext.listing_copy(code, "attention_src.multi_head")
    assert set(copy.methods) == {"_check_inputs", "from_torch"}
    assert "_empty_like_torch" in copy.helpers
    namespace = {"__name__": "__main__"}
    exec(copy.text, namespace)
    assert hasattr(namespace["MultiHeadAttention"], "from_torch")


def test_the_shown_region_alone_would_fail():
    """What a reader got before: the region without its imports leaves free names."""
    assert "check_positive_int" in copytext.free_names(_region(masks, "causal_mask"))


def test_a_region_using_an_unknown_name_fails_the_build():
    broken = "def f(x):\n    return not_defined_anywhere(x)\n"
    with pytest.raises(copytext.CopyError, match="not_defined_anywhere"):
        copytext.listing_copy(broken, "attention_src.masks")


def test_page_copies_reads_data_copy_and_skips_api_listings():
    html = (
        '<div class="language-python highlight" data-copy="import x&#10;&#10;y = 1">'
        '<span class="filename">attention_src/masks.py<span class="copy-note">n</span></span>'
        "<pre><code>y = 1\n</code></pre></div>"
        '<div class="doc-object"><div class="language-python highlight"><pre><code>'
        "def api(): ...</code></pre></div></div>"
        '<div class="copy-skip" data-skip-reason="slow"><div class="language-python highlight">'
        "<pre><code>slow()\n</code></pre></div></div>"
    )
    blocks = copytext.page_copies(html)
    assert [(b.code, b.shown, b.listing, b.skip) for b in blocks] == [
        ("import x\n\ny = 1", "y = 1", "attention_src/masks.py", None),
        ("slow()", "slow()", None, "slow"),
    ]


def test_a_region_that_starts_inside_a_class_fails_the_build_clearly():
    method = inspect.getsource(multi_head.MultiHeadAttention.forward)  # indented, like the module
    with pytest.raises(copytext.CopyError, match="starts indented"):
        copytext.listing_copy(method, "attention_src.multi_head")
