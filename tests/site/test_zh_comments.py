"""The Chinese edition's code comments are Chinese: every comment shown in a code box of a
Chinese page (``docs-zh/**/*.md``: its Python and shell fences and the listings it includes
from ``attention_src``; ``docs-zh/**/*.ipynb``: its code cells; the install block the build
generates for the home page and every notebook) is written in Chinese, fits the 84-column
code box, and uses none of the term table's avoided words.

A comment counts as English when it has a word of four or more Latin letters that is not
a code name and Chinese characters do not make up most of its words' text (a Chinese
character against a Latin letter): so an English comment with one Chinese character
added is still English. Not words: names used in the same block's code (``causal_mask``,
``Dh``), anything with a digit or underscore (``float16``, ``d_k``), names and acronyms
with a capital after their first letter (``PyTorch``, ``NaN``, ``BERT``), text in
backticks or quotes (code, and the toy sentences' words such as ``'sat'``), and the
Latin words the term table itself uses in Chinese (``softmax``, ``logits``, ``Post-LN``,
``token``: its ``zh`` and ``aliases``). Shape comments (``# (B, H, L, S)``) and tool
pragmas (``# noqa``, ``# fmt: skip``, ``# type: ...``) are left as they are. The rule is
``site_tools.edition.comments.comment_is_english``.

A listing (a ``--8<--`` region of ``attention_src``) is counted as the Chinese build shows
and copies it: its copy text (the shown region, and the helpers and the rest of the class
the copy adds), computed from the English region, with its comments written in Chinese
from ``i18n/comments.zh.yml`` (``site_tools.edition.comments.translate_comments``); a comment is
placed at its module's file and line.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

from site_tools.edition import comments, pages, style, terms
from site_tools.edition.comments import CODE_BOX_COLUMNS, display_width
from site_tools.edition.comments import comment_is_english as is_english
from site_tools.edition.terms import term_phrases
from site_tools.engine import program

PYTHON = ("python", "py")
SHELL = ("bash", "sh", "shell", "console")
SHELL_COMMENT = re.compile(r"(?:^|\s)(#.*)$")  # a "#" that starts a word, unquoted enough


@dataclass
class Comment:
    line: int  # the page's line (a notebook: the cell's number; a listing: its module's)
    text: str  # the comment, from its "#"
    code_line: str  # the whole line as the code box shows it
    names: frozenset[str]  # the names in the block's code
    listing: str | None = None  # the module's file, for a listing's comment

    def where(self) -> str:
        return f"{self.listing}:{self.line}" if self.listing else f"line {self.line}"


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


def _shell_comments(code: str, first_line: int) -> list[Comment]:
    """The comments of a shell fence: from a "#" that starts a word to the line's end
    (the shell's own rule, quotes aside); names are the words of its commands."""
    lines = code.splitlines()
    commands = [SHELL_COMMENT.sub("", line) for line in lines]
    names = frozenset(re.findall(r"[\w.-]+", " ".join(commands)))
    found = []
    for n, line in enumerate(lines, start=1):
        if match := SHELL_COMMENT.search(line):
            found.append(Comment(first_line + n, match[1], line, names))
    return found


def _module_line(listing: str, english: str, sources: dict[str, list[str]]) -> int:
    """The line of the module that the copy's (English) line is (0: not found)."""
    if listing not in sources:
        sources[listing] = (pages.ROOT / listing).read_text("utf-8").splitlines()
    return next((n for n, s in enumerate(sources[listing], 1) if s == english), 0)


def listing_comments(text: str) -> list[Comment]:
    """The comments of a Chinese page's listings, as its build shows and copies them."""
    found: list[Comment] = []
    sources: dict[str, list[str]] = {}
    for block in program.page_program(text):
        if block.kind != "listing":
            continue
        english = block.code.split("\n")
        copy = comments.translate_comments(block.code)
        for comment in _block_comments(copy, 0, numbered=True):
            comment.line = _module_line(block.listing, english[comment.line - 1], sources)
            comment.listing = block.listing
            found.append(comment)
    return found


def page_comments(path: Path) -> list[Comment]:
    """The comments of the Python code boxes a Chinese page shows, listings included."""
    text = path.read_text("utf-8")
    found: list[Comment] = []
    if path.suffix == ".ipynb":
        for n, cell in enumerate(json.loads(text)["cells"]):
            if cell["cell_type"] == "code":
                found += _block_comments("".join(cell["source"]), n + 1, numbered=False)
        return found
    body = pages.front_matter(text)[1]
    offset = text[: len(text) - len(body)].count("\n")
    for fence in pages.split(body)[0]:
        language = fence.info.split()[0] if fence.info else ""
        if language in PYTHON and "--8<--" not in fence.code:
            found += _block_comments(fence.code, offset + fence.line, numbered=True)
        elif language in SHELL:
            found += _shell_comments(fence.code, offset + fence.line)
    return found + listing_comments(text)


def comment_problems(path: Path, comments: list[Comment] | None = None) -> list[str]:
    phrases = term_phrases()
    table = terms.terms()
    problems = []
    for c in page_comments(path) if comments is None else comments:
        where = f"{c.where()}: {c.text!r}"
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


PAGES = pages.chinese_pages()


@pytest.mark.parametrize("page", PAGES)
def test_the_chinese_pages_comments_are_chinese(page):
    """0 English comments on the page; each comment's line fits the code box."""
    assert comment_problems(pages.chinese_path(page)) == []


def test_the_pages_comments_are_found():
    """The reader finds the comments (so 0 English is not 0 read): hundreds of them, in
    the pages' fences, their listings and the labs' cells."""
    found = {page: page_comments(pages.chinese_path(page)) for page in PAGES}
    assert sum(len(c) for c in found.values()) > 1000
    listed = [c for comments in found.values() for c in comments if c.listing]
    assert len(listed) > 400, len(listed)
    assert all(c.line > 0 for c in listed), [c.where() for c in listed if not c.line]
    assert found["chapters/masks.md"] and found["labs/scaled-dot-product-lab.ipynb"]


def test_the_shell_fences_comments_are_found_and_checked(tmp_path):
    """The check page's shell fences are read (their comments are Chinese), and a shell
    comment in English fails, as a Python one does."""
    check = pages.chinese_path("chapters/check-your-attention.md")
    shell = [c for c in page_comments(check) if not c.code_line.lstrip().startswith(">>>")]
    assert any(c.text == "# 检查一个 nn.Module" for c in shell), [c.text for c in shell]
    page = tmp_path / "x.md"
    page.write_text(
        "---\ntranslated_from: 0\n---\n# 页面\n\n```bash\n# a module with weights\n"
        "python -m attention_src.check my_mha.py:MyMultiHead --module  # 模块\n```\n",
        "utf-8",
    )
    assert [c.text for c in page_comments(page)] == ["# a module with weights", "# 模块"]
    assert [p.split(":")[0] for p in comment_problems(page)] == ["line 7"]


def test_the_generated_install_block_has_no_english_comment():
    """The install block the build prints on the home page and at the top of every
    notebook (``site_tools.outputs.wheel``), read as the shell fence it is."""
    from site_tools.outputs import wheel

    markdown = wheel.install_markdown()
    code = markdown.split("```bash\n", 1)[1].split("\n```", 1)[0]
    assert code.splitlines() == wheel.install_lines()
    comments = _shell_comments(code, 0)
    home = pages.chinese_path("index.md")
    assert comment_problems(home, comments) == [], [c.text for c in comments]


def test_a_listing_comment_without_its_chinese_fails(monkeypatch):
    """One entry of the table removed: the page that shows the listing fails, naming the
    module's file and line; the table whole, it passes."""
    page = pages.chinese_path("chapters/multi-head-attention.md")
    key = "1) project, then cut each projection into H heads"
    table = dict(comments.comment_table())
    assert comment_problems(page) == []
    del table[key]
    monkeypatch.setattr(comments, "comment_table", lambda: table)
    source = (pages.ROOT / "attention_src" / "multi_head.py").read_text("utf-8").splitlines()
    line = next(n for n, s in enumerate(source, 1) if s.strip() == f"# {key}")
    assert comment_problems(page) == [f"attention_src/multi_head.py:{line}: '# {key}' is English"]


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
    listing = (
        '```python title="attention_src/masks.py"\n'
        '--8<-- "attention_src/masks.py:padding_mask"\n```\n'
    )
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
    seen through emphasis and links. site_tools/edition/style.py flags these and --fix joins
    them."""
    flagged = [
        "泄漏测试——\n改动未来。\n",
        "标准差都是 1\n（层归一化从 1 开始）。\n",
        "`True` 表示*是填充*\n（详见下文）。\n",
        "[下一章](training-a-stack.md#warm-up)\n会分别训练。\n",
        "恒等映射。\nPre-LN 的残差流从不归一化。\n",
    ]
    for text in flagged:
        assert style.style_problems(text), text
        assert "\n" not in style.style_fix(text).rstrip("\n"), text
    kept = [
        "标准差都是\n1，不管输入是什么。\n",  # a Chinese character beside a digit: a space
        "用的是\n`causal_mask`。\n",  # beside code
        "第一段。\n\n第二段。\n",  # two paragraphs
        "- 第一项\n- 第二项\n",  # a list
    ]
    for text in kept:
        assert not [p for p in style.style_problems(text) if "breaks" in p], text
