"""The Chinese edition (``docs-zh/``, built by ``mkdocs.zh.yml`` into ``site/zh``).

Each Chinese page has the English page's path under ``docs-zh/`` and the same
executable code: its Python blocks have the English blocks' syntax trees
(:func:`attention_src.machinery.code_shape`: comments and docstrings may be
translated), so the store of executed outputs serves them without running
anything, byte for byte. Its headings carry the English ids
(``## 因果掩码 { #causal-mask }``), so links and anchors are the same in both
editions. Its front matter records the English text it was translated from::

    ---
    translated_from: 3f2a…   # sha256 of the English page, first 16 hex digits
    ---

When the English page changes, the Chinese one shows a banner saying its
translation is older; ``translation: pending`` marks a generated placeholder (the
English text under a "translation pending" banner). Commands::

    python -m site_tools.i18n stale              # pages whose translation is pending or older
    python -m site_tools.i18n placeholder PAGE   # docs-zh/PAGE from docs/PAGE, pending
    python -m site_tools.i18n stamp PAGE...      # record the English text a page now matches
    python -m site_tools.i18n ids PAGE           # the English page's heading ids, in order
    python -m site_tools.i18n check PAGE...      # parity, terms and style of Chinese pages
    python -m site_tools.i18n comments           # the listings' comments and their Chinese
    python -m site_tools.i18n style --fix PAGE   # spacing and punctuation (autocorrect)
    python -m site_tools.i18n glossary           # write docs-zh/glossary.md from the term table
    python -m site_tools.i18n diagrams           # write diagrams/zh/ from i18n/diagrams.zh.yml

The listings a Chinese page includes from ``attention_src`` show, and copy, their
comments in Chinese: ``i18n/comments.zh.yml`` holds them (English comment -> Chinese),
and the Chinese build writes them in by :func:`translate_comments` (comments only, by
Python's tokenize: code, strings and docstrings are the module's).

PAGE is a path relative to ``docs/`` (``chapters/masks.md``) or a ``docs-zh/`` path.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from site_tools.engine import blocks
from site_tools.engine.blocks import Fence

ROOT = Path(__file__).resolve().parents[2]
EN = ROOT / "docs"
ZH = ROOT / "docs-zh"
TERMS = ROOT / "i18n" / "terms.zh.yml"
DIAGRAM_WORDS = ROOT / "i18n" / "diagrams.zh.yml"
PAGE_SUFFIXES = (".md", ".ipynb")

# The one declared difference in code: the Chinese check page runs the checker in Chinese.
CHECK_PAGE = "chapters/check-your-attention.md"
CHECK_LANG_ARGUMENT = re.compile(r'(,\s*)?"--lang",\s*"zh"(,\s*)?|\s+--lang zh\b')

FRONT = re.compile(r"\A---\n(?P<body>.*?)\n---\n", re.S)
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
HAN_HYPHEN = re.compile(r"([\u4e00-\u9fff]) - ([\u4e00-\u9fff])")
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]+")


# --- reading a page ---------------------------------------------------------------


def relative(page: str | Path) -> str:
    """``chapters/masks.md`` for ``docs/chapters/masks.md``, ``docs-zh/...`` or itself."""
    path = Path(page)
    for base in (EN, ZH, Path("docs"), Path("docs-zh")):
        try:
            return path.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def english_path(page: str | Path) -> Path:
    return EN / relative(page)


def chinese_path(page: str | Path) -> Path:
    return ZH / relative(page)


def source_hash(page: str | Path) -> str:
    """The hash a translation records: sha256 of the English page, 16 hex digits."""
    return hashlib.sha256(english_path(page).read_bytes()).hexdigest()[:16]


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """``(fields, body)``: the simple ``key: value`` front matter and what follows it."""
    found = FRONT.match(text)
    if not found:
        return {}, text
    fields = {}
    for line in found["body"].splitlines():
        key, _, value = line.partition(":")
        if key.strip() and not key.lstrip().startswith("#"):
            fields[key.strip()] = value.split("#")[0].strip()
    return fields, text[found.end() :]


def with_front_matter(fields: dict[str, str], body: str) -> str:
    lines = "".join(f"{key}: {value}\n" for key, value in fields.items())
    return f"---\n{lines}---\n{body}"


def split(text: str) -> tuple[list[Fence], list[tuple[int, str]]]:
    """The page's fenced blocks, and its other lines ``(line number, text)``."""
    return blocks.split(text.splitlines())


