"""The hand-drawn diagrams in diagrams/*.svg and the pages that include them.

Each diagram is inlined into one page by ``pymdownx.snippets``
(``--8<-- "diagrams/<stem>.svg"``) inside a ``<figure class="diagram">``. These
tests read the files and the markdown only (no build): the SVG is well formed
and accessible, carries no colour of its own (the classes of
``docs/assets/stylesheets/diagrams.css`` colour it, so it follows the light/dark
toggle), its ids cannot collide with another diagram's on a page, and its shape
labels use the letters of the notation page.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DIAGRAMS = ROOT / "diagrams"
CSS = DOCS / "assets" / "stylesheets" / "diagrams.css"
SVG_NS = "{http://www.w3.org/2000/svg}"

SVG_FILES = sorted(DIAGRAMS.glob("*.svg"))
SVG_IDS = [path.name for path in SVG_FILES]

# Attributes that take a colour, and the values that are not one.
COLOUR_ATTRIBUTES = {"fill", "stroke", "color", "stop-color", "flood-color", "lighting-color"}
NOT_A_COLOUR = re.compile(r"^(none|currentColor|url\(#[\w-]+\))$")
URL_REF = re.compile(r"url\(#([\w-]+)\)")
HEX_COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}\b")
STYLE_COLOUR = re.compile(r"(^|;)\s*(fill|stroke|color|stop-color|background[\w-]*)\s*:", re.I)
INCLUDE = re.compile(r'^--8<-- "diagrams/(?P<name>[^"]+\.svg)"\s*$')
FIGURE_OPEN = re.compile(r'^<figure class="diagram" id="(?P<id>fig-[\w-]+)" markdown="0">$')
# A shape label: sizes in parentheses, such as (B, L, D) or (B, 1, L, S).
SHAPE = re.compile(r"\(([^()]*,[^()]*)\)")
# Unicode subscripts the diagrams use, spelled the way the notation page spells them.
SUBSCRIPTS = str.maketrans({"ₖ": "_k", "ᵥ": "_v"})


def local(tag: str) -> str:
    return tag.removeprefix(SVG_NS)


@cache
def parsed(path: Path) -> ET.Element:
    return ET.fromstring(path.read_text(encoding="utf-8"))


def elements(path: Path) -> list[ET.Element]:
    return list(parsed(path).iter())


def text_of(element: ET.Element) -> str:
    return "".join(element.itertext())


@cache
def css_classes() -> frozenset[str]:
    """Every ``.d-…`` class that diagrams.css defines."""
    return frozenset(re.findall(r"\.(d-[\w-]+)", CSS.read_text(encoding="utf-8")))


@cache
def notation_letters() -> frozenset[str]:
    """The size letters of docs/notation.md: the shape legend's first column
    (`B`, `L`, `Dk`, …) and the single-letter sizes of the math table ($d_k$)."""
    letters: set[str] = set()
    for line in (DOCS / "notation.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.lstrip().startswith("|") or not cells:
            continue
        letters.update(re.findall(r"`(\w+)`", cells[0]))
        if cells[0].startswith("$"):  # $d_k$, and the d_v inside $V \in …^{S \times d_v}$
            letters.update(re.findall(r"(?<![\\\w])([a-z]_[a-z])(?!\w)", cells[0]))
    return frozenset(letters)


@cache
def includes() -> dict[str, list[tuple[Path, int]]]:
    """For each diagram file name, the (page, line index) of every include."""
    found: dict[str, list[tuple[Path, int]]] = {}
    for page in sorted(DOCS.rglob("*.md")):
        for index, line in enumerate(page.read_text(encoding="utf-8").splitlines()):
            match = INCLUDE.match(line.strip())
            if match:
                found.setdefault(match["name"], []).append((page, index))
    return found


def test_there_are_diagrams():
    assert SVG_FILES, f"no diagrams in {DIAGRAMS}"


@pytest.mark.parametrize("path", SVG_FILES, ids=SVG_IDS)
def test_root_is_an_accessible_image_sized_by_css(path):
    root = parsed(path)
    stem = path.stem
    assert local(root.tag) == "svg"
    assert root.get("role") == "img"
    assert re.fullmatch(r"0 0 \d+(\.\d+)? \d+(\.\d+)?", root.get("viewBox", "")), (
        "the root needs a viewBox '0 0 W H'"
    )
    width = float(root.get("viewBox").split()[2])
    assert width <= 720, f"viewBox is {width} wide: draw for the ~720 px column"
    assert root.get("width") is None and root.get("height") is None, (
        "no width/height on the root: the stylesheet sizes it to the column"
    )
    assert root.get("aria-labelledby") == f"{stem}-title {stem}-desc"
    children = {local(child.tag): child for child in root}
    for part in ("title", "desc"):
        assert part in children, f"no <{part}>"
        assert children[part].get("id") == f"{stem}-{part}"
        assert len(text_of(children[part]).split()) >= (3 if part == "title" else 12), (
            f"the <{part}> is too short to describe the diagram"
        )


@pytest.mark.parametrize("path", SVG_FILES, ids=SVG_IDS)
def test_no_colour_is_written_in_the_file(path):
    source = path.read_text(encoding="utf-8")
    for element in elements(path):
        tag = local(element.tag)
        assert tag != "style", "no <style> in a diagram: add classes to diagrams.css"
        for name, value in element.attrib.items():
            if name in COLOUR_ATTRIBUTES:
                assert NOT_A_COLOUR.match(value.strip()), (
                    f"<{tag} {name}={value!r}>: colours come from the classes in diagrams.css"
                )
            if name == "style":
                assert not STYLE_COLOUR.search(value), f"<{tag} style={value!r}> sets a colour"
    assert not HEX_COLOUR.findall(URL_REF.sub("", source)), "a hex colour is written in the file"
    assert "rgb(" not in source and "hsl(" not in source


@pytest.mark.parametrize("path", SVG_FILES, ids=SVG_IDS)
def test_classes_exist_and_references_resolve(path):
    ids = {element.get("id") for element in elements(path)} - {None}
    for element in elements(path):
        for name in element.get("class", "").split():
            assert name in css_classes(), f"class {name!r} is not defined in {CSS.name}"
        for value in element.attrib.values():
            for target in URL_REF.findall(value):
                assert target in ids, f"url(#{target}) points at no id in this file"
    for element in elements(path):
        if local(element.tag) in {"marker", "pattern", "clipPath", "linearGradient", "mask"}:
            assert element.get("id", "").startswith(f"{path.stem}-"), (
                f"<{local(element.tag)} id={element.get('id')!r}>: prefix it with "
                f"'{path.stem}-' so that two diagrams on one page cannot collide"
            )


def test_ids_are_unique_across_all_diagrams():
    seen: dict[str, str] = {}
    for path in SVG_FILES:
        for element in elements(path):
            element_id = element.get("id")
            if element_id is None:
                continue
            assert element_id not in seen, (
                f"id {element_id!r} in {path.name} and {seen[element_id]}"
            )
            seen[element_id] = path.name


@pytest.mark.parametrize("path", SVG_FILES, ids=SVG_IDS)
def test_no_blank_lines(path):
    # A blank line would end the raw HTML block the snippet is inlined into.
    lines = path.read_text(encoding="utf-8").splitlines()
    blank = [number for number, line in enumerate(lines, 1) if not line.strip()]
    assert not blank, f"blank lines at {blank}"


@pytest.mark.parametrize("path", SVG_FILES, ids=SVG_IDS)
def test_text_is_readable(path):
    for element in elements(path):
        if local(element.tag) in {"text", "tspan"}:
            size = element.get("font-size")
            assert size is None or float(size) >= 12, f"font-size {size} is under 12"


def foreign_letters(label: str, letters: frozenset[str]) -> list[str]:
    """The sizes in the shape labels of ``label`` that notation.md does not define.

    A parenthesised list counts as a shape when its items are identifiers or
    integers and at least one is a notation letter: ``(B, T, D)`` gives ``["T"]``,
    while ``transpose(1, 2)``, ``masked_fill(~mask, -inf)`` and ``(GQA, MQA)``
    are not shapes.
    """
    foreign: list[str] = []
    for inside in SHAPE.findall(label):
        items = [item.strip().translate(SUBSCRIPTS) for item in inside.split(",")]
        sizes = [item for item in items if not re.fullmatch(r"-?\d+", item)]
        if not all(re.fullmatch(r"[A-Za-z]\w*", item) for item in sizes):
            continue
        if any(item in letters for item in sizes):
            foreign += [item for item in sizes if item not in letters]
    return foreign


def test_the_shape_check_tells_shapes_from_other_parentheses():
    letters = notation_letters()
    assert {"B", "L", "S", "D", "H", "Dh", "d_k", "d_v"} <= letters, "notation.md's tables not read"
    assert foreign_letters("(B, T, D) and (L, dₖ)", letters) == ["T"]
    assert foreign_letters("(B, 1, L, S)", letters) == []
    assert foreign_letters("transpose(1, 2), fill(~mask, -inf), (GQA, MQA)", letters) == []


@pytest.mark.parametrize("path", SVG_FILES, ids=SVG_IDS)
def test_shape_labels_use_the_notation_letters(path):
    labels = [text_of(e) for e in elements(path) if local(e.tag) == "text"]
    labels.append(text_of(parsed(path).find(f"{SVG_NS}desc")))
    for label in labels:
        foreign = foreign_letters(label, notation_letters())
        assert not foreign, f"{label!r}: {foreign} are not letters of notation.md"


@pytest.mark.parametrize("path", SVG_FILES, ids=SVG_IDS)
def test_each_diagram_is_on_exactly_one_page(path):
    places = includes().get(path.name, [])
    pages = [str(page.relative_to(ROOT)) for page, _ in places]
    assert len(places) == 1, f"{path.name} is included by {len(places)} pages: {pages}"


def test_every_include_names_an_existing_diagram():
    missing = sorted(set(includes()) - {path.name for path in SVG_FILES})
    assert not missing, f"pages include diagrams that do not exist: {missing}"


@pytest.mark.parametrize("name", sorted(includes()), ids=str)
def test_each_include_sits_in_a_numbered_figure_near_the_top(name):
    for page, index in includes()[name]:
        lines = page.read_text(encoding="utf-8").splitlines()
        where = f"{page.relative_to(ROOT)}:{index + 1}"
        opening = FIGURE_OPEN.match(lines[index - 1].strip())
        assert opening, f"{where}: the line before the include must open a figure.diagram"
        assert opening["id"] == f"fig-{Path(name).stem}-diagram", where
        # The caption may wrap over several lines (no blank line inside it).
        end = index + 1
        while end < len(lines) and lines[end].strip() and "</figcaption>" not in lines[end]:
            end += 1
        caption = " ".join(line.strip() for line in lines[index + 1 : end + 1])
        assert caption.startswith("<figcaption>") and caption.endswith("</figcaption>"), (
            f"{where}: a <figcaption> right after the include"
        )
        text = re.sub(r"<[^>]+>", "", caption).strip()
        assert len(text.split()) >= 6, f"{where}: the caption should say what to look at"
        assert lines[end + 1].strip() == "</figure>", where
        assert not lines[index - 2].strip() and not lines[end + 2].strip(), (
            f"{where}: a blank line before and after the figure"
        )
        before = lines[: index - 1]
        fences = [line for line in before if line.lstrip().startswith(("```", "~~~"))]
        assert not fences, f"{where}: the diagram comes after a code block; put it near the top"


# C2: every chapter of the nav has its own explanatory diagram, named after the page.
NAV_CHAPTER = re.compile(r":\s*chapters/(?P<stem>[\w-]+)\.md\s*$")


def nav_chapter_stems() -> list[str]:
    """The stems of the chapter pages listed in mkdocs.yml's nav, in order."""
    lines = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").splitlines()
    return [match["stem"] for line in lines if (match := NAV_CHAPTER.search(line))]


def test_the_nav_lists_chapters():
    assert len(nav_chapter_stems()) >= 14, "no chapters found in mkdocs.yml's nav"


@pytest.mark.parametrize("stem", nav_chapter_stems(), ids=str)
def test_every_chapter_includes_its_diagram(stem):
    path = DIAGRAMS / f"{stem}.svg"
    assert path.exists(), f"chapter {stem} has no diagram {path.relative_to(ROOT)}"
    pages = [page.relative_to(DOCS).as_posix() for page, _ in includes().get(path.name, [])]
    assert pages == [f"chapters/{stem}.md"], (
        f"{path.name} should be included by chapters/{stem}.md, is included by {pages}"
    )
