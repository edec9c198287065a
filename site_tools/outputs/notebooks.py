"""Every chapter as a notebook.

:func:`page_notebook` turns a chapter's built HTML into a Jupyter notebook that
reads like the page: the prose as Markdown cells (converted by ``markdownify``;
math back to ``$…$``; admonitions and folded solutions as quotes; links made
absolute, since a downloaded notebook has no site around it; diagrams as
attachments) and, as code cells, exactly the texts the page's copy buttons give
(:func:`site_tools.engine.copytext.page_copies`), in page order. A block marked
``raises=`` becomes a cell tagged ``raises-exception`` whose first line says that
it raises. The outputs the build printed, and the figures it drew, are attached
to their cells, so the notebook reads like the page before it is run. The build
writes ``<stem>.ipynb`` next to each chapter's page (``hooks.on_post_page``); the
theme's download button links it. Its first cell installs the package the site
serves (:mod:`site_tools.outputs.wheel`).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import html
import os
import re
import shutil
from pathlib import Path
from urllib.parse import urljoin

from site_tools.engine import markup
from site_tools.engine.markup import Source, parse
from site_tools.outputs import wheel
from site_tools.outputs.wheel import install_lines, site_url, wheel_name

ROOT = Path(__file__).resolve().parents[2]
RAISES_NOTE = {
    "en": "# This cell raises {name} on purpose: the page shows the error it gives.",
    "zh": "# 这个单元格故意抛出 {name}：页面上展示的就是它给出的错误。",
}
INTRO = {
    "en": (
        "The chapter [{name}]({page}) of *Attention, from the ground up*, as a "
        "notebook: its prose, and as code cells exactly the code its copy buttons give, "
        "in page order, with the outputs the site's build printed. Install the package "
        "first (in a terminal, or in a cell with `%pip` in place of `pip`; the second "
        "half is for the chapters of Part III):"
    ),
    "zh": (
        "《从零开始理解注意力》的章节[{name}]({page})的笔记本版：正文，以及按页面顺序排列、"
        "与复制按钮给出的代码完全相同的代码单元格，附带网站构建时打印的输出。先安装软件包"
        "（在终端里运行，或在单元格里把 `pip` 换成 `%pip`；后半部分是第三部分各章要用的）："
    ),
}


def page_language(page) -> str:
    """The edition a built page belongs to: ``en`` or ``zh`` (its ``<html lang>``)."""
    root = page.find("html")
    return "zh" if root is not None and root.get("lang", "").lower().startswith("zh") else "en"


# Material's light colours, for the diagrams' classes outside the site (a notebook
# has none of the site's stylesheets): the same rules, the variables resolved.
_LIGHT = {
    "--md-default-fg-color": "rgba(0, 0, 0, 0.87)",
    "--md-default-fg-color--light": "rgba(0, 0, 0, 0.54)",
    "--md-default-fg-color--lighter": "rgba(0, 0, 0, 0.32)",
    "--md-default-fg-color--lightest": "rgba(0, 0, 0, 0.07)",
    "--md-code-bg-color": "#f5f5f5",
    "--md-accent-fg-color": "#ff6e42",
    "--md-text-font-family": "sans-serif",
    "--md-code-font-family": "monospace",
}


# --- the notebook ----------------------------------------------------------------------


def _markdownify(element) -> str:
    from markdownify import MarkdownConverter

    return MarkdownConverter(heading_style="ATX", bullets="-", escape_misc=False).convert_soup(
        element
    )


def _math_to_dollars(element) -> dict[str, str]:
    """Replace the page's math by placeholders (markdownify would escape it)."""
    kept = {}
    for number, node in enumerate(element.select(".arithmatex")):
        text = node.get_text()
        if text.startswith("\\(") and text.endswith("\\)"):
            math = f"${text[2:-2].strip()}$"
        elif text.startswith("\\[") and text.endswith("\\]"):
            math = f"\n$$\n{text[2:-2].strip()}\n$$\n"
        else:
            math = text
        key = f"MATHPLACEHOLDER{number}X"
        kept[key] = math
        node.replace_with(key)
    return kept


def _svg_with_light_style(svg: str) -> str:
    css = (ROOT / "docs/assets/stylesheets/diagrams.css").read_text("utf-8")
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    css = re.sub(r"\[data-md-color-scheme=\"slate\"\][^{]*\{[^}]*\}", "", css)
    css = re.sub(r"var\((--[\w-]+)\)", lambda m: _LIGHT.get(m[1], "currentColor"), css)
    css = css.replace(".diagram .", ".")  # the rules, for an SVG standing alone
    source = Source(svg)
    root = source.soup.find("svg")
    at = source.start(root) + len("<svg")
    added = "" if "xmlns" in root.attrs else ' xmlns="http://www.w3.org/2000/svg"'
    # an image needs its own size: the viewBox's, when the SVG gives none
    box = re.fullmatch(r"[\d.\s-]*?([\d.]+)\s+([\d.]+)", root.get("viewbox", ""))
    if box and "width" not in root.attrs:
        added += f' width="{box[1]}" height="{box[2]}"'
    source.insert(at, added)
    source.insert(source.inner_start(root), f"<style>{html.escape(css, quote=False)}</style>")
    return source.edited()


