"""A page of the Chinese edition and its English twin: where each lives, what it holds,
and which English text its translation records.

Each Chinese page has the English page's path under ``docs-zh/`` (PAGE is a path
relative to ``docs/``, ``chapters/masks.md``, or a ``docs-zh/`` path). Its front matter
records the English text it was translated from::

    ---
    translated_from: 3f2a…   # sha256 of the English page, first 16 hex digits
    ---

so that a changed English page makes its translation ``stale``; ``translation:
pending`` marks a generated placeholder (the English text under a "translation
pending" banner, :mod:`site_tools.edition.banners`). A page is read into its fenced
blocks (:mod:`site_tools.engine.blocks`, the build's one fence reader) and its other
lines, the prose; a notebook into its code cells and its Markdown cells.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from site_tools.engine import blocks
from site_tools.engine.blocks import Fence

ROOT = Path(__file__).resolve().parents[2]
EN = ROOT / "docs"
ZH = ROOT / "docs-zh"
PAGE_SUFFIXES = (".md", ".ipynb")

FRONT = re.compile(r"\A---\n(?P<body>.*?)\n---\n", re.S)
# A Chinese character (CJK unified ideographs, extension A, compatibility ideographs).
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


# --- where a page lives ------------------------------------------------------------------


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


# --- what a page holds -------------------------------------------------------------------


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

    text = re.sub(r"<[^>]+>", "", text)  # inline HTML in the heading's Markdown
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


# --- the pages and their translation's state -----------------------------------------------


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
