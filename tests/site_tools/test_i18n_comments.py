"""The listings' comments in the Chinese edition (``i18n/comments.zh.yml``).

A Chinese page includes listings from ``attention_src`` (``--8<--`` regions); the Chinese
build shows them, and copies them, with Chinese comments from one table, English comment
-> Chinese (``site_tools/edition/comments.py``: ``translate_comments``, by Python's tokenize). These
tests hold the table to the listings (every English comment has its Chinese, every entry
is used, each fails with its file and line), and the translation to comments only: a
Chinese listing copy is its English copy as code, statement for statement, line for line.
"""

from __future__ import annotations

import ast
import json

import pytest
from bs4 import BeautifulSoup

from attention_src.machinery import code_shape
from site_tools.edition import comments, pages
from site_tools.edition.pages import HAN
from site_tools.engine import copytext, program


@pytest.fixture(scope="module")
def found() -> list[comments.ListingComment]:
    """The comments of every listing on the Chinese pages (read once: every page's program)."""
    return comments.listing_comments()


def _problems(monkeypatch, found, table_text: str, tmp_path) -> list[str]:
    table = tmp_path / "comments.zh.yml"
    table.write_text(table_text, "utf-8")
    monkeypatch.setattr(comments, "COMMENTS", table)
    monkeypatch.setattr(comments, "listing_comments", lambda pages=None: found)
    return comments.listing_comment_problems()


def test_every_listing_comment_has_its_chinese_and_every_entry_is_used(found):
    """0 problems: ``python -m site_tools.edition comments`` says the same."""
    assert len(found) > 300, f"only {len(found)} comments found in the Chinese pages' listings"
    assert len({c.listing for c in found}) > 25
    assert comments.listing_comment_problems() == []


def test_a_missing_or_stale_entry_fails_with_its_file_and_line(monkeypatch, found, tmp_path):
    """An English comment without an entry names the module's file and line; an entry whose
    English no listing has names the table's line."""
    text = comments.COMMENTS.read_text("utf-8")
    key = "1) project, then cut each projection into H heads"
    assert f'"{key}":' in text
    removed = "\n".join(line for line in text.splitlines() if not line.startswith(f'"{key}":'))
    stale = removed + '\n"1) project, then cut every projection into H heads": "1) 投影"\n'
    problems = _problems(monkeypatch, found, stale, tmp_path)
    source = (pages.ROOT / "attention_src" / "multi_head.py").read_text("utf-8").splitlines()
    line = next(n for n, s in enumerate(source, 1) if s.strip() == f"# {key}")
    stale_line = len(stale.rstrip("\n").splitlines())
    assert problems == [
        f"attention_src/multi_head.py:{line}: '# {key}' (on docs-zh/chapters/multi-head-"
        "attention.md) has no Chinese in comments.zh.yml",
        f"comments.zh.yml:{stale_line}: '1) project, then cut every projection into H heads': "
        "no listing on a Chinese page has this comment any more (its English changed, or the "
        "listing went)",
    ]


def test_a_bad_translation_fails(monkeypatch, found, tmp_path):
    """A Chinese comment that is still English, too wide for the code box, or uses a word
    the term table avoids."""
    text = comments.COMMENTS.read_text("utf-8")
    text = text.replace(
        '"2) shuffle the positions": "2) 打乱位置"', '"2) shuffle the positions": "2) shuffle 位置"'
    )
    text = text.replace('"the data": "数据"', '"the data": "' + "数据" * 40 + '"')
    text = text.replace(
        '"(B, L, D): each token reads the others": "',
        '"(B, L, D): each token reads the others": "令牌',
    )
    problems = _problems(monkeypatch, found, text, tmp_path)
    assert len(problems) == 3, problems
    assert any("its Chinese '2) shuffle 位置' is English" in p for p in problems)
    assert any("columns, the code box has 84" in p for p in problems)
    assert any("'令牌', the term table says '词元（token）'" in p for p in problems)


def test_translate_comments_touches_comments_only():
    code = (
        "def f(x):\n"
        '    """A docstring # not a comment."""\n'
        '    s = "# a string"  # the padding is attended to\n'
        "    # the padding is attended to\n"
        "    return s  # (B, L)\n"
    )
    table = {"the padding is attended to": "填充被关注了"}
    translated = comments.translate_comments(code, table)
    assert translated == code.replace("# the padding is attended to", "# 填充被关注了")
    assert ast.dump(ast.parse(translated)) == ast.dump(ast.parse(code))
    assert '"# a string"' in translated and "# not a comment" in translated
    assert comments.translate_comments(code, {}) == code


def _listing_copies(page: str, lang: str) -> list[dict]:
    path = (pages.ZH if lang == "zh" else pages.EN) / page
    blocks = program.copies(program.page_program(path.read_text("utf-8")))
    listings = [b for b in blocks if b["listing"]]
    if lang == "zh":  # as the Chinese build records them (site_tools/mkdocs_plugin.py)
        for block in listings:
            block["code"] = comments.translate_comments(block["code"])
            block["shown"] = comments.translate_comments(block["shown"])
    return listings


def _statements(code: str) -> int:
    return sum(isinstance(node, ast.stmt) for node in ast.walk(ast.parse(code)))