def _figure_svg(figure, page: Source) -> str | None:
    """The SVG text of a built figure (a data-URI image) or an inline one. An inline
    SVG is cut from the page's own text: an HTML parser lowercases SVG's attribute
    names (``viewBox``), which an image standing alone needs as written."""
    for node in figure.find_all(["img", "a"]):
        ref = node.get("src") or node.get("href") or ""
        if ref.startswith("data:image/svg+xml;base64,"):
            return base64.b64decode(ref.split(",", 1)[1]).decode("utf-8")
    inline = figure.find("svg") if figure.get("id") else None
    return page.text[page.start(inline) : page.end(inline)] if inline is not None else None


class _Builder:
    def __init__(self, copies, page_url: str, site_url: str, page: Source):
        import nbformat

        self.nbf = nbformat.v4
        self.copies = list(copies)
        self.next_copy = 0
        self.base = urljoin(site_url or "/", page_url)
        self.page = page
        self.cells: list = []
        self.markdown: list[str] = []
        self.attachments: dict = {}

    # Markdown accumulates until a code cell starts
    def prose(self, text: str) -> None:
        if text.strip():
            self.markdown.append(text.strip())

    def flush(self) -> None:
        if self.markdown:
            cell = self.nbf.new_markdown_cell("\n\n".join(self.markdown))
            if self.attachments:
                cell["attachments"] = self.attachments
            self.cells.append(cell)
        self.markdown, self.attachments = [], {}

    def code(self, box) -> None:
        if self.next_copy >= len(self.copies):
            raise ValueError("more code boxes on the page than copy texts")
        block = self.copies[self.next_copy]
        self.next_copy += 1
        self.flush()
        source = block.code
        metadata = {}
        if block.raises:
            note = RAISES_NOTE[page_language(self.page.soup)]
            source = note.format(name=block.raises) + "\n" + source
            metadata["tags"] = ["raises-exception"]
        cell = self.nbf.new_code_cell(source, metadata=metadata)
        self.cells.append(cell)

    def _last_code(self):
        for cell in reversed(self.cells):
            if cell.cell_type == "code":
                return cell
        return None

    def output(self, box) -> None:
        cell = self._last_code()
        if cell is None:
            return
        text = box.get_text()
        if "exec-error" in (box.get("class") or []):
            name, _, value = text.strip().partition(": ")
            cell.outputs.append(
                self.nbf.new_output("error", ename=name, evalue=value, traceback=[text])
            )
        else:
            cell.outputs.append(self.nbf.new_output("stream", name="stdout", text=text))

    def figure(self, figure, caption: str) -> None:
        svg = _figure_svg(figure, self.page)
        diagram = "diagram" in (figure.get("class") or [])
        cell = self._last_code()
        if svg is not None and not diagram and cell is not None and not self.markdown:
            cell.outputs.append(
                self.nbf.new_output(
                    "display_data", data={"image/svg+xml": svg, "text/plain": caption}
                )
            )
        elif svg is not None:
            name = f"{figure.get('id') or 'figure'}.svg"
            data = _svg_with_light_style(svg) if diagram else svg
            self.attachments[name] = {
                "image/svg+xml": base64.b64encode(data.encode("utf-8")).decode("ascii")
            }
            self.prose(f"![{caption}](attachment:{name})")
        if caption:
            self.prose(f"*{caption}*")

    def links_absolute(self, element) -> None:
        for a in element.find_all("a", href=True):
            href = a["href"]
            if href.startswith("#"):
                continue  # an anchor on this page: the notebook keeps the headings
            a["href"] = urljoin(self.base, href)


def _caption(figure) -> str:
    cap = figure.find("figcaption")
    return " ".join(cap.get_text(" ").split()) if cap else ""


def _is_code(node) -> bool:
    classes = node.get("class") or []
    return node.name == "div" and "language-python" in classes and "highlight" in classes


def _is_output(node) -> bool:
    return node.name == "div" and "exec-output" in (node.get("class") or [])


def _contains_code(node) -> bool:
    return any(_is_code(d) for d in node.find_all("div"))


