"""Every chapter as a notebook, and the package as the wheel a reader installs.

- Every chapter of the nav has its notebook next to its page, and a download button.
- Each notebook is valid nbformat 4; its code cells are the page's copy texts, in page
  order (a cell that raises on purpose is tagged ``raises-exception`` and says so in a
  first comment); its Markdown has the page's title and section headings, and its
  first cell says how to install the package.
- One chapter's notebook runs top to bottom in a fresh kernel (the copy-text test runs
  every page's code already: the notebooks are not run twice).
- The wheel holds every module of ``attention_src`` and nothing of ``site_tools``; its
  metadata declares the ``models`` extra. In a fresh virtual environment holding only
  the wheel, what it declares and the pinned model packages (linked from this
  machine's environment, torch included, as ``./dev.sh`` sees them), every module
  that every page's copy texts import resolves, and the copy texts of one Part I and
  one Part III chapter run.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup, SoupStrainer
from packaging.requirements import Requirement

from site_tools.engine.copytext import COPY_DIR
from site_tools.outputs import notebooks
from site_tools.outputs.wheel import DOWNLOADS, wheel_name

from .test_teaching_path import nav_chapters

ROOT = Path(__file__).resolve().parents[2]
RUN_IN_A_KERNEL = "masks"  # Part I, with cells that raise on purpose
RUN_FROM_THE_WHEEL = ("masks", "real-encoder")  # one Part I and one Part III chapter
CONTRIBUTORS_PAGE = "contributing"  # shows site_tools to people who edit the site


def copies(site: Path, name: str) -> list[dict]:
    path = site / COPY_DIR / f"{name}.json"
    return json.loads(path.read_text("utf-8"))["blocks"] if path.exists() else []


def chapter_notebook(site: Path, stem: str) -> Path:
    return site / "chapters" / stem / notebooks.notebook_name(f"chapters/{stem}/")


def test_every_chapter_offers_its_notebook(built_site):
    for stem in nav_chapters():
        page = BeautifulSoup(
            (built_site.dir / "chapters" / stem / "index.html").read_text("utf-8"),
            "html.parser",
            parse_only=SoupStrainer("a"),  # the tree of the links alone: the pages are large
        )
        button = page.select_one("a.notebook-download")
        assert button is not None, f"{stem}: no download button"
        assert button["href"] == f"{stem}.ipynb", f"{stem}: the button links {button['href']}"
        assert chapter_notebook(built_site.dir, stem).is_file(), f"{stem}: no notebook"


def test_each_notebook_is_its_page(built_site):
    for stem in nav_chapters():
        notebook = nbformat.read(chapter_notebook(built_site.dir, stem), as_version=4)
        nbformat.validate(notebook)
        cells = [c for c in notebook.cells if c.cell_type == "code"]
        blocks = [b for b in copies(built_site.dir, f"chapters--{stem}") if b["kind"] == "python"]
        assert len(cells) == len(blocks), f"{stem}: {len(cells)} cells, {len(blocks)} copy texts"
        for cell, block in zip(cells, blocks, strict=True):
            source = cell.source
            if block["raises"]:
                note, _, source = source.partition("\n")
                assert note == notebooks.RAISES_NOTE["en"].format(name=block["raises"]), stem
                assert cell.metadata.get("tags") == ["raises-exception"], stem
            else:
                assert "raises-exception" not in cell.metadata.get("tags", []), stem
            assert source == block["code"], f"{stem}, block {block['index']}: not the copy text"
        prose = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
        plain = prose.replace("`", "").replace("*", "")  # headings' code and emphasis
        page = BeautifulSoup(
            (built_site.dir / "chapters" / stem / "index.html").read_text("utf-8"), "html.parser"
        )
        for heading in page.select("article h1, article h2"):
            text = heading.get_text().strip(" ¶").replace("\\(", "$").replace("\\)", "$")
            assert f"# {text}" in plain, f"{stem}: the notebook lacks the heading {text!r}"
        assert "pip install" in notebook.cells[0].source, f"{stem}: no install line first"
        printed = [c for c in cells if c.outputs]
        assert printed or not cells, f"{stem}: no output of the build attached"


def test_notebooks_embed_the_figures_their_pages_load(built_site):
    """A chapter loads its built figures from files of ``assets/figures/``
    (site_tools/engine/figure_files.py); its notebook, one file, holds the same bytes, in both
    editions."""
    checked = 0
    for edition in (built_site.dir, built_site.dir / "zh"):
        for stem in nav_chapters():
            page = edition / "chapters" / stem / "index.html"
            soup = BeautifulSoup(
                page.read_text("utf-8"), "html.parser", parse_only=SoupStrainer("figure")
            )
            figures = [
                (page.parent / img["src"]).resolve().read_bytes().decode("utf-8")
                for img in soup.select("figure.built-figure > img")
            ]
            if not figures:
                continue
            notebook = nbformat.read(chapter_notebook(edition, stem), as_version=4)
            embedded = set()
            for cell in notebook.cells:
                for output in cell.get("outputs", []):
                    embedded.add(output.get("data", {}).get("image/svg+xml"))
                for attachment in cell.get("attachments", {}).values():
                    data = attachment.get("image/svg+xml")
                    embedded.add(data and base64.b64decode(data).decode("utf-8"))
            missing = [k for k, svg in enumerate(figures) if svg not in embedded]
            assert missing == [], f"{page}: figures {missing} of {len(figures)} not in its notebook"
            checked += len(figures)
    assert checked >= 40, f"only {checked} built figures found in the chapters"


def test_a_notebook_runs_in_a_fresh_kernel(built_site, tmp_path):
    from nbclient import NotebookClient

    notebook = nbformat.read(chapter_notebook(built_site.dir, RUN_IN_A_KERNEL), as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    os.environ.setdefault("MPLBACKEND", "Agg")
    client.execute()
    errors = [
        (i, o.ename)
        for i, c in enumerate(notebook.cells)
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    tagged = [
        i for i, c in enumerate(notebook.cells) if "raises-exception" in c.metadata.get("tags", [])
    ]
    assert [i for i, _ in errors] == tagged, f"errors {errors}, tagged {tagged}"


# --- the wheel ---------------------------------------------------------------------


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(requirements: list[str], extras: tuple[str, ...] = ()) -> dict[str, object]:
    """The installed distributions that ``requirements`` need, recursively."""
    found: dict[str, object] = {}
    todo = [(Requirement(r), set(extras)) for r in requirements]
    while todo:
        req, wanted = todo.pop()
        env = {"extra": ""}
        if req.marker is not None and not any(
            req.marker.evaluate({**env, "extra": e}) for e in (wanted or {""})
        ):
            continue
        key = _key(req.name)
        if key in found:
            continue
        try:
            dist = distribution(req.name)
        except PackageNotFoundError:
            continue  # an optional dependency this machine does not have
        found[key] = dist
        for sub in dist.requires or []:
            todo.append((Requirement(sub), set(req.extras)))
    return found


def link_distributions(dists, into: Path) -> None:
    """Symlink each distribution's top-level folders and modules (and its metadata)."""
    into.mkdir(parents=True, exist_ok=True)
    for dist in dists:
        site = Path(dist.locate_file(""))
        tops = {Path(f).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            source = site / top
            target = into / top
            if source.exists() and not target.exists() and top != "__pycache__":
                target.symlink_to(source)


def reader_environment(where: Path, wheel: Path, requirements: list[str], extras=()) -> Path:
    """A venv at ``where`` with ``wheel`` installed (no deps, no index) and the
    distributions ``requirements`` name linked in; returns its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    deps = where / "machine-packages"
    link_distributions(closure(requirements, extras).values(), deps)
    (site / "machine-packages.pth").write_text(str(deps) + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            "-q",
            str(wheel),
        ],
        check=True,
    )
    return python


def wheel_of(site: Path) -> Path:
    path = site / DOWNLOADS / wheel_name()
    assert path.is_file(), f"the build served no {path.name}"
    return path


def test_the_wheel_is_the_package_and_nothing_else(built_site):
    wheel = wheel_of(built_site.dir)
    names = zipfile.ZipFile(wheel).namelist()
    tracked = subprocess.run(
        ["git", "ls-files", "attention_src"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    modules = {n for n in tracked if n.endswith(".py")}
    assert modules <= set(names), f"missing from the wheel: {sorted(modules - set(names))}"
    assert not [n for n in names if n.startswith("site_tools")]
    dist_info = wheel.name.split("-py3")[0] + ".dist-info"
    assert {n.split("/")[0] for n in names} == {"attention_src", dist_info}
    metadata = Parser().parsestr(
        zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/METADATA"))).decode()
    )
    assert "models" in metadata.get_all("Provides-Extra")
    assert (built_site.dir / DOWNLOADS / "models.txt").read_bytes() == (
        ROOT / "models.txt"
    ).read_bytes()
    home = (built_site.dir / "index.html").read_text("utf-8")
    assert f'href="{DOWNLOADS}/{wheel.name}"' in home, "the home page links no wheel"


def _imported_modules(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


@pytest.fixture(scope="module")
def reader_python(built_site, tmp_path_factory) -> Path:
    wheel = wheel_of(built_site.dir)
    metadata = Parser().parsestr(
        next(
            zipfile.ZipFile(wheel).read(n).decode()
            for n in zipfile.ZipFile(wheel).namelist()
            if n.endswith("/METADATA")
        )
    )
    models = [
        line.split()[0]
        for line in (ROOT / "models.txt").read_text("utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "--"))
    ]
    requirements = [*metadata.get_all("Requires-Dist"), "torch", *models]
    return reader_environment(
        tmp_path_factory.mktemp("reader") / "venv", wheel, requirements, extras=("models",)
    )


def test_every_import_of_every_page_resolves_from_the_wheel(built_site, reader_python):
    wanted: dict[str, list[str]] = {}
    for path in sorted((built_site.dir / COPY_DIR).glob("*.json")):
        for block in json.loads(path.read_text("utf-8"))["blocks"]:
            for module in _imported_modules(block["code"]):
                if path.stem == CONTRIBUTORS_PAGE and module.split(".")[0] == "site_tools":
                    continue  # that page's readers work in a clone, where site_tools is
                if path.stem.startswith("labs--") and module.split(".")[0] == "IPython":
                    continue  # a lab runs in Jupyter, whose kernel is IPython
                wanted.setdefault(module, []).append(f"{path.stem}, block {block['index']}")
    assert not [m for m in wanted if m.split(".")[0] == "site_tools"], (
        "copy texts import site_tools: "
        + "; ".join(w for m, where in wanted.items() if m.startswith("site_tools") for w in where)
    )
    probe = (
        "import importlib.util, json, sys\n"
        "missing = []\n"
        "for name in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        spec = importlib.util.find_spec(name)\n"
        "    except ImportError:\n"
        "        spec = None\n"
        "    if spec is None:\n"
        "        missing.append(name)\n"
        "    elif name.split('.')[0] == 'attention_src' and (\n"
        "        'site-packages' not in (spec.origin or '')\n"
        "    ):\n"
        "        missing.append(f'{name} (not from the wheel: {spec.origin})')\n"
        "print(json.dumps(missing))\n"
    )
    out = subprocess.run(
        [str(reader_python), "-c", probe, json.dumps(sorted(wanted))],
        cwd=reader_python.parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    missing = json.loads(out.stdout)
    assert not missing, "\n".join(f"{m}: {wanted[m.split(' ')[0]][0]}" for m in missing)


@pytest.mark.parametrize("stem", RUN_FROM_THE_WHEEL)
def test_a_readers_install_runs_the_chapters(built_site, reader_python, stem):
    from site_tools.engine.copyrun import run_page

    report = run_page(built_site.dir / COPY_DIR / f"chapters--{stem}.json", python=reader_python)
    assert not report.get("crashed"), report.get("crashed")
    failed = [b for b in report["blocks"] if b["status"] == "failed"]
    assert not failed, f"{stem}: " + "\n".join(b["error"] for b in failed)
    assert report["blocks"], stem