def notebook_parts(text: str) -> tuple[list[Fence], list[tuple[int, str]]]:
    """A notebook's code cells as fences, its Markdown cells as prose."""
    cells = json.loads(text)["cells"]
    fences, prose = [], []
    for n, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            fences.append(Fence("python", source, n + 1, n + 1))
        else:
            inner_fences, inner_prose = split(source)
            fences += inner_fences
            prose += [(n + 1, line) for _, line in inner_prose]
    return fences, prose


def parts(path: Path) -> tuple[list[Fence], list[tuple[int, str]]]:
    text = path.read_text("utf-8")
    if path.suffix == ".ipynb":
        return notebook_parts(text)
    return split(front_matter(text)[1])


def _slug(text: str) -> str:
    from markdown.extensions.toc import slugify

    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return slugify(text, "-")


HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>.*?)\s*(?:\{(?P<attrs>[^}]*)\})?\s*$")


def headings(prose: list[tuple[int, str]]) -> list[tuple[int, str, str]]:
    """``(line, id, text)`` of each Markdown heading: its explicit id, or the one
    Python-Markdown's toc gives it."""
    found = []
    seen: dict[str, int] = {}
    for number, line in prose:
        match = HEADING.match(line)
        if not match:
            continue
        explicit = re.search(r"#([\w-]+)", match["attrs"] or "")
        ident = explicit[1] if explicit else _slug(match["text"])
        if not explicit and ident in seen:  # toc's own de-duplication
            seen[ident] += 1
            ident = f"{ident}_{seen[ident]}"
        else:
            seen.setdefault(ident, 0)
        found.append((number, ident, match["text"]))
    return found


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


