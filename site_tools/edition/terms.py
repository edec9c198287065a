"""The term table ``i18n/terms.zh.yml``: one Chinese word for each of the site's terms,
keyed by the English glossary's entries (its preferred word, the ones a reader may have
met, the ones no Chinese page may use), and the Chinese glossary generated from it
(``docs-zh/glossary.md``, ``python -m site_tools.edition glossary``).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from site_tools.edition.pages import ROOT, ZH, prose_text, source_hash, with_front_matter

TERMS = ROOT / "i18n" / "terms.zh.yml"


def terms() -> dict[str, dict]:
    """The term table: glossary id -> ``{en, zh, aliases, avoid, definition, links}``."""
    import yaml

    return yaml.safe_load(TERMS.read_text("utf-8")) or {}


def term_problems(prose: list[tuple[int, str]], table: dict[str, dict] | None = None) -> list[str]:
    """Words the term table says to avoid, where a Chinese page's prose uses them."""
    table = terms() if table is None else table
    problems = []
    for number, text in prose_text(prose):
        for ident, entry in table.items():
            for word in entry.get("avoid") or []:
                if word in text:
                    problems.append(
                        f"line {number}: {word!r} — the term table says {entry['zh']!r} "
                        f"({ident}; accepted: {', '.join(entry.get('aliases') or []) or 'none'})"
                    )
    return problems


_TERM_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9_'’. -]*[A-Za-z0-9]|[A-Za-z]")


def term_phrases(table: dict[str, dict] | None = None) -> list[str]:
    """The Latin words and phrases the term table uses in its Chinese (``zh``, ``aliases``),
    longest first: ``attention sink``, ``Post-LN``, ``softmax`` …"""
    table = terms() if table is None else table
    found = set()
    for entry in table.values():
        for chinese in [entry["zh"], *(entry.get("aliases") or [])]:
            found.update(m.strip() for m in _TERM_LATIN.findall(str(chinese)))
    return sorted(found, key=len, reverse=True)


# --- the Chinese glossary, from the term table ----------------------------------------------

GLOSSARY_HEAD = (
    "# 术语表 { #glossary }\n\n"
    "本站用到的术语，按英文名的字母顺序排列，便于和英文资料对照。"
    "形状的字母沿用[记号页](notation.md#shape-legend)："
    "`B` 批大小，`H` 头数，`L` 查询数，`S` 键数，`D` 模型宽度，`Dh` 每个头的宽度，"
    "`Dk`/`Dv` 键和值的宽度；`V` 是词表大小。每个词条都链接到讲它的那一章。\n\n"
    "本页由术语对照表 `i18n/terms.zh.yml` 生成（`python -m site_tools.edition glossary`），"
    "中文版所有页面的用词都按这张表检查：首选译名在前，“也作”列出可以接受的其他译法。\n"
)


def _letters(text: str) -> str:
    return re.sub(r"[\W_]+", "", text).lower()


def glossary_name(zh: str, en: str) -> str:
    """An entry's title: the Chinese term with the English name in one pair of brackets.

    No second bracket where the Chinese already holds the English (``层归一化（LayerNorm）``,
    ``logits``, ``[CLS]、[SEP]``); an abbreviation the Chinese brackets joins the English
    name's: ``分组查询注意力（Grouped-query attention，GQA）``."""
    if _letters(en) in _letters(zh):
        return zh
    bracket = re.fullmatch(r"(.+)（([^（）]+)）", zh)
    short = bracket and re.fullmatch(rf"(.+?) \({re.escape(bracket[2])}\)", en)
    if short:
        return f"{bracket[1]}（{short[1]}，{bracket[2]}）"
    return f"{zh}（{en}）"


def glossary_markdown(table: dict[str, dict] | None = None) -> str:
    table = terms() if table is None else table
    out = [GLOSSARY_HEAD]
    for ident, entry in table.items():
        name = glossary_name(entry["zh"], entry["en"])
        definition = textwrap.indent(entry["definition"].strip(), "    ")[4:]
        aliases = entry.get("aliases") or []
        also = f"\n\n    也作：{'、'.join(aliases)}。" if aliases else ""
        out.append(f"\n**{name}** {{ #{ident} }}\n:   {definition}{also}\n")
    return "".join(out)


def write_glossary() -> Path:
    path = ZH / "glossary.md"
    fields = {"translated_from": source_hash("glossary.md")}
    path.write_text(with_front_matter(fields, glossary_markdown()), "utf-8")
    return path
