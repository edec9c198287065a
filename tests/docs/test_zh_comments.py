"""The Chinese edition's code comments are Chinese: every comment shown in a Python code
box of a Chinese page (``docs-zh/**/*.md``: its Python fences; ``docs-zh/**/*.ipynb``:
its code cells) is written in Chinese, fits the 84-column code box, and uses none of the
term table's avoided words.

A comment counts as English when it has a word of four or more Latin letters that is not
a code name and Chinese characters do not make up most of its words' text (a Chinese
character against a Latin letter): so an English comment with one Chinese character
added is still English. Not words: names used in the same block's code (``causal_mask``,
``Dh``), anything with a digit or underscore (``float16``, ``d_k``), names and acronyms
with a capital after their first letter (``PyTorch``, ``NaN``, ``BERT``), text in
backticks or quotes (code, and the toy sentences' words such as ``'sat'``), and the
Latin words the term table itself uses in Chinese (``softmax``, ``logits``, ``Post-LN``,
``token``: its ``zh`` and ``aliases``). Shape comments (``# (B, H, L, S)``) and tool
pragmas (``# noqa``, ``# fmt: skip``, ``# type: ...``) are left as they are.

Not counted yet: the listings included from the package (``--8<--`` regions of
``attention_src``): a page shows them from the English source, and translating their
comments in the Chinese build is separate work (issue 35, item 2).
"""

from __future__ import annotations

import io
import json
import re
import tokenize
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from site_tools import i18n

CODE_BOX_COLUMNS = 84  # the width of a code box on the page (docs/contributing.md)
PYTHON = ("python", "py")
PRAGMA = re.compile(r"^#\s*(noqa\b|fmt:|type:|pragma\b|pyright:|ruff:|isort:|nosec\b)")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./'’-]*(?P<call>\()?")
CODE_WORDS = frozenset({"True", "False", "None", "Dh", "Dk", "Dv"})  # and the shape names
QUOTED = re.compile(r"`[^`]*`|'[^']*'|\"[^\"]*\"|“[^”]*”")
TERM_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9_'’. -]*[A-Za-z0-9]|[A-Za-z]")


@dataclass
class Comment:
    line: int  # the page's line (a notebook: the cell's number)
    text: str  # the comment, from its "#"
    code_line: str  # the whole line as the code box shows it
    names: frozenset[str]  # the names in the block's code


def display_width(text: str) -> int:
    """Columns a monospace code box gives ``text``: a wide (Chinese) character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def term_phrases(table: dict[str, dict] | None = None) -> list[str]:
    """The Latin words and phrases the term table uses in its Chinese (``zh``, ``aliases``),
    longest first: ``attention sink``, ``Post-LN``, ``softmax`` …"""
    table = i18n.terms() if table is None else table
    found = set()
    for entry in table.values():
        for chinese in [entry["zh"], *(entry.get("aliases") or [])]:
            found.update(m.strip() for m in TERM_LATIN.findall(str(chinese)))
    return sorted(found, key=len, reverse=True)


def foreign_words(comment: str, names: frozenset[str], phrases: list[str]) -> list[str]:
    """The comment's Latin words that are not code names, names, quotes or the table's terms."""
    text = QUOTED.sub(" ", comment.lstrip("#"))
    for phrase in phrases:
        text = re.sub(rf"(?<![A-Za-z]){re.escape(phrase)}(?![A-Za-z])", " ", text, flags=re.I)
    found = []
    for match in WORD.finditer(text):
        word = match[0].rstrip("(").strip(".'’/-")
        if not word or word in names or word in CODE_WORDS or match["call"]:
            continue  # a name in the code, True, a call: sqrt(D)
        if any(c in "0123456789_./" for c in word) or any(c.isupper() for c in word[1:]):
            continue  # code or a path (float16, d_k, nn.Embedding), a name (PyTorch, NaN)
        found.append(word)
    return found


def is_english(comment: str, names: frozenset[str] = frozenset(), phrases=None) -> bool:
    """True when the comment has a Latin word of four or more letters that is not code or
    a term, and its Chinese characters are not most of its words' text."""
    if PRAGMA.match(comment):
        return False
    words = foreign_words(comment, names, term_phrases() if phrases is None else phrases)
    if not any(sum(c.isalpha() for c in w) >= 4 for w in words):
        return False  # shape-only, or only code names and terms
    han = len(i18n.HAN.findall(comment))
    latin = sum(sum(c.isalpha() for c in w) for w in words)
    return han <= latin


def _block_comments(code: str, first_line: int, numbered: bool) -> list[Comment]:
    tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    names = frozenset(t.string for t in tokens if t.type == tokenize.NAME)
    lines = code.splitlines()
    return [
        Comment(
            first_line + t.start[0] if numbered else first_line,
            t.string,
            lines[t.start[0] - 1],
            names,
        )
        for t in tokens
        if t.type == tokenize.COMMENT
    ]


