"""What a code block's copy button gives the reader.

The contract of the site: the text a reader copies from a page, pasted block by
block into a fresh Python session in page order, runs. Two pieces make it hold.

**Listings copy with their imports.** A listing included from ``attention_src``
(a fence titled with its source file, holding a ``--8<--`` region) shows the
region as it stands in the module. On its own that text would fail: the region
uses the module's imports and helpers. :func:`add_listing_copies` gives each
such block a ``data-copy`` attribute -- Material's copy button copies that
attribute instead of the shown text -- holding the import lines the region
needs, the definitions of the private helpers of its module that it calls
(which a reader could not import), then every shown line
(:func:`listing_copy`). The block's title bar says what the copy adds.

**The copy texts are read back from the built page.** :func:`page_copies`
reads a built HTML page the way the copy buttons do (Material's ``data-copy``
or the code's text; mkdocs-jupyter's ``<clipboard-copy for=...>``, which copies
the ``textContent`` of the element it names) and returns one
:class:`CopyBlock` per block, in page order. The build writes them next to the
site (:func:`write_page_copies`), and ``python -m site_tools.engine.copyrun`` runs
them; the doc tests run exactly those texts.
"""

from __future__ import annotations

import ast
import html
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from bs4 import BeautifulSoup, Tag
from bs4.filter import ElementFilter

from attention_src.machinery.source import ModuleSource, free_names, module_file, read_module
from site_tools.engine.markup import Source, classes, parse

PACKAGE = "attention_src"
COPY_DIR = "_copies"  # under the built site: one JSON file per page
LISTING_TITLE = re.compile(r"attention_src/[\w/]+\.py")


class CopyError(ValueError):
    """A listing whose copy could not run on its own."""


# --- listings: the imports a region needs -------------------------------------


@dataclass(frozen=True)
class _Binding:
    module: str  # where the name comes from, absolute
    name: str | None  # the imported name (None for ``import module``)
    asname: str  # the name bound in the module
    section: int  # 1 standard library, 2 third party, 3 this project


def _section(module: str) -> int:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names:
        return 1
    return 3 if top in {PACKAGE, "site_tools"} else 2


def _read(module: str) -> ModuleSource:
    path = module_file(module)
    if path is None:
        raise CopyError(f"a listing names {module}, which is not a module of {PACKAGE}")
    return read_module(path, module)


def _binding(info: ModuleSource, name: str) -> _Binding | None:
    """Where a top-level name of the module comes from (its own definitions first)."""
    if name in info.definitions:
        return _Binding(info.module, name, name, 3)
    found = info.imports.get(name)
    if found is None or found.module == "__future__":
        return None
    return _Binding(found.module, found.name, name, _section(found.module))


def _from_imports(bindings: list[_Binding]) -> list[str]:
    """``from m import a, b as c`` lines, one per module, sorted."""
    by_module: dict[str, list[str]] = {}
    for b in bindings:
        text = b.name if b.asname == b.name else f"{b.name} as {b.asname}"
        by_module.setdefault(b.module, []).append(text)
    return [f"from {m} import {', '.join(sorted(names))}" for m, names in sorted(by_module.items())]


@dataclass
class ListingCopy:
    """What the copy of a listing holds besides its shown lines."""

    imports: list[str]  # import lines, grouped like the package's own
    helpers: list[str]  # names of private helpers whose definitions travel with it
    text: str  # the whole copy text
    rest_of_class: str = ""  # the class's remaining lines, when the region ends inside it
    methods: tuple[str, ...] = ()  # the methods those lines define


_MARKER = re.compile(r"^\s*# --8<-- \[(start|end):[\w-]+\]\s*$")