def _walk(builder: _Builder, nodes, quote: str = "") -> None:
    for node in nodes:
        if not getattr(node, "name", None):
            continue
        if _is_code(node):
            builder.code(node)
        elif _is_output(node):
            builder.output(node)
        elif node.name == "figure":
            builder.figure(node, _caption(node))
        elif node.name in ("details", "div") and (
            node.name == "details" or "admonition" in (node.get("class") or [])
        ):
            title_node = node.find(["summary", "p"], recursive=False)
            title = title_node.get_text(" ").strip() if title_node else ""
            is_title = title_node is not None and (
                title_node.name == "summary"
                or "admonition-title" in (title_node.get("class") or [])
            )
            if is_title:
                title_node.extract()
            heading = f"**{title}**\n\n" if title else ""
            if _contains_code(node):
                builder.prose(_quoted(heading))
                _walk(builder, list(node.children), quote="> ")
            else:
                builder.prose(_quoted(heading + _prose(builder, node)))
        elif _contains_code(node):  # a list item or a box holding code: its parts in order
            _walk(builder, list(node.children), quote)
        elif node.name in ("script", "style"):
            continue
        else:
            text = _prose(builder, node)
            builder.prose(_quoted(text) if quote else text)


def _quoted(text: str) -> str:
    return "\n".join("> " + line if line.strip() else ">" for line in text.strip().splitlines())


def _prose(builder: _Builder, node) -> str:
    node = copy.copy(node)
    for link in node.select("a.headerlink"):
        link.decompose()
    builder.links_absolute(node)
    kept = _math_to_dollars(node)
    text = _markdownify(node)
    for key, math in kept.items():
        text = text.replace(key, math)
    return text.strip()


def page_notebook(page_html: str, *, page_url: str, site_url: str, title: str = ""):
    """The notebook of a built chapter page (see the module's docstring)."""
    import nbformat

    from site_tools.engine.copytext import copies_in

    page = Source(page_html, soup=parse(page_html))  # a parse of its own: this changes it
    copies = [b for b in copies_in(page.soup) if b.kind == "python"]
    language = page_language(page.soup)
    article = page.soup.find("article")
    if article is None:
        raise ValueError(f"{page_url}: no <article> in the page")
    # Links lead into the page's own edition; the install lines to the one package.
    edition_url = urljoin(site_url or "/", "zh/") if language == "zh" else site_url
    builder = _Builder(copies, page_url, edition_url, page)
    heading = article.find("h1")
    if heading is not None:
        heading.extract()
    for button in article.select("a.md-content__button"):  # download, edit: the site's
        button.extract()
    nodes = [n for n in article.children if getattr(n, "name", None)]
    page_link = urljoin(edition_url or "/", page_url)
    name = heading.get_text().strip(" ¶") if heading is not None else title
    intro = INTRO[language].format(name=name, page=page_link)
    builder.prose(
        f"# {name}\n\n{intro}\n\n```bash\n" + "\n".join(install_lines(site_url)) + "\n```"
    )
    builder.flush()
    _walk(builder, nodes)
    builder.flush()
    if builder.next_copy != len(copies):
        raise ValueError(
            f"{page_url}: {len(copies)} copy texts but {builder.next_copy} code boxes found"
        )
    notebook = nbformat.v4.new_notebook(
        cells=builder.cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    for number, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{number}"  # the same notebook from the same page
    nbformat.validate(notebook)
    return notebook


def notebook_name(page_url: str) -> str:
    """``chapters/masks/`` -> ``masks.ipynb``."""
    return f"{page_url.strip('/').split('/')[-1]}.ipynb"


def write_notebook(page_html: str, *, page_url: str, site_dir: str | Path, cache: Path) -> Path:
    """Write the chapter's notebook next to its built page; reuse the one made from
    the same page by the same code (the key covers both)."""
    from site_tools.engine import copytext

    digest = hashlib.sha256()
    for part in (page_html, page_url, site_url(), wheel_name()):
        digest.update(part.encode("utf-8") + b"\0")
    for module in (Path(__file__), *(Path(m.__file__) for m in (copytext, markup, wheel))):
        digest.update(module.read_bytes())
    kept = Path(cache) / f"{digest.hexdigest()[:24]}.ipynb"
    if not kept.exists():
        import nbformat

        notebook = page_notebook(page_html, page_url=page_url, site_url=site_url())
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_suffix(f".tmp-{os.getpid()}")
        nbformat.write(notebook, tmp)
        os.replace(tmp, kept)
    os.utime(kept)  # used now: a full build prunes what it did not use
    target = Path(site_dir) / page_url / notebook_name(page_url)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(kept, target)
    return target


def prune_notebooks(cache: Path, started: float) -> int:
    """Delete the kept notebooks a full build did not use (older than its start)."""
    removed = 0
    for path in Path(cache).glob("*.ipynb"):
        if path.stat().st_mtime < started:
            path.unlink(missing_ok=True)
            removed += 1
    return removed
