"""The check page's show(): the checker's reports wrapped to the page by display width (a
Chinese character takes two columns), never inside a URL or an identifier, in both editions.
The function is taken from the page's own code, so this tests what a reader copies."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import unicodedata
from pathlib import Path

import pytest

from attention_src.check import check_module

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "docs" / "chapters" / "check-your-attention.md",
    ROOT / "docs-zh" / "chapters" / "check-your-attention.md",
]
URL = re.compile(r"https://\S+")


def _page_functions(page: Path):
    """columns() and show() as the page defines them (every definition the same)."""
    text = page.read_text(encoding="utf-8")
    found = re.findall(
        r"\ndef columns\(text\):.*?\n\n\ndef show\(output, width=78\):.*?\n\n\n", text, flags=re.S
    )
    assert (
        len(found) == 2 and len({re.sub(r'""".*?"""|#.*', "", f, flags=re.S) for f in found}) == 1
    ), page
    namespace = {"re": re, "unicodedata": unicodedata}
    exec(found[0], namespace)  # the page's own code
    return namespace["columns"], namespace["show"]


@pytest.fixture(scope="module")
def reports():
    path = ROOT / "tests" / "check" / "check_zoo" / "m_labml_softmax_queries.py"
    spec = importlib.util.spec_from_file_location("show_case", path)
    entry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entry)
    return {
        lang: check_module(entry.build, seq_first=True, device="cpu", lang=lang).text()
        for lang in ("en", "zh")
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.parts[-3])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_show_wraps_by_display_width_never_inside_a_url(page, lang, reports):
    columns, show = _page_functions(page)
    long_line = "注：" + "很长的说明，" * 12 + "F.scaled_dot_product_attention。"
    report = reports[lang] + "\n" + long_line
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        show(report)
    lines = printed.getvalue().splitlines()
    # nothing lost or added but the breaks and the indent of a continued line
    # (links are shown without their https://)
    bare = report.replace("https://", "")
    assert re.sub(r"\s", "", printed.getvalue()) == re.sub(r"\s", "", bare)
    for line in lines:  # within 78 columns, unless one piece alone is wider (a URL)
        assert columns(line) <= 78 or len(line.split()) == 1, line
        assert line.strip()[:1] not in "，。；：）、" or not line.strip(), line
    shown = "\n".join(lines)
    for url in URL.findall(report):
        assert url.removeprefix("https://") in shown, url  # on one line, whole
    # the word before a finding's link is never cut, wherever the line's end falls
    if lang == "zh":
        assert "详见 https://" in report, "no finding's link in the report"
        for n in range(20, 45):
            line = "FINDING x: " + "说" * n + "。详见 https://example.org/chapters/x/#y"
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                show(line)
            cut = printed.getvalue().splitlines()
            assert not any(row.rstrip().endswith("详") for row in cut), cut
            assert not any(row.strip().startswith("见") for row in cut), cut
    assert max(columns(line) for line in lines) <= 84  # the page's code box holds 84
    assert "F.scaled_dot_product_attention。" in shown  # an identifier is never cut
    if lang == "zh":  # Chinese lines fill the width: two columns a character, not 40 characters
        assert max(columns(line) for line in lines if not URL.search(line)) > 70
    assert columns("查询轴") == 6 and columns("dim=-1") == 6