def _rest_of_class(code: str, path: Path) -> tuple[str, tuple[str, ...]]:
    """The lines of the module's class after a region that ends inside the class."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    shown = code.rstrip().splitlines()
    starts = [i for i in range(len(lines) - len(shown) + 1) if lines[i : i + len(shown)] == shown]
    if len(starts) != 1:
        return "", ()
    end = starts[0] + len(shown)  # 0-based, exclusive: the region's last line is end - 1
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.ClassDef)
            and starts[0] < node.lineno <= end
            and node.end_lineno > end
        ):
            rest = [line for line in lines[end : node.end_lineno] if not _MARKER.match(line)]
            while rest and not rest[0].strip():
                rest.pop(0)
            methods = tuple(
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.lineno > end
            )
            return "\n".join(rest), methods
    return "", ()


def listing_copy(code: str, module: str) -> ListingCopy:
    """The copy of a region of ``module``: imports, private helpers, shown lines.

    The region is shown as it stands in the module; on its own it would fail
    with a ``NameError``. Its copy adds the import lines for the names it uses
    (public names of its own module are imported from it, as a reader would)
    and the definitions of the module's private helpers it calls, with their
    own needs, recursively. A region that ends inside a class (showing only
    ``__init__`` and ``forward``, say) copies with the rest of the class after
    the shown lines, so that the reader's class is the module's.

    Raises:
        CopyError: when the region uses a name that is not a builtin, not
            imported by the module and not defined in it.
    """
    first = next((line for line in code.splitlines() if line.strip()), "")
    if first[:1].isspace():
        raise CopyError(
            f"a listing from {module} starts indented ({first.strip()[:40]!r}): a region "
            "must start at the top level (a `class` or `def` line), so that its copy runs "
            "alone; end it inside the class to show only some methods"
        )
    info = _read(module)
    rest, methods = _rest_of_class(code, module_file(module))
    needed: dict[str, _Binding] = {}
    helpers: set[str] = set()
    pending = sorted(free_names(code.rstrip() + ("\n\n" + rest if rest else "")))
    while pending:
        name = pending.pop()
        if name in needed or name in helpers:
            continue
        binding = _binding(info, name)
        if binding is None:
            raise CopyError(
                f"a listing from {module} uses {name!r}, which the module neither "
                "imports nor defines"
            )
        if binding.module == module and name.startswith("_"):
            helpers.add(name)
            pending.extend(sorted(free_names(info.definitions[name].source)))
        else:
            needed[name] = binding
    imports: list[str] = []
    if info.has_future:
        imports.append("from __future__ import annotations")
    for section in (1, 2, 3):
        group = [b for b in needed.values() if b.section == section]
        plain = sorted((b for b in group if b.name is None), key=lambda b: b.module)
        block = [
            *(
                f"import {b.module}" + ("" if b.asname == b.module else f" as {b.asname}")
                for b in plain
            ),
            *_from_imports([b for b in group if b.name is not None]),
        ]
        if block:
            if imports:
                imports.append("")
            imports.extend(block)
    definitions: list[str] = []
    helpers_in_order = sorted(helpers, key=lambda n: info.definitions[n].position)
    for name in helpers_in_order:
        if info.definitions[name].source not in definitions:
            definitions.append(info.definitions[name].source)
    parts = ["\n".join(imports)] if imports else []
    parts += definitions
    parts.append(code.rstrip() + ("\n\n" + rest if rest else ""))
    return ListingCopy(
        imports,
        helpers_in_order,
        "\n\n\n".join(parts),
        rest,
        methods,
    )


# --- reading the built HTML ----------------------------------------------------


@dataclass
class CopyBlock:
    """One block of a page as the reader copies it."""

    index: int  # 1-based, in page order
    kind: str  # "python" or "notebook"
    code: str  # the copy button's text
    shown: str  # the text shown on the page
    raises: str | None = None  # the exception the page shows right after it
    skip: str | None = None  # why a test does not run it (still copied by readers)
    listing: str | None = None  # the source file of an included listing

    def where(self, page: str) -> str:
        return f"{page}, block {self.index}" + (f" ({self.listing})" if self.listing else "")


PYTHON_BOX = {"language-python", "highlight"}  # the classes of a Python block's box


def _python_block(code: Tag) -> Tag | None:
    """The ``div.language-python.highlight`` around a ``<code>``, if it is a page's
    code block (not a mkdocstrings signature or source box)."""
    found = None
    for element in (code, *code.parents):
        names = classes(element)
        if "doc-object" in names or "doc-signature" in names:
            return None
        if found is None and element.name == "div" and PYTHON_BOX <= set(names):
            found = element
    return found


def _nearest(code: Tag, attribute: str) -> str | None:
    """The attribute's value on the ``<code>`` or its nearest ancestor that has it."""
    for element in (code, *code.parents):
        if isinstance(element, Tag) and attribute in element.attrs:
            return element[attribute]
    return None


