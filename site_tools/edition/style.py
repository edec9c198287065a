"""Spacing and punctuation of a Chinese page's prose (``python -m site_tools.edition style
[--fix] PAGE``): ``autocorrect``'s rules between Chinese and Latin text, and no line break
inside a paragraph that a browser would show as a stray space. Code blocks are never
touched.
"""

from __future__ import annotations

import re

from site_tools.edition.pages import HAN, front_matter, split

HAN_HYPHEN = re.compile(r"([\u4e00-\u9fff]) - ([\u4e00-\u9fff])")


def _formatted_lines(text: str) -> list[tuple[int, str, str]]:
    """``(line number, line, as autocorrect writes it)`` for each line of prose.

    Line by line, so that code blocks are never touched (autocorrect would respace
    the string literals in them, changing what the code prints) and indented
    text (admonitions, list items) is checked like any other."""
    import autocorrect_py

    body = front_matter(text)[1]
    offset = text[: len(text) - len(body)].count("\n")
    out = []
    for number, line in split(body)[1]:
        stripped = line.lstrip()
        if not stripped or stripped.startswith(("--8<--", "<svg", "<path")) or not HAN.search(line):
            continue
        fixed = autocorrect_py.format_for(stripped, "md")
        # A hyphen joining two Chinese words (编码器-解码器) stays unspaced, as the
        # term table writes it; autocorrect would space it like a minus sign.
        fixed = HAN_HYPHEN.sub(r"\1-\2", fixed) if HAN_HYPHEN.search(fixed) else fixed
        out.append((number + offset, line, line[: len(line) - len(stripped)] + fixed))
    return out


# A line of prose that a paragraph's next line continues (not a heading, list item,
# table row, HTML, attribute list, admonition or tab marker).
_BLOCK_START = re.compile(r"^\s*(#|[-*+] |\d+\. |\||<|\{|!!!|\?\?\?|===|:::|--8<--|\$\$|:   )")
# Full-width punctuation (、。，：；（）“”——……) never takes a space beside it; two
# Chinese characters take none between them.
_WIDE_PUNCT = re.compile(r"[\u3000-\u303f\uff00-\uffef“”‘’\u2014\u2026]")
_MARKUP_END = re.compile(r"(?:[*_]+|\]\([^()\s]*(?:\s+\"[^\"]*\")?\))$")  # emphasis, a link
_MARKUP_START = re.compile(r"^(?:[*_]+|\[)")


def _visible_end(line: str) -> str:
    """The last character a reader sees of a line: emphasis marks and link targets aside."""
    text = line.rstrip()
    while (found := _MARKUP_END.search(text)) and found.start() > 0:
        text = text[: found.start()]
    return text[-1:]


def _visible_start(line: str) -> str:
    text = line.lstrip()
    while (found := _MARKUP_START.match(text)) and found.end() < len(text):
        text = text[found.end() :]
    return text[:1]


def _stray_space(end: str, start: str) -> bool:
    """A line break between these two characters shows as a space where Chinese has none:
    between two Chinese characters, or beside full-width punctuation (a digit, a Latin
    letter, code or a link next to "，" "）" "——")."""
    if not end or not start:
        return False
    if _WIDE_PUNCT.match(end) or _WIDE_PUNCT.match(start):
        return True
    return bool(HAN.match(end) and HAN.match(start))


def _broken_lines(text: str) -> list[int]:
    """Lines (1-based) whose paragraph goes on in the next line with a break a browser shows
    as a stray space: between two Chinese characters, or beside full-width punctuation
    (``_stray_space``), seen through emphasis marks and links (``*是填充*``, ``[下一章](…)``)."""
    body = front_matter(text)[1]
    offset = text[: len(text) - len(body)].count("\n")
    prose = dict(split(body)[1])
    found = []
    for number, line in prose.items():
        following = prose.get(number + 1)
        if not line.strip() or not following or not following.strip():
            continue
        opening = line.lstrip().startswith(("<", "{", "--8<--"))
        if _BLOCK_START.match(following) or (opening and "<figcaption" not in line):
            continue
        indent = len(line) - len(line.lstrip())
        if len(following) - len(following.lstrip()) != indent and not _BLOCK_START.match(line):
            continue
        if _stray_space(_visible_end(line), _visible_start(following)):
            found.append(number + offset)
    return found


def style_problems(text: str) -> list[str]:
    """Spacing and punctuation between Chinese and Latin text (autocorrect's rules), and
    no line break inside a paragraph that shows as a stray space (``_broken_lines``)."""
    problems = [
        f"line {number}: {line.strip()[:70]!r} -> {fixed.strip()[:70]!r}"
        for number, line, fixed in _formatted_lines(text)
        if fixed != line
    ]
    problems += [
        f"line {n}: a paragraph breaks beside Chinese text or full-width punctuation (join "
        "the lines: a browser shows the break as a space)"
        for n in _broken_lines(text)
    ]
    return problems


def style_fix(text: str) -> str:
    lines = text.split("\n")
    for number, _, fixed in _formatted_lines(text):
        lines[number - 1] = fixed
    text = "\n".join(lines)
    for number in reversed(_broken_lines(text)):
        lines = text.split("\n")
        lines[number - 1] = lines[number - 1].rstrip() + lines[number].lstrip()
        del lines[number]
        text = "\n".join(lines)
    return text
