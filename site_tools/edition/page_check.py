"""Is ``docs-zh/PAGE`` the English page in Chinese? (``python -m site_tools.edition check``)

:func:`parity_problems` lists what keeps it from being so: code that is not the English
code (the same syntax trees, :func:`attention_src.machinery.code_shape`: comments and
docstrings may be translated, so the store of executed outputs serves the Chinese build
byte for byte), heading ids that are not the English ones (``## 因果掩码 { #causal-mask }``),
the English diagrams instead of their Chinese drawings, a paragraph of English prose, too
little Chinese, a word the term table avoids (:mod:`site_tools.edition.terms`) and the
spacing and punctuation (:mod:`site_tools.edition.style`).
"""

from __future__ import annotations

import re

from site_tools.edition.diagrams import DIAGRAM_INCLUDE
from site_tools.edition.pages import (
    HAN,
    HEADING,
    chinese_path,
    english_path,
    headings,
    parts,
    prose_text,
    relative,
    translation_state,
)
from site_tools.edition.style import style_problems
from site_tools.edition.terms import term_problems
from site_tools.engine.blocks import Fence

# The one declared difference in code: the Chinese check page runs the checker in Chinese.
CHECK_PAGE = "chapters/check-your-attention.md"
CHECK_LANG_ARGUMENT = re.compile(r'(,\s*)?"--lang",\s*"zh"(,\s*)?|\s+--lang zh\b')
# A Latin word (of two letters or more): four in a paragraph with no Chinese make it English.
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]+")


def code_signature(fence: Fence, page: str = "") -> str:
    """What must be equal in both editions: the fence's options and its code's
    syntax tree (Python; comments, docstrings and layout aside), or its text (others)."""
    from attention_src.machinery import code_shape

    info = fence.info
    info = re.sub(r'\btitle="[^"]*"', "", info)  # a listing's title may be translated
    code = fence.code
    if page == CHECK_PAGE:
        code = CHECK_LANG_ARGUMENT.sub(lambda m: ", " if m[1] and m[2] else "", code)
    language = info.split()[0] if info else ""
    if language in ("python", "py", "pycon") and "--8<--" not in code:
        return f"{info}\0{code_shape(code)}"
    if language in ("bash", "sh", "console", "shell"):
        kept = [line.split(" #")[0].rstrip() for line in code.splitlines()]
        return f"{info}\0" + "\n".join(k for k in kept if not k.lstrip().startswith("#"))
    if language in ("text", ""):
        return f"{info}\0<text>"  # an example's words may be translated
    return f"{info}\0{code}"


def latin_paragraphs(prose: list[tuple[int, str]]) -> list[str]:
    """Paragraphs outside code with four or more Latin words and no Chinese character."""
    found = []
    for number, text in prose_text(prose):
        if HAN.search(text):
            continue
        words = LATIN_WORD.findall(text)
        if len(words) >= 4:
            found.append(f"line {number}: {text.strip()[:90]!r}")
    return found


def han_share(prose: list[tuple[int, str]]) -> float:
    """Chinese characters as a share of the letters (Chinese and Latin) in the prose."""
    text = " ".join(t for _, t in prose_text(prose))
    han = len(HAN.findall(text))
    latin = len(re.findall(r"[A-Za-z]", text))
    return han / (han + latin) if han + latin else 1.0


MIN_HAN_SHARE = 0.5
HAN_SHARE_EXEMPT = {"reference.md"}  # the API reference: its docstrings stay English


def parity_problems(page: str) -> list[str]:
    """What keeps ``docs-zh/PAGE`` from being the English page in Chinese."""
    page = relative(page)
    en, zh = english_path(page), chinese_path(page)
    if not zh.exists():
        return [f"{page}: no Chinese page (python -m site_tools.edition placeholder {page})"]
    if not en.exists():
        return [f"{page}: no English page for this Chinese one"]
    en_fences, en_prose = parts(en)
    zh_fences, zh_prose = parts(zh)
    problems = []
    en_code = [code_signature(f) for f in en_fences]
    zh_code = [code_signature(f, page) for f in zh_fences]
    if en_code != zh_code:
        for n, (a, b) in enumerate(zip(en_code, zh_code, strict=False)):
            if a != b:
                problems.append(
                    f"{page}: code block {n + 1} (Chinese line {zh_fences[n].line}, English "
                    f"line {en_fences[n].line}) is not the English code "
                    f"({en_fences[n].info!r} vs {zh_fences[n].info!r})"
                )
                break
        if len(en_code) != len(zh_code):
            problems.append(f"{page}: {len(zh_code)} code blocks, English has {len(en_code)}")
    en_ids = [i for _, i, _ in headings(en_prose)]
    zh_ids = [i for _, i, _ in headings(zh_prose)]
    if zh.suffix == ".ipynb":
        # A notebook's headings get their ids from mkdocs-jupyter's renderer, which
        # reads no { #id }: the same headings, at the same levels, is what can be kept.
        en_ids = [line.split()[0] for _, line in en_prose if HEADING.match(line)]
        zh_ids = [line.split()[0] for _, line in zh_prose if HEADING.match(line)]
    if en_ids != zh_ids:
        missing = [i for i in en_ids if i not in zh_ids]
        extra = [i for i in zh_ids if i not in en_ids]
        problems.append(
            f"{page}: heading ids differ from the English page's"
            + (f"; missing {missing}" if missing else "")
            + (f"; not in English {extra}" if extra else "")
            + ("; order differs" if not missing and not extra else "")
        )
    if translation_state(page) == "pending":
        return problems  # a placeholder: the English text, under a banner
    if zh.suffix == ".md":
        en_diagrams = DIAGRAM_INCLUDE.findall(en.read_text("utf-8"))
        zh_diagrams = DIAGRAM_INCLUDE.findall(zh.read_text("utf-8"))
        if zh_diagrams != [f"zh/{name}" for name in en_diagrams]:
            problems.append(
                f"{page}: includes the diagrams {zh_diagrams}, not the Chinese drawings "
                f"of {en_diagrams} (diagrams/zh/…)"
            )
    problems += [f"{page}: English paragraph {p}" for p in latin_paragraphs(zh_prose)]
    share = han_share(zh_prose)
    if page not in HAN_SHARE_EXEMPT and share < MIN_HAN_SHARE:
        problems.append(f"{page}: Chinese characters are {share:.0%} of the prose's letters")
    problems += [f"{page}: {p}" for p in term_problems(zh_prose)]
    if zh.suffix == ".md":
        problems += [f"{page}: style {p}" for p in style_problems(zh.read_text("utf-8"))]
    return problems
