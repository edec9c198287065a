"""Part I reads in the time of one book chapter: its main path, measured on the built pages.

A chapter's *main path* is what a reader meets without opening a folded block: the text
of its ``<article>`` without ``<details>`` (the "Going further" detours, the folded
listings, the exercises' solutions), code (``<pre>``), ``<script>``, ``<style>``,
``<svg>``, ``<math>``, KaTeX's ``.arithmatex`` and the headings' "¶" permalinks. Inline
code, captions and admonitions count. Its words are the whitespace-separated tokens of
that text (for the Chinese edition, whose words are not separated, the length is its CJK
characters plus its Latin words). Shown code lines are the non-blank lines of the Python
blocks outside ``<details>`` (the output boxes aside).

Limits (issue "Part I, the way every reader starts"): no English chapter's main path over
MAX_CHAPTER_WORDS, Part I as a whole at most MAX_PART_WORDS. A detour is folded, never
deleted: ``test_both_editions_fold_the_same_blocks`` checks that the Chinese edition
folds the same code blocks as the English, and the copy tests run every block either way.

``python -m tests.site.test_main_path [SITE]`` prints the table (default: ``site/``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bs4 import BeautifulSoup
from mkdocs.utils.yaml import yaml_load

ROOT = Path(__file__).resolve().parents[2]
MAX_CHAPTER_WORDS = 2_000
MAX_PART_WORDS = 20_000
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python\b")
FOLD = re.compile(r"^(?P<indent>[ \t]*)\?\?\?\+? ")


def part_one() -> list[str]:
    """The page paths (``chapters/x.md``) of Part I, from the nav of mkdocs.yml."""
    nav = yaml_load((ROOT / "mkdocs.yml").read_bytes())["nav"]  # MkDocs' own YAML loader
    for entry in nav:
        ((title, value),) = entry.items()
        if title.split("·")[0].strip() == "Part I":
            return [path for item in value for path in item.values()]
    raise AssertionError("mkdocs.yml's nav has no 'Part I' section")


def main_path(html: str) -> dict[str, int]:
    """``{"words", "cjk_latin", "code_lines"}`` of one built page's main path."""
    article = BeautifulSoup(html, "html.parser").find("article")
    for folded in article.find_all("details"):
        folded.decompose()
    code_lines = sum(
        1
        for block in article.select("div.language-python")
        for line in block.get_text().splitlines()
        if line.strip()
    )
    for tag in article.find_all(["pre", "script", "style", "svg", "math"]):
        tag.decompose()
    for tag in article.select(".arithmatex, a.headerlink"):
        tag.decompose()
    text = article.get_text(" ")
    return {
        "words": len(text.split()),
        "cjk_latin": len(CJK.findall(text)) + len(CJK.sub(" ", text).split()),
        "code_lines": code_lines,
    }


def measure(site: Path) -> dict[str, dict[str, dict[str, int]]]:
    """``{edition: {page: main_path(...)}}`` over Part I, for the editions that were built."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for edition, base in (("en", site), ("zh", site / "zh")):
        for page in part_one():
            html = base / page.removesuffix(".md") / "index.html"
            if html.exists():
                out.setdefault(edition, {})[page] = main_path(html.read_text("utf-8"))
    return out


def folds(markdown: str) -> list[bool]:
    """For each Python fence of a page, in order: whether it sits in a folded block
    (``??? kind "title"``, its body indented below it)."""
    found: list[bool] = []
    open_folds: list[int] = []  # the indents of the ??? lines that enclose this line
    for line in markdown.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        while open_folds and indent <= open_folds[-1]:
            open_folds.pop()
        if FOLD.match(line):
            open_folds.append(indent)
        elif FENCE.match(line):
            found.append(bool(open_folds))
    return found


# --- the tests -----------------------------------------------------------------------


def test_the_measure_counts_the_main_path_only():
    """The main path leaves out folded blocks, code, math and permalinks, and counts
    inline code, captions and admonitions; Chinese is counted by character."""
    html = """<html><body><article>
      <h2>Two words<a class="headerlink" href="#x">¶</a></h2>
      <p>one <code>two</code> three <span class="arithmatex">\\(x + y\\)</span></p>
      <div class="admonition"><p>four five</p></div>
      <figure><figcaption>six</figcaption></figure>
      <details><summary>Going further</summary><p>hidden words here</p></details>
      <div class="language-python highlight"><pre><code>a = 1

b = 2</code></pre></div>
      <div class="language-text exec-output"><pre><code>printed</code></pre></div>
      <p>掩码 mask</p>
    </article></body></html>"""
    got = main_path(html)
    assert got["words"] == 2 + 3 + 2 + 1 + 2, got
    assert got["code_lines"] == 2, got
    assert got["cjk_latin"] == 2 + 3 + 2 + 1 + 1 + 2, got


def test_folds_finds_the_fences_inside_folded_blocks():
    page = "\n".join(
        [
            "```python",
            "a = 1",
            "```",
            '??? note "Going further: x"',
            "",
            "    text",
            "",
            "    ```python",
            "    b = 2",
            "    ```",
            "",
            "Back on the main path.",
            "",
            "```python",
            "c = 3",
            "```",
        ]
    )
    assert folds(page) == [False, True, False]


def test_part_one_main_path_is_short(built_site):
    """No English Part I chapter's main path is over MAX_CHAPTER_WORDS words, and Part I's
    is at most MAX_PART_WORDS; the Chinese edition is measured alongside (it folds the
    same blocks: next test)."""
    figures = measure(built_site.dir)
    english = figures["en"]
    assert set(english) == set(part_one()), "a Part I page was not built"
    table = "\n".join(f"  {page}: {f['words']} words" for page, f in english.items())
    long = {page: f["words"] for page, f in english.items() if f["words"] > MAX_CHAPTER_WORDS}
    assert not long, f"main paths over {MAX_CHAPTER_WORDS} words: {long}\n{table}"
    total = sum(f["words"] for f in english.values())
    assert total <= MAX_PART_WORDS, f"Part I's main path is {total} words\n{table}"
    assert set(figures.get("zh", {})) == set(english), "a Chinese Part I page was not built"


def test_both_editions_fold_the_same_blocks():
    """Every page folds the same code blocks in both editions: a detour folded in English
    is folded in Chinese, and nothing is folded in one edition only."""
    for english in sorted((ROOT / "docs").rglob("*.md")):
        chinese = ROOT / "docs-zh" / english.relative_to(ROOT / "docs")
        if not chinese.exists():
            continue
        en, zh = folds(english.read_text("utf-8")), folds(chinese.read_text("utf-8"))
        assert en == zh, (
            f"{english.relative_to(ROOT)}: the Python blocks folded in English "
            f"({[i for i, f in enumerate(en) if f]}) and in Chinese "
            f"({[i for i, f in enumerate(zh) if f]}) differ"
        )


if __name__ == "__main__":
    site = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "site"
    figures = measure(site)
    for edition, pages in figures.items():
        total = {key: 0 for key in ("words", "cjk_latin", "code_lines")}
        for page, f in pages.items():
            for key in total:
                total[key] += f[key]
            print(
                f"{edition} {page:42s} {f['words']:6d} words {f['cjk_latin']:6d} CJK+Latin "
                f"{f['code_lines']:5d} code lines"
            )
        print(
            f"{edition} {'Part I':42s} {total['words']:6d} words {total['cjk_latin']:6d} "
            f"CJK+Latin {total['code_lines']:5d} code lines"
        )
