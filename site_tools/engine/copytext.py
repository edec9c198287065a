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
from html.parser import HTMLParser
from pathlib import Path

from attention_src.machinery.source import ModuleSource, free_names, module_file, read_module

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

VOID = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
    "param", "source", "track", "wbr", "path", "rect", "circle", "line", "use",
}  # fmt: skip


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


class _Element:
    __slots__ = ("attrs", "parts", "tag")

    def __init__(self, tag: str, attrs: dict[str, str]):
        self.tag, self.attrs, self.parts = tag, attrs, []


class _CopyParser(HTMLParser):
    """Collects the copy texts of a page's Python blocks and notebook cells."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[_Element] = []
        self.blocks: list[CopyBlock] = []
        self.texts: dict[str, str] = {}  # id -> textContent, for clipboard-copy targets
        self.cells: list[str] = []  # clipboard-copy `for` ids, in order
        self.capturing: list[_Element] = []

    def handle_starttag(self, tag, attrs):
        element = _Element(tag, {k: v or "" for k, v in attrs})
        if tag == "clipboard-copy" and element.attrs.get("for"):
            self.cells.append(element.attrs["for"])
        if tag in VOID:
            return
        self.stack.append(element)
        classes = element.attrs.get("class", "").split()
        if tag == "code" and self._python_block() is not None:
            self.capturing.append(element)
        elif tag == "span" and "filename" in classes and self._python_block() is not None:
            self.capturing.append(element)
        elif "clipboard-copy-txt" in classes and element.attrs.get("id"):
            self.capturing.append(element)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        while self.stack:
            element = self.stack.pop()
            if element in self.capturing:
                self.capturing.remove(element)
                self._finish(element)
            if element.tag == tag:
                break

    def handle_data(self, data):
        for element in self.capturing:
            element.parts.append(data)

    def _python_block(self) -> _Element | None:
        """The ``div.language-python.highlight`` around the current point, if it
        is a page's code block (not a mkdocstrings signature or source box)."""
        found = None
        for element in self.stack:
            classes = element.attrs.get("class", "").split()
            if "doc-object" in classes or "doc-signature" in classes:
                return None
            if element.tag == "div" and {"language-python", "highlight"} <= set(classes):
                found = element
        return found

    def _finish(self, element: _Element) -> None:
        text = "".join(element.parts)
        block = self._python_block()
        if element.tag == "span":  # a title bar: "attention_src/x.py" marks a listing
            found = LISTING_TITLE.match(text.strip())
            block.attrs["data-title"] = found[0] if found else ""
            return
        if element.tag != "code":
            self.texts[element.attrs["id"]] = text
            return
        copy = None
        skip = None
        for ancestor in reversed([*self.stack, element]):
            if copy is None and "data-copy" in ancestor.attrs:
                copy = ancestor.attrs["data-copy"]
            if skip is None and "data-skip-reason" in ancestor.attrs:
                skip = ancestor.attrs["data-skip-reason"]
        shown = text.rstrip()
        self.blocks.append(
            CopyBlock(
                index=0,
                kind="python",
                code=(copy if copy is not None else text).rstrip(),
                shown=shown,
                raises=block.attrs.get("data-raises") or None,
                skip=skip,
                listing=block.attrs.get("data-title") or None,
            )
        )


def page_copies(page_html: str) -> list[CopyBlock]:
    """Every Python block and notebook code cell of a built page, as copied."""
    parser = _CopyParser()
    parser.feed(page_html)
    parser.close()
    blocks = list(parser.blocks)
    for cell in parser.cells:
        if cell in parser.texts:
            text = parser.texts[cell]
            blocks.append(CopyBlock(0, "notebook", text, text))
    for number, block in enumerate(blocks, start=1):
        block.index = number
    return blocks


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


_LISTING = re.compile(
    r'<div class="language-python highlight">'
    r'<span class="filename">(?P<title>[^<]*)</span>'
    r"(?P<body>.*?</code></pre></div>)",
    re.DOTALL,
)
_TAG = re.compile(r"<[^>]+>")


COPY_NOTE = {
    "en": ("copy adds {adds}", "its imports", "the helper", "the helpers", "the rest of the class"),
    "zh": ("复制时加上{adds}", "所需的导入", "辅助函数 ", "辅助函数 ", "类的其余部分"),
}


def add_listing_copies(page_html: str, lang: str = "en") -> str:
    """Give every listing titled ``attention_src/....py`` a ``data-copy`` with its imports
    (``lang``: the edition, whose words the title's note uses)."""
    note_words, imports, helper, helpers, rest = COPY_NOTE[lang]
    comma = "、" if lang == "zh" else ", "

    def replace(match: re.Match) -> str:
        title = html.unescape(match["title"]).strip()
        if not LISTING_TITLE.fullmatch(title):
            return match[0]
        body = match["body"]
        code = html.unescape(_TAG.sub("", body[: body.rindex("</code>")]))
        module = title[:-3].replace("/", ".")
        copy = listing_copy(code, module)
        adds = imports
        if copy.helpers:
            names = ", ".join(f"{n}()" if copy_is_function(n, module) else n for n in copy.helpers)
            adds += f"{comma}{helpers if len(copy.helpers) > 1 else helper} {names}".replace(
                "  ", " "
            )
        if copy.methods:
            adds += f"{comma}{rest} (" + ", ".join(copy.methods) + ")"
        note = f'<span class="copy-note">{html.escape(note_words.format(adds=adds))}</span>'
        return (
            f'<div class="language-python highlight listing" '
            f'data-listing="{html.escape(title)}" '
            f'data-copy="{html.escape(copy.text, quote=True)}">'
            f'<span class="filename">{match["title"]}{note}</span>{body}'
        )

    return _LISTING.sub(replace, page_html)
