"""The Chinese edition (``docs-zh/``, ``mkdocs.zh.yml``, built into ``site/zh``) is the
English site in Chinese: the same pages, the same code, the same anchors, words from
one term table, one checked style, and a build that executes nothing again.

Source tests (no build): every English page has its Chinese page; each Chinese page
has the English page's executed code (syntax trees; the check page's ``--lang zh``
aside) and heading ids, no paragraph of English prose, Chinese at least half of its
prose's letters, none of the term table's avoided words, and autocorrect's spacing
and punctuation; the glossary is generated from the term table; the diagrams are
the English drawings with Chinese words. Each check is also shown to fail on a bad
input, so none can pass by finding nothing.

Built-site tests (the session's build of both editions): the Chinese build is strict,
executes no block but the check page's ``--lang zh`` ones, and its copy texts and
outputs are the English ones; headings, figures and the language switch; banners.
In the browser (tests/browser/test_editions.py): Chinese search, and the switch clicked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from attention_src.machinery import code_shape
from site_tools.edition import banners, diagrams, page_check, pages, style, terms
from site_tools.engine.copytext import COPY_DIR

from .build import ROOT

PAGES = pages.english_pages()
CHECK_PAGE = page_check.CHECK_PAGE


def _url(page: str) -> str:
    """``chapters/masks.md`` -> ``chapters/masks/``; ``index.md`` -> ``""``."""
    stem = page.rsplit(".", 1)[0]
    if stem == "index":
        return ""
    return stem[: -len("/index")] + "/" if stem.endswith("/index") else stem + "/"


# --- the sources ---------------------------------------------------------------------------


def test_every_english_page_has_its_chinese_page():
    assert len(PAGES) >= 30, "English pages not found"
    assert pages.chinese_pages() == PAGES


@pytest.mark.parametrize("page", PAGES)
def test_the_chinese_page_is_the_english_page_in_chinese(page):
    """Code, heading ids, no English paragraph, the share of Chinese, the term table and
    the style (site_tools.edition.page_check.parity_problems; ``python -m
    site_tools.edition check PAGE``)."""
    assert page_check.parity_problems(page) == []


def test_the_parity_check_finds_what_it_looks_for(tmp_path, monkeypatch):
    """Each rule of the parity check fails on a page that breaks it."""
    english = tmp_path / "docs"
    chinese = tmp_path / "docs-zh"
    (english / "chapters").mkdir(parents=True)
    (chinese / "chapters").mkdir(parents=True)
    monkeypatch.setattr(pages, "EN", english)
    monkeypatch.setattr(pages, "ZH", chinese)
    (english / "chapters" / "x.md").write_text(
        "# Masks\n\nA mask says which keys a query may use.\n\n"
        '```python exec="on" session="x"\nprint(1 + 1)  # two\n```\n',
        "utf-8",
    )

    def problems(body: str) -> list[str]:
        (chinese / "chapters" / "x.md").write_text(body, "utf-8")
        return page_check.parity_problems("chapters/x.md")

    code = '```python exec="on" session="x"\nprint(1 + 1)  # 二\n```\n'
    good = f"# 掩码 {{ #masks }}\n\n掩码说明一个查询可以使用哪些键。\n\n{code}"
    assert problems(good) == []  # a translated comment is still the same code
    assert any("not the English code" in p for p in problems(good.replace("1 + 1", "1 + 2")))
    assert any("heading ids" in p for p in problems(good.replace(" { #masks }", "")))
    english_prose = good.replace("掩码说明一个查询可以使用哪些键。", "A mask says which keys.")
    assert any("English paragraph" in p for p in problems(english_prose))
    assert any("遮罩" in p for p in problems(good.replace("掩码说明", "遮罩说明")))
    assert any("style" in p for p in problems(good.replace("一个查询", "一个query")))


def test_the_check_page_differs_by_exactly_its_language_argument():
    """The one declared difference: the Chinese check page runs the checker in Chinese."""
    english = [page_check.code_signature(f) for f in pages.parts(pages.english_path(CHECK_PAGE))[0]]
    fences = pages.parts(pages.chinese_path(CHECK_PAGE))[0]
    assert any("--lang" in f.code for f in fences), "the Chinese check page runs no --lang zh"
    raw = [page_check.code_signature(f) for f in fences]  # as the other pages are compared
    assert raw != english
    assert [page_check.code_signature(f, CHECK_PAGE) for f in fences] == english


def test_the_term_table_is_the_glossarys_and_prefers_the_seeds_words():
    table = terms.terms()
    glossary = (ROOT / "docs" / "glossary.md").read_text("utf-8")
    entries = re.findall(r"^\*\*.+?\*\* \{ #([\w-]+) \}", glossary, re.M)
    assert list(table) == entries, "the term table's keys are not the glossary's entries"
    for ident, entry in table.items():
        assert pages.HAN.search(entry["definition"] or ""), f"{ident}: no Chinese definition"
        assert not set(entry.get("avoid") or []) & set(entry.get("aliases") or []), ident
    assert table["mask"]["zh"] == "掩码" and "掩蔽" in table["mask"]["aliases"]
    assert table["layernorm"]["zh"].startswith("层归一化")
    assert "层规范化" in table["layernorm"]["aliases"]


def test_the_glossary_is_generated_from_the_term_table():
    text = pages.chinese_path("glossary.md").read_text("utf-8")
    assert pages.front_matter(text)[1] == terms.glossary_markdown(), (
        "docs-zh/glossary.md is not what the term table generates: "
        "python -m site_tools.edition glossary"
    )


def test_the_style_check_leaves_code_alone_and_fixes_prose():
    page = '用softmax算,很好。\n\n```python exec="on"\nprint("中文abc,")\n```\n'
    assert style.style_problems(page), "a missing space and a half-width comma were not found"
    fixed = style.style_fix(page)
    assert fixed.startswith("用 softmax 算，很好。")
    assert 'print("中文abc,")' in fixed, "the style fix changed a string in code"
    assert style.style_problems("编码器-解码器把输入读成记忆。") == []


@pytest.mark.parametrize("svg", sorted((ROOT / "diagrams").glob("*.svg")), ids=lambda p: p.stem)
def test_the_chinese_diagram_is_the_same_drawing(svg):
    """diagrams/zh/NAME.svg is NAME.svg with the words of i18n/diagrams.zh.yml: every word
    translated, nothing else changed (python -m site_tools.edition diagrams)."""
    english = svg.read_text("utf-8")
    chinese = (svg.parent / "zh" / svg.name).read_text("utf-8")
    words = diagrams.diagram_table().get(svg.stem) or {}
    assert chinese == diagrams.translate_svg(english, words), "diagrams/zh is out of date"

    def drawing(text: str) -> str:
        text = diagrams.SVG_TEXT.sub(lambda m: m[1], text)
        return diagrams.SVG_LABEL.sub(lambda m: m["attr"], text)

    assert drawing(chinese) == drawing(english)
    assert any(pages.HAN.search(w) for w in diagrams.diagram_words(chinese)), "no Chinese word"


def test_a_stale_translation_says_so(monkeypatch):
    """A changed English page makes its Chinese page stale: listed, and bannered with a
    link to the English page; the banner is what the build puts above the page."""
    page = "chapters/masks.md"
    assert pages.translation_state(page) == "current"
    assert banners.banner(page, "chapters/masks/") == ""
    monkeypatch.setattr(pages, "source_hash", lambda page: "0" * 16)
    assert pages.translation_state(page) == "stale"
    assert (page, "stale") in pages.stale_pages()
    banner = BeautifulSoup(banners.banner(page, "chapters/masks/"), "html.parser")
    assert banner.select_one(".translation-stale") is not None
    assert banner.a["href"] == "../../../chapters/masks/"  # site/zh/chapters/masks -> site/…


# --- the built site ----------------------------------------------------------------------


def _executed(log: str) -> dict[str, int]:
    found = re.findall(r"executed (\d+) blocks in this build: (\{.*\})", log)
    assert found, "the build did not report its executions (site_tools/mkdocs_plugin.py)"
    return json.loads(found[-1][1])


def test_the_chinese_build_is_strict_and_executes_nothing_again(built_site):
    warnings = [line for line in built_site.log_zh.splitlines() if line.startswith("WARNING -")]
    assert warnings == []
    executed = _executed(built_site.log_zh)
    assert set(executed) <= {CHECK_PAGE}, f"the Chinese build executed blocks: {executed}"
    print(
        f"builds: English {built_site.seconds:.1f} s, Chinese {built_site.seconds_zh:.1f} s; "
        f"Chinese executions: {executed}"
    )


def _copies(site: Path) -> dict[str, list[dict]]:
    return {
        path.stem: json.loads(path.read_text("utf-8"))["blocks"]
        for path in sorted((site / COPY_DIR).glob("*.json"))
    }


def test_every_chinese_copy_text_is_the_english_one(built_site):
    """What the Chinese copy buttons give is the English copy texts up to comments (the
    check page: up to its --lang zh), so the English run of every copy covers them."""
    english, chinese = _copies(built_site.dir), _copies(built_site.dir / "zh")
    assert set(chinese) == set(english)
    for name, blocks in english.items():
        page = f"{name.replace('--', '/')}.md"
        theirs = chinese[name]
        assert [b["kind"] for b in theirs] == [b["kind"] for b in blocks], name
        for mine, other in zip(blocks, theirs, strict=True):
            code = other["code"]
            if page == CHECK_PAGE:
                code = page_check.CHECK_LANG_ARGUMENT.sub(
                    lambda m: ", " if m[1] and m[2] else "", code
                )
            if mine["kind"] == "python":
                assert code_shape(code) == code_shape(mine["code"]), (name, mine["index"])
            assert other["raises"] == mine["raises"], (name, mine["index"])


def _article(site: Path, url: str) -> BeautifulSoup:
    html = (site / url / "index.html").read_text("utf-8")
    return BeautifulSoup(html, "html.parser").select_one("article")


@pytest.mark.parametrize("page", [p for p in PAGES if p.endswith(".md")])
def test_the_chinese_page_shows_the_english_outputs_and_anchors(built_site, page):
    url = _url(page)
    english, chinese = _article(built_site.dir, url), _article(built_site.dir / "zh", url)

    def ids(article) -> list[str]:
        return [h.get("id") for h in article.select("h1, h2, h3, h4, h5, h6") if h.get("id")]

    def figures(article) -> list[tuple[str, str]]:
        return [(f.get("id"), f.get("data-number")) for f in article.select("figure")]

    assert ids(chinese) == ids(english)
    assert figures(chinese) == figures(english)
    for figure in chinese.select("figure > figcaption .figure-number"):
        assert figure.get_text().startswith("图 "), figure.get_text()
    if page != CHECK_PAGE:
        outputs = [o.get_text() for o in english.select(".exec-output")]
        assert [o.get_text() for o in chinese.select(".exec-output")] == outputs
    state = pages.translation_state(page)
    banner = chinese.select_one(".translation-stale, .translation-pending")
    assert (banner is not None) == (state != "current"), f"{page}: {state}, banner {banner}"


def test_the_language_switch_leads_to_the_same_page(built_site):
    for page in PAGES:
        url = _url(page)
        for site, other in ((built_site.dir, "zh"), (built_site.dir / "zh", "en")):
            text = (site / url / "index.html").read_text("utf-8")
            # the switch is in the header (overrides/partials/alternate.html): parse up to
            # its end, not the whole page (68 pages parsed whole took about 8 s)
            html = BeautifulSoup(text[: text.index("</header>") + 9], "html.parser")
            link = html.select_one(f"a.edition-link[hreflang='{other}']")
            assert link is not None, f"{url}: no link to the {other} edition"
            target = (site / url / link["href"]).resolve()
            edition = built_site.dir / ("zh" if other == "zh" else "")
            assert target == (edition / url).resolve(), f"{url}: {link['href']}"
            assert (target / "index.html").is_file()


def test_every_chinese_chapter_has_its_notebook_in_chinese(built_site):
    import nbformat

    for page in PAGES:
        if not page.startswith("chapters/"):
            continue
        url = _url(page)
        name = f"{url.strip('/').split('/')[-1]}.ipynb"
        english = nbformat.read(built_site.dir / url / name, as_version=4)
        chinese = nbformat.read(built_site.dir / "zh" / url / name, as_version=4)
        assert "《从零开始理解注意力》" in chinese.cells[0].source
        assert "/zh/" + url in chinese.cells[0].source

        def code(notebook) -> list[str]:
            return [code_shape(c.source) for c in notebook.cells if c.cell_type == "code"]

        if page != CHECK_PAGE:
            assert code(chinese) == code(english), page


def test_the_chinese_search_index_is_segmented(built_site):
    index = json.loads((built_site.dir / "zh" / "search" / "search_index.json").read_text("utf-8"))
    assert index["config"]["lang"] == ["zh"]
    separator = index["config"]["separator"]  # a regular expression for the browser
    assert "\\u200b" in separator or "\u200b" in separator, separator
    assert any("\u200b" in doc["text"] for doc in index["docs"]), "jieba did not segment"