def page_comments(path: Path) -> list[Comment]:
    """The comments of the Python code boxes a Chinese page shows, listings left out."""
    text = path.read_text("utf-8")
    found: list[Comment] = []
    if path.suffix == ".ipynb":
        for n, cell in enumerate(json.loads(text)["cells"]):
            if cell["cell_type"] == "code":
                found += _block_comments("".join(cell["source"]), n + 1, numbered=False)
        return found
    body = i18n.front_matter(text)[1]
    offset = text[: len(text) - len(body)].count("\n")
    for fence in i18n.split(body)[0]:
        language = fence.info.split()[0] if fence.info else ""
        if language in PYTHON and "--8<--" not in fence.code:
            found += _block_comments(fence.code, offset + fence.line, numbered=True)
    return found


def comment_problems(path: Path) -> list[str]:
    phrases = term_phrases()
    table = i18n.terms()
    problems = []
    for c in page_comments(path):
        where = f"line {c.line}: {c.text!r}"
        if is_english(c.text, c.names, phrases):
            problems.append(f"{where} is English")
        if display_width(c.code_line.rstrip()) > CODE_BOX_COLUMNS:
            width = display_width(c.code_line.rstrip())
            problems.append(f"{where}: {width} columns, the code box has {CODE_BOX_COLUMNS}")
        for entry in table.values():
            for word in entry.get("avoid") or []:
                if word in c.text:
                    problems.append(f"{where}: {word!r}, the term table says {entry['zh']!r}")
    return problems


PAGES = i18n.chinese_pages()


@pytest.mark.parametrize("page", PAGES)
def test_the_chinese_pages_comments_are_chinese(page):
    """0 English comments on the page; each comment's line fits the code box."""
    assert comment_problems(i18n.chinese_path(page)) == []


def test_the_pages_comments_are_found():
    """The reader finds the comments (so 0 English is not 0 read): hundreds of them, in
    the pages' fences and the labs' cells."""
    found = {page: page_comments(i18n.chinese_path(page)) for page in PAGES}
    assert sum(len(c) for c in found.values()) > 500
    assert found["chapters/masks.md"] and found["labs/scaled-dot-product-lab.ipynb"]


def test_the_rule_tells_english_from_chinese():
    phrases = term_phrases()
    english = "# the padding is attended to"
    assert is_english(english, phrases=phrases)
    assert is_english(english + "的", phrases=phrases)  # one Chinese character added
    assert is_english("# 先 warm up the cache", phrases=phrases)
    assert not is_english("# 填充被关注了", phrases=phrases)
    assert not is_english("# (B, H, L, S)", phrases=phrases)  # shape only
    assert not is_english("# noqa: E501", phrases=phrases)
    assert not is_english("# softmax 之前加上 logits", phrases=phrases)  # the table's terms
    assert not is_english("# 'sat'：位置 2", phrases=phrases)  # a quoted word
    names = frozenset({"causal_mask", "padding"})
    assert not is_english("# padding：不参与注意力", names, phrases)
    assert is_english("# padding is ignored", names, phrases)
    assert display_width("# 中文") == 6


def test_a_page_with_an_english_comment_fails(tmp_path):
    page = tmp_path / "x.md"
    listing = '```python title="attention_src/masks.py"\n--8<-- "attention_src/masks.py:pad"\n```\n'
    wide = "x = 1  # " + "很" * 40
    page.write_text(
        "---\ntranslated_from: 0\n---\n# 页面\n\n"
        '```python exec="on"\nx = 1  # the padding is attended to\ny = 2  # 填充\n'
        f"{wide}\n```\n\n{listing}",
        "utf-8",
    )
    problems = comment_problems(page)
    assert [c.text for c in page_comments(page)][:2] == ["# the padding is attended to", "# 填充"]
    assert len(problems) == 2, problems
    assert "line 7:" in problems[0] and "English" in problems[0]
    assert "89 columns" in problems[1]


def test_the_style_rule_joins_breaks_that_show_as_a_space():
    """A line break inside a paragraph shows as a space: between two Chinese characters,
    and beside full-width punctuation ("——", "（", "。" next to a digit, code or a link),
    seen through emphasis and links. site_tools/i18n.py flags these and --fix joins them."""
    flagged = [
        "泄漏测试——\n改动未来。\n",
        "标准差都是 1\n（层归一化从 1 开始）。\n",
        "`True` 表示*是填充*\n（详见下文）。\n",
        "[下一章](training-a-stack.md#warm-up)\n会分别训练。\n",
        "恒等映射。\nPre-LN 的残差流从不归一化。\n",
    ]
    for text in flagged:
        assert i18n.style_problems(text), text
        assert "\n" not in i18n.style_fix(text).rstrip("\n"), text
    kept = [
        "标准差都是\n1，不管输入是什么。\n",  # a Chinese character beside a digit: a space
        "用的是\n`causal_mask`。\n",  # beside code
        "第一段。\n\n第二段。\n",  # two paragraphs
        "- 第一项\n- 第二项\n",  # a list
    ]
    for text in kept:
        assert not [p for p in i18n.style_problems(text) if "breaks" in p], text
