"""The diagrams in Chinese: ``diagrams/zh/NAME.svg`` is ``diagrams/NAME.svg`` with the words
of ``i18n/diagrams.zh.yml`` (``python -m site_tools.edition diagrams``); only text content
and labels change.

The drawings are SVG, XML written by hand, rewritten here by regular expressions over
their text and ``aria-label`` only: an HTML parser would lowercase SVG's names
(``viewBox``) and write every tag anew, and ``diagrams/zh`` must be the English drawing
byte for byte but for its words.
"""

from __future__ import annotations

import re
from pathlib import Path

from site_tools.edition.pages import ROOT

DIAGRAM_WORDS = ROOT / "i18n" / "diagrams.zh.yml"


DIAGRAMS = ROOT / "diagrams"
DIAGRAM_INCLUDE = re.compile(r'^--8<-- "diagrams/((?:zh/)?[\w-]+\.svg)"', re.M)
SVG_TEXT = re.compile(r"(<(?P<tag>text|tspan|title|desc)\b[^>]*>)(?P<words>[^<]+)(?=<)")
SVG_LABEL = re.compile(r'(?P<attr>aria-label)="(?P<words>[^"]+)"')


def diagram_words(svg: str) -> list[str]:
    """The words of a diagram a reader reads: its text, title, description and labels."""
    found = [m["words"].strip() for m in SVG_TEXT.finditer(svg)]
    found += [m["words"].strip() for m in SVG_LABEL.finditer(svg)]
    return list(dict.fromkeys(w for w in found if w))


def diagram_table() -> dict[str, dict[str, str]]:
    """``{diagram stem: {English words: Chinese words}}`` (``i18n/diagrams.zh.yml``)."""
    import yaml

    return yaml.safe_load(DIAGRAM_WORDS.read_text("utf-8")) or {}


def translate_svg(svg: str, words: dict[str, str]) -> str:
    """The same drawing with its words in Chinese: only text content and labels change."""
    import html as html_lib

    def chinese(english: str) -> str:
        key = english.strip()
        if key not in words or not words[key]:
            raise KeyError(key)
        value = words[key]
        return english.replace(key, html_lib.escape(html_lib.unescape(value), quote=False))

    svg = SVG_TEXT.sub(lambda m: m[1] + chinese(m["words"]) if m["words"].strip() else m[0], svg)
    return SVG_LABEL.sub(
        lambda m: f'{m["attr"]}="{chinese(m["words"]).replace(chr(34), "&quot;")}"', svg
    )


def write_diagrams() -> list[Path]:
    table = diagram_table()
    written = []
    (DIAGRAMS / "zh").mkdir(exist_ok=True)
    for svg in sorted(DIAGRAMS.glob("*.svg")):
        words = table.get(svg.stem) or {}
        target = DIAGRAMS / "zh" / svg.name
        target.write_text(translate_svg(svg.read_text("utf-8"), words), "utf-8")
        written.append(target)
    return written