def copies_in(soup: BeautifulSoup) -> list[CopyBlock]:
    """:func:`page_copies` of a page already parsed (which this leaves as it is)."""
    blocks: list[CopyBlock] = []
    for code in soup.find_all("code"):
        block = _python_block(code)
        if block is None:
            continue
        title = block.find("span", class_="filename")
        found = LISTING_TITLE.match(title.get_text().strip()) if title is not None else None
        text = code.get_text()
        copy = _nearest(code, "data-copy")
        blocks.append(
            CopyBlock(
                index=0,
                kind="python",
                code=(copy if copy is not None else text).rstrip(),
                shown=text.rstrip(),
                raises=block.get("data-raises") or None,
                skip=_nearest(code, "data-skip-reason"),
                listing=found[0] if found else None,
            )
        )
    # mkdocs-jupyter's buttons copy the textContent of the element they name
    cells = soup.find_all(class_="clipboard-copy-txt")
    texts = {t["id"]: t.get_text() for t in cells if t.get("id")}
    for button in soup.find_all("clipboard-copy"):
        if button.get("for") in texts:
            text = texts[button["for"]]
            blocks.append(CopyBlock(0, "notebook", text, text))
    for number, block in enumerate(blocks, start=1):
        block.index = number
    return blocks


def page_copies(page_html: str) -> list[CopyBlock]:
    """Every Python block and notebook code cell of a built page, as copied."""
    return copies_in(parse(page_html))


def write_page_copies(site_dir: str | Path, url: str, page_html: str) -> Path | None:
    """Write the page's copy texts to ``<site>/_copies/<url>.json`` (None if it has none)."""
    blocks = page_copies(page_html)
    if not blocks:
        return None
    path = copies_path(site_dir, url)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"page": url or "/", "blocks": [asdict(b) for b in blocks]}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def copies_path(site_dir: str | Path, url: str) -> Path:
    """Where the build writes a page's copy texts: ``<site>/_copies/<url>.json``."""
    name = url.strip("/").replace("/", "--") or "index"
    return Path(site_dir) / COPY_DIR / f"{name}.json"


# --- the build: data-copy on listings --------------------------------------------


def copy_is_function(name: str, module: str) -> bool:
    return _read(module).definitions[name].kind == "function"


COPY_NOTE = {
    "en": ("copy adds {adds}", "its imports", "the helper", "the helpers", "the rest of the class"),
    "zh": ("复制时加上{adds}", "所需的导入", "辅助函数 ", "辅助函数 ", "类的其余部分"),
}


class _Listings(ElementFilter):
    """Builds only what marks a listing: a title (``span.filename``) and the ``<pre>``
    right after it. A page's code boxes are most of its elements, and a box's start
    tag does not say whether a title follows."""

    def __init__(self):
        super().__init__()
        self.after_title = False

    def allow_tag_creation(self, nsprefix, name, attrs) -> bool:
        title = name == "span" and (attrs or {}).get("class") == "filename"
        keep = title or (name == "pre" and self.after_title)
        self.after_title = title
        return keep

    def allow_string_creation(self, string) -> bool:
        return False


def add_listing_copies(page_html: str, lang: str = "en") -> str:
    """Give every listing titled ``attention_src/....py`` a ``data-copy`` with its imports
    (``lang``: the edition, whose words the title's note uses)."""
    if "attention_src/" not in page_html:  # no listing's title names a file
        return page_html
    note_words, imports, helper, helpers, rest = COPY_NOTE[lang]
    comma = "、" if lang == "zh" else ", "
    page = Source(page_html, _Listings())
    for title in page.soup.find_all("span", recursive=False):
        name, code = title.get_text().strip(), title.next_sibling
        if title.find(True) is not None or not LISTING_TITLE.fullmatch(name):
            continue
        # The listing's box: the start tag right before its title, and its code right after.
        box_start = page.text.rfind("<", 0, page.start(title))
        box = parse(page.text[box_start : page.start(title)]).find(True)
        if (
            box is None
            or box.contents
            or (box.name, box.attrs) != ("div", {"class": ["language-python", "highlight"]})
            or code is None
            or page.start(code) != page.end(title)
        ):
            continue
        module = name[:-3].replace("/", ".")
        copy = listing_copy(code.get_text(), module)
        adds = imports
        if copy.helpers:
            names = ", ".join(f"{n}()" if copy_is_function(n, module) else n for n in copy.helpers)
            adds += f"{comma}{helpers if len(copy.helpers) > 1 else helper} {names}".replace(
                "  ", " "
            )
        if copy.methods:
            adds += f"{comma}{rest} (" + ", ".join(copy.methods) + ")"
        page.replace(
            box_start,
            page.start(title),
            f'<div class="language-python highlight listing" '
            f'data-listing="{html.escape(name)}" '
            f'data-copy="{html.escape(copy.text, quote=True)}">',
        )
        note = html.escape(note_words.format(adds=adds))
        page.insert(page.inner_end(title), f'<span class="copy-note">{note}</span>')
    return page.edited()