def test_every_chinese_listing_copy_is_the_english_copy_as_code():
    """Each listing copy of a Chinese page equals the English page's by syntax tree, has as
    many statements and lines (the rest of a class included), shows its lines in the copy
    in order, and has its comments in Chinese where the English has English."""
    markdown_pages = [p for p in pages.chinese_pages() if p.endswith(".md")]
    checked = translated = 0
    for page in markdown_pages:
        chinese, english = _listing_copies(page, "zh"), _listing_copies(page, "en")
        assert len(chinese) == len(english), page
        for zh, en in zip(chinese, english, strict=True):
            where = f"{page}: {zh['listing']}"
            assert code_shape(zh["code"]) == code_shape(en["code"]), where
            assert _statements(zh["code"]) == _statements(en["code"]), where
            assert len(zh["code"].splitlines()) == len(en["code"].splitlines()), where
            shown, copy = zh["shown"].splitlines(), zh["code"].splitlines()
            assert any(
                copy[i : i + len(shown)] == shown for i in range(len(copy) - len(shown) + 1)
            ), f"{where}: the shown lines are not in the copy"
            checked += 1
            translated += zh["code"] != en["code"]
    assert checked > 70 and translated > 60, (checked, translated)


def _build_option(extension: str) -> dict:
    """The options mkdocs.yml gives a Markdown extension (the build's, not a copy), read
    with MkDocs' own YAML loader."""
    from mkdocs.utils.yaml import yaml_load

    config = yaml_load((pages.ROOT / "mkdocs.yml").read_bytes())
    for entry in config["markdown_extensions"]:
        if isinstance(entry, dict) and extension in entry:
            return entry[extension] or {}
    raise AssertionError(f"mkdocs.yml has no {extension}")


def _rendered_listing(lang: str) -> str:
    """A listing as the build renders it (Material's code box, Pygments, the copy)."""
    import markdown

    md = markdown.Markdown(
        extensions=["pymdownx.snippets", "pymdownx.highlight", "pymdownx.superfences"],
        extension_configs={
            "pymdownx.snippets": {"base_path": [str(pages.ROOT)], "check_paths": True},
            "pymdownx.highlight": _build_option("pymdownx.highlight"),
        },
    )
    text = (
        '```python title="attention_src/multi_head.py"\n'
        '--8<-- "attention_src/multi_head.py:mha"\n```\n'
    )
    return copytext.add_listing_copies(md.convert(text), lang)


def test_the_chinese_page_shows_and_copies_the_chinese_comments():
    """On the page (the highlighted code) and in the copy button's text, the same Chinese
    comments; the copy is the English copy as code, the rest of the class included."""
    english = _rendered_listing("en")
    chinese = comments.chinese_listings(_rendered_listing("zh"))
    copy = _html(chinese).div["data-copy"]
    english_copy = _html(english).div["data-copy"]
    shown = comments.code_text(chinese)
    assert "# 1) 投影，再把每个投影切成 H 个头" in shown and "1) 投影，再把" in copy
    assert "1) project" not in shown + copy
    assert code_shape(copy) == code_shape(english_copy)
    assert len(copy.splitlines()) == len(english_copy.splitlines())
    assert shown.rstrip("\n") in copy
    assert copy == comments.translate_comments(english_copy)


def _html(text: str) -> BeautifulSoup:
    return BeautifulSoup(text, "html.parser")


def test_the_chinese_listing_changes_the_comments_and_the_copy_only():
    """Every other byte of the page is kept: around the listing, in its markup, and all of
    it when the table has no entry; bytes that are not as BeautifulSoup read them fail."""
    zh = _rendered_listing("zh")
    page = f"<p>before &amp; after</p>\n{zh}\n<p>{zh[:20]}</p>"
    assert comments.chinese_listings(page, {}) == page
    chinese = comments.chinese_listings(page)
    assert chinese.startswith("<p>before &amp; after</p>\n")
    assert chinese.endswith(f"\n<p>{zh[:20]}</p>")

    def masked(text: str) -> str:  # the listing without its copy text and comments' words
        soup = _html(text)
        del soup.div["data-copy"]
        for span in soup.select("span.c1"):
            span.string = ""
        return str(soup)

    assert chinese != page and masked(chinese) == masked(page)
    table = comments.comment_table()
    english = [s.text for s in _html(page).select("span.c1")]
    keys = [comments.comment_key(text) for text in english]
    expected = [f"# {table[k]}" if k in table else t for k, t in zip(keys, english, strict=True)]
    assert [s.text for s in _html(chinese).select("span.c1")] == expected
    assert sum(bool(HAN.search(text)) for text in expected) >= 3
    with pytest.raises(ValueError, match="data-copy is not where and as BeautifulSoup"):
        comments.chinese_listings(page.replace(' data-copy="', ' data-copy = "'))


def test_the_recorded_copies_get_the_same_comments(tmp_path):
    path = tmp_path / "page.json"
    code = "x = 1  # the data\n"
    blocks = [
        {"index": 1, "code": code, "shown": code, "listing": "attention_src/x.py"},
        {"index": 2, "code": code, "shown": code, "listing": None},
    ]
    path.write_text(json.dumps({"page": "p", "blocks": blocks}), "utf-8")
    comments.chinese_copies(path, {"the data": "数据"})
    written = json.loads(path.read_text("utf-8"))["blocks"]
    assert [b["code"] for b in written] == ["x = 1  # 数据\n", code]
    assert written[0]["shown"] == "x = 1  # 数据\n"