def prose_text(prose: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Paragraphs of readable prose ``(first line, text)``: inline code, HTML tags,
    link targets, math, attribute lists and snippet lines taken out."""
    paragraphs: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    directive = False  # inside a mkdocstrings ``:::`` line's indented options
    for number, line in [*prose, (0, "")]:
        if line.startswith(":::"):
            directive = True
        elif line.strip() and not line[:1].isspace():
            directive = False
        # (an include, a mkdocstrings directive and its options are not prose)
        if line.strip() and not directive and not line.lstrip().startswith("--8<--"):
            if not current:
                start = number
            current.append(line)
            continue
        if current:
            text = " ".join(current)
            text = re.sub(r"\$\$.*?\$\$|\$[^$]+\$|\\\(.*?\\\)", " ", text)
            text = re.sub(r"`[^`]*`", " ", text)
            text = re.sub(r"\]\([^)]*\)", "]", text)
            text = re.sub(r"<[^>]+>", " ", text)
            text = re.sub(r"\{[:.#][^}]*\}|\{ [^}]*\}", " ", text)
            text = re.sub(r'^\s*(!!!|\?\?\?\+?)\s*\w+(\s+"([^"]*)")?', r" \3", text)
            text = re.sub(r"https?://\S+", " ", text)
            paragraphs.append((start, text))
            current = []
    return paragraphs


# --- the term table -------------------------------------------------------------------


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


# --- spacing and punctuation ----------------------------------------------------------


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
_HAN_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
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
    return bool(_HAN_CHAR.match(end) and _HAN_CHAR.match(start))


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


# --- parity --------------------------------------------------------------------------


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
        return [f"{page}: no Chinese page (python -m site_tools.i18n placeholder {page})"]
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


# --- pages and their state ----------------------------------------------------------------


def english_pages() -> list[str]:
    return sorted(
        p.relative_to(EN).as_posix()
        for p in EN.rglob("*")
        if p.suffix in PAGE_SUFFIXES and "assets" not in p.parts
    )


def chinese_pages() -> list[str]:
    if not ZH.is_dir():
        return []
    return sorted(p.relative_to(ZH).as_posix() for p in ZH.rglob("*") if p.suffix in PAGE_SUFFIXES)


def translation_state(page: str) -> str:
    """``current``, ``stale`` (the English page changed since), ``pending`` or ``missing``."""
    zh = chinese_path(page)
    if not zh.exists():
        return "missing"
    if zh.suffix == ".ipynb":
        meta = json.loads(zh.read_text("utf-8")).get("metadata", {}).get("translation", {})
        fields = {k: str(v) for k, v in meta.items()}
    else:
        fields = front_matter(zh.read_text("utf-8"))[0]
    if fields.get("translation") == "pending":
        return "pending"
    return "current" if fields.get("translated_from") == source_hash(page) else "stale"


BANNERS = {
    "pending": (
        "warning",
        "翻译待完成",
        "本页还没有译成中文，下面是英文原文。",
    ),
    "stale": (
        "note",
        "译文较旧",
        "英文页面在这份译文之后有过修改，本页可能没有反映最新内容。",
    ),
}


def banner(page: str, url: str) -> str:
    """The banner a Chinese page shows above its text when its translation is pending
    or older than its English page (raw HTML: its link leaves the edition)."""
    state = translation_state(page)
    if state not in BANNERS:
        return ""
    kind, title, text = BANNERS[state]
    english = "../" * (url.count("/") + 1) + url  # from site/zh/<url> to site/<url>
    return (
        f'<div class="admonition {kind} translation-{state}" markdown="0">'
        f'<p class="admonition-title">{title}</p>'
        f'<p>{text}<a href="{english}" hreflang="en">查看英文页面</a>。</p></div>\n\n'
    )


def stale_pages() -> list[tuple[str, str]]:
    return [
        (page, state) for page in english_pages() if (state := translation_state(page)) != "current"
    ]


def placeholder(page: str) -> Path:
    """Write ``docs-zh/PAGE``: the English page under a "translation pending" banner."""
    page = relative(page)
    zh = chinese_path(page)
    zh.parent.mkdir(parents=True, exist_ok=True)
    text = english_path(page).read_text("utf-8")
    if zh.suffix == ".ipynb":
        notebook = json.loads(text)
        notebook.setdefault("metadata", {})["translation"] = {
            "translation": "pending",
            "translated_from": source_hash(page),
        }
        zh.write_text(json.dumps(notebook, ensure_ascii=False, indent=1) + "\n", "utf-8")
        return zh
    fields, body = front_matter(text)
    fields = {**fields, "translation": "pending", "translated_from": source_hash(page)}
    zh.write_text(with_front_matter(fields, body), "utf-8")
    return zh


def stamp(page: str) -> Path:
    """Record that ``docs-zh/PAGE`` now matches the English page's current text."""
    page = relative(page)
    zh = chinese_path(page)
    if zh.suffix == ".ipynb":
        notebook = json.loads(zh.read_text("utf-8"))
        notebook.setdefault("metadata", {})["translation"] = {"translated_from": source_hash(page)}
        zh.write_text(json.dumps(notebook, ensure_ascii=False, indent=1) + "\n", "utf-8")
        return zh
    fields, body = front_matter(zh.read_text("utf-8"))
    fields.pop("translation", None)
    fields["translated_from"] = source_hash(page)
    zh.write_text(with_front_matter(fields, body), "utf-8")
    return zh


# --- the Chinese glossary, from the term table ----------------------------------------------

GLOSSARY_HEAD = (
    "# 术语表 { #glossary }\n\n"
    "本站用到的术语，按英文名的字母顺序排列，便于和英文资料对照。"
    "形状的字母沿用[记号页](notation.md#shape-legend)："
    "`B` 批大小，`H` 头数，`L` 查询数，`S` 键数，`D` 模型宽度，`Dh` 每个头的宽度，"
    "`Dk`/`Dv` 键和值的宽度；`V` 是词表大小。每个词条都链接到讲它的那一章。\n\n"
    "本页由术语对照表 `i18n/terms.zh.yml` 生成（`python -m site_tools.i18n glossary`），"
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


# --- code comments ----------------------------------------------------------------------

COMMENTS = ROOT / "i18n" / "comments.zh.yml"
CODE_BOX_COLUMNS = 84  # the width of a code box on the page (docs/contributing.md)
PRAGMA = re.compile(r"^#\s*(noqa\b|fmt:|type:|pragma\b|pyright:|ruff:|isort:|nosec\b)")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./'’-]*(?P<call>\()?")
CODE_WORDS = frozenset({"True", "False", "None", "Dh", "Dk", "Dv"})  # and the shape names
_QUOTED = re.compile(r"`[^`]*`|'[^']*'|\"[^\"]*\"|“[^”]*”")
_TERM_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9_'’. -]*[A-Za-z0-9]|[A-Za-z]")


def display_width(text: str) -> int:
    """Columns a monospace code box gives ``text``: a wide (Chinese) character takes two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def term_phrases(table: dict[str, dict] | None = None) -> list[str]:
    """The Latin words and phrases the term table uses in its Chinese (``zh``, ``aliases``),
    longest first: ``attention sink``, ``Post-LN``, ``softmax`` …"""
    table = terms() if table is None else table
    found = set()
    for entry in table.values():
        for chinese in [entry["zh"], *(entry.get("aliases") or [])]:
            found.update(m.strip() for m in _TERM_LATIN.findall(str(chinese)))
    return sorted(found, key=len, reverse=True)


def foreign_words(comment: str, names: frozenset[str], phrases: list[str]) -> list[str]:
    """The comment's Latin words that are not code names, names, quotes or the table's terms."""
    text = _QUOTED.sub(" ", comment.lstrip("#"))
    for phrase in phrases:
        text = re.sub(rf"(?<![A-Za-z]){re.escape(phrase)}(?![A-Za-z])", " ", text, flags=re.I)
    found = []
    for match in _WORD.finditer(text):
        word = match[0].rstrip("(").strip(".'’/-")
        if not word or word in names or word in CODE_WORDS or match["call"]:
            continue  # a name in the code, True, a call: sqrt(D)
        if any(c in "0123456789_./" for c in word) or any(c.isupper() for c in word[1:]):
            continue  # code or a path (float16, d_k, nn.Embedding), a name (PyTorch, NaN)
        found.append(word)
    return found


def comment_is_english(
    comment: str, names: frozenset[str] = frozenset(), phrases: list[str] | None = None
) -> bool:
    """True when the comment has a Latin word of four or more letters that is not code or
    a term, and its Chinese characters are not most of its words' text (so an English
    comment with one Chinese character added is still English)."""
    if PRAGMA.match(comment):
        return False
    words = foreign_words(comment, names, term_phrases() if phrases is None else phrases)
    if not any(sum(c.isalpha() for c in w) >= 4 for w in words):
        return False  # shape-only, or only code names and terms
    han = len(HAN.findall(comment))
    latin = sum(sum(c.isalpha() for c in w) for w in words)
    return han <= latin


def comment_key(comment: str) -> str:
    """A comment's entry in the table: its text after ``#`` and the spaces after it."""
    return comment[1:].strip() if comment.startswith("#") else comment.strip()


_COMMENT_TABLE: dict = {}


def comment_table() -> dict[str, str]:
    """``{English comment: Chinese comment}`` (``i18n/comments.zh.yml``), read again when
    the file changes (``./dev.sh serve`` lives on between rebuilds)."""
    import yaml

    stamp = COMMENTS.stat().st_mtime_ns if COMMENTS.exists() else None
    if _COMMENT_TABLE.get("stamp") != stamp or "table" not in _COMMENT_TABLE:
        text = COMMENTS.read_text("utf-8") if stamp is not None else ""
        table = yaml.safe_load(text) or {}
        _COMMENT_TABLE.update(stamp=stamp, table={str(k): str(v) for k, v in table.items()})
    return _COMMENT_TABLE["table"]


def code_comments(code: str) -> list[tuple[int, int, str]]:
    """``(line, column, comment)`` of each comment in ``code`` (1-based lines), found by
    Python's tokenize: a ``#`` inside a string or a docstring is not a comment."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError) as error:
        raise ValueError(
            f"cannot read the comments of this code ({error}):\n{code[:300]}"
        ) from error
    return [(t.start[0], t.start[1], t.string) for t in tokens if t.type == tokenize.COMMENT]


def translate_comments(code: str, table: dict[str, str] | None = None) -> str:
    """``code`` with each comment the table knows written in Chinese (``# 中文``); every
    other character, strings and docstrings included, as it was. Lines stay lines."""
    table = comment_table() if table is None else table
    lines = code.split("\n")
    for line, column, comment in reversed(code_comments(code)):
        chinese = table.get(comment_key(comment))
        if chinese is not None:
            text = lines[line - 1]
            lines[line - 1] = text[:column] + f"# {chinese}" + text[column + len(comment) :]
    return "\n".join(lines)


@dataclass(frozen=True)
class ListingComment:
    """A comment of the code a Chinese page shows or copies from ``attention_src``."""

    listing: str  # the module's file: attention_src/masks.py
    line: int  # its line in that file (0: not found there)
    column: int  # where the "#" is in the line
    comment: str  # from the "#"
    code_line: str  # the copy text's whole line, in English
    names: frozenset[str]  # the names in the copy's code
    page: str  # the first Chinese page that includes it


def listing_comments(pages: list[str] | None = None) -> list[ListingComment]:
    """The comments of every listing the Chinese pages include, in their copy texts (the
    shown region, and the helpers and the rest of the class the copy adds), each once."""
    import io
    import tokenize

    from site_tools.engine import program

    found: dict[tuple[str, int, str], ListingComment] = {}
    sources: dict[str, list[str]] = {}
    for page in chinese_pages() if pages is None else [relative(p) for p in pages]:
        path = chinese_path(page)
        if path.suffix != ".md":
            continue
        for block in program.page_program(path.read_text("utf-8")):
            if block.kind != "listing":
                continue
            if block.listing not in sources:
                sources[block.listing] = (ROOT / block.listing).read_text("utf-8").splitlines()
            source = sources[block.listing]
            code_lines = block.code.split("\n")
            tokens = tokenize.generate_tokens(io.StringIO(block.code).readline)
            names = frozenset(t.string for t in tokens if t.type == tokenize.NAME)
            for line, column, comment in code_comments(block.code):
                text = code_lines[line - 1]
                number = next((n for n, s in enumerate(source, 1) if s == text), 0)
                key = (block.listing, number, comment)
                if key not in found:
                    found[key] = ListingComment(
                        block.listing, number, column, comment, text, names, page
                    )
    return list(found.values())


def _entry_line(key: str) -> int:
    """The line of ``key``'s entry in i18n/comments.zh.yml (0 if not found)."""
    import yaml

    node = yaml.compose(COMMENTS.read_text("utf-8"))
    for k, _ in node.value if node is not None else []:
        if k.value == key:
            return k.start_mark.line + 1
    return 0


def listing_comment_problems(pages: list[str] | None = None) -> list[str]:
    """What keeps the listings of the Chinese pages from showing Chinese comments: an English
    comment with no entry in the table (the module's file and line), an entry whose English
    no listing has any more (the table's line; only when every page is checked), and a
    translation that is English, uses a word the term table avoids, or makes its line wider
    than the code box."""
    table = comment_table()
    phrases = term_phrases()
    term_table = terms()
    name = COMMENTS.relative_to(ROOT).as_posix() if COMMENTS.is_relative_to(ROOT) else COMMENTS.name
    problems = []
    comments = listing_comments(pages)
    for c in comments:
        where = f"{c.listing}:{c.line}: {c.comment!r} (on docs-zh/{c.page})"
        key = comment_key(c.comment)
        if key not in table:
            if comment_is_english(c.comment, c.names, phrases):
                problems.append(f"{where} has no Chinese in {name}")
            continue
        shown = f"{c.code_line[: c.column]}# {table[key]}"
        if comment_is_english(f"# {table[key]}", c.names, phrases):
            problems.append(f"{where}: its Chinese {table[key]!r} is English")
        if display_width(shown) > CODE_BOX_COLUMNS:
            problems.append(
                f"{where}: in Chinese the line is {display_width(shown)} columns, "
                f"the code box has {CODE_BOX_COLUMNS}"
            )
        for entry in term_table.values():
            for word in entry.get("avoid") or []:
                if word in table[key]:
                    problems.append(f"{where}: {word!r}, the term table says {entry['zh']!r}")
    if pages is None:
        used = {comment_key(c.comment) for c in comments}
        for key in table:
            if key not in used:
                problems.append(
                    f"{name}:{_entry_line(key)}: {key!r}: no listing on a Chinese page has "
                    "this comment any more (its English changed, or the listing went)"
                )
    return problems


# The Chinese build writes the listings' comments in Chinese, in the HTML (what a page shows
# and its copy buttons copy) and in the copy texts it records (_copies): both from the
# English copy (site_tools/engine/copytext.py computes it from the English region, the rest of its
# class included), so a Chinese copy is the English copy as code, whole.
_LISTING_DIV = re.compile(
    r'(?P<open><div class="language-python highlight listing"[^>]*?data-copy=")'
    r'(?P<copy>[^"]*)(?P<rest>">.*?</code></pre></div>)',
    re.DOTALL,
)
_COMMENT_SPAN = re.compile(r'(<span class="c1">)([^<]*)(</span>)')
_HTML_TAG = re.compile(r"<[^>]+>")


def _code_text(body: str) -> str:
    """The text of the ``<code>`` in a code box's HTML, as the page shows it."""
    import html as html_lib

    start = re.search(r"<code\b[^>]*>", body).end()
    return html_lib.unescape(_HTML_TAG.sub("", body[start : body.rindex("</code>")]))


def chinese_listings(page_html: str, table: dict[str, str] | None = None) -> str:
    """A built page's listings (``div.listing``,
    :func:`site_tools.engine.copytext.add_listing_copies`) with their comments in
    Chinese: the copy text (``data-copy``) by
    :func:`translate_comments`, the highlighted code by its comment tokens (Pygments'
    ``c1`` spans), checked to read exactly as the copy's lines do.

    Raises:
        ValueError: when the shown code, so translated, is not the English shown code
            translated by :func:`translate_comments` (a comment Pygments split).
    """
    import html as html_lib

    table = comment_table() if table is None else table

    def chinese_span(match: re.Match) -> str:
        text = html_lib.unescape(match[2])
        found = table.get(comment_key(text)) if text.startswith("#") else None
        if found is None:
            return match[0]
        return f"{match[1]}{html_lib.escape('# ' + found, quote=False)}{match[3]}"

    def chinese(match: re.Match) -> str:
        copy = translate_comments(html_lib.unescape(match["copy"]), table)
        rest = _COMMENT_SPAN.sub(chinese_span, match["rest"])
        english = _code_text(match["rest"])
        if _code_text(rest) != translate_comments(english, table):
            raise ValueError(
                "a listing's comments could not be written in Chinese in its HTML as in "
                f"its copy text (site_tools/i18n.py, chinese_listings):\n{english[:400]}"
            )
        return f"{match['open']}{html_lib.escape(copy, quote=True)}{rest}"

    return _LISTING_DIV.sub(chinese, page_html)


def chinese_copies(path: str | Path, table: dict[str, str] | None = None) -> Path:
    """Write the listings' comments in Chinese in a page's copy texts
    (``<site>/_copies/<page>.json``, :func:`site_tools.engine.program.write_copies`): each
    listing's copy and shown text, as :func:`chinese_listings` writes them on the page."""
    path = Path(path)
    table = comment_table() if table is None else table
    data = json.loads(path.read_text("utf-8"))
    for block in data["blocks"]:
        if block.get("listing"):
            block["code"] = translate_comments(block["code"], table)
            block["shown"] = translate_comments(block["shown"], table)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


# --- the diagrams' words ----------------------------------------------------------------

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


# --- the command line ----------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m site_tools.i18n", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("stale", help="list pages whose translation is pending, older or missing")
    for name in ("placeholder", "stamp", "ids", "check"):
        sub.add_parser(name).add_argument("pages", nargs="+")
    style = sub.add_parser("style")
    style.add_argument("--fix", action="store_true")
    style.add_argument("pages", nargs="+")
    sub.add_parser("glossary")
    sub.add_parser(
        "comments", help="listing comments of the Chinese pages without Chinese, stale entries"
    )
    sub.add_parser("diagrams", help="write diagrams/zh/*.svg from i18n/diagrams.zh.yml")
    args = parser.parse_args(argv)
    if args.command == "stale":
        found = stale_pages()
        for page, state in found:
            print(f"{state:8} docs-zh/{page}")
        return 0
    if args.command == "placeholder":
        for page in args.pages:
            print(placeholder(page))
        return 0
    if args.command == "stamp":
        for page in args.pages:
            print(stamp(page), source_hash(page))
        return 0
    if args.command == "ids":
        for page in args.pages:
            for number, ident, text in headings(parts(english_path(page))[1]):
                print(f"{number:5}  {{ #{ident} }}  {text}")
        return 0
    if args.command == "check":
        problems = [p for page in args.pages for p in parity_problems(page)]
        problems += listing_comment_problems([p for p in args.pages if p.endswith(".md")])
        print("\n".join(problems) or "no problems")
        return 1 if problems else 0
    if args.command == "comments":
        problems = listing_comment_problems()
        print("\n".join(problems) or f"no problems: {len(listing_comments())} comments")
        return 1 if problems else 0
    if args.command == "style":
        failed = 0
        for page in args.pages:
            path = chinese_path(page)
            text = path.read_text("utf-8")
            if args.fix:
                path.write_text(style_fix(text), "utf-8")
            for problem in style_problems(path.read_text("utf-8")):
                print(f"{path}: {problem}")
                failed = 1
        return failed
    if args.command == "diagrams":
        for path in write_diagrams():
            print(path)
        return 0
    if args.command == "glossary":
        print(write_glossary())
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
