"""A newcomer can add a chapter: the checklist of docs/contributing.md, followed.

In a scratch copy of the repository (the files git tracks or would track, as they
are in the working tree), this test adds the templates of ``templates/`` as a new
chapter, "A scratch chapter", placed after the KV-cache chapter:

- it runs the page's "Copy the templates" block as written (a bash script), then
  writes the title in place of ``CHAPTER_TITLE``, as the page says;
- it makes the six registrations of "Register it" in the page's words: the nav
  entry (renumbering the chapters after it), the home-page line, the package's
  import and ``__all__`` (with its ``# chapter N`` comment, renumbering those
  after it), the reference heading and entry, ``CHAPTER_MODULES``; the diagram
  is the one the first block copied;
- it runs the page's block for the Chinese edition (step 7: a placeholder page) and
  adds the chapter to ``mkdocs.zh.yml``'s nav as it adds it to ``mkdocs.yml``'s;
- it runs the page's "Run its checks" block, each line as ``tests/site/
  test_contributing.py`` runs the page's commands (``./dev.sh test ARGS`` as
  pytest, ruff run on the files the checklist touched), except that the strict
  build is of a trimmed site: the whole nav, so that every number is the real
  site's, but only the home page, the notation page, the reference, the new
  chapter and the pages it links are built (``exclude_docs``; MkDocs 1.6 logs a
  nav entry or a link to an excluded page at INFO, so ``--strict`` allows it). It
  shares the repository's results cache (``ATTENTION_CACHE_DIR``);
- and it checks what the browser test would check of the new page on the built
  HTML: its heading, its figures' numbers and captions, its numbered links;
- then it builds the Chinese edition the same way (trimmed) and checks that the
  placeholder passes the parity check, is listed by ``stale``, shows the
  "translation pending" banner and gets the same figure numbers; its blocks
  come from the store the English build filled, so nothing runs again.

If a step is missing from the checklist, a check fails here: the checklist is
complete exactly when this test passes. Runtime: under a minute on a quiet two-core machine
(the trimmed build is most of it).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from bs4 import BeautifulSoup

from .test_contributing import BIN, here, page_commands

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "contributing.md"
TITLE = "A scratch chapter"
AFTER = "kv-cache"  # the new chapter goes right after this one
ALWAYS_BUILT = {"index.md", "notation.md", "reference.md"}
TIMEOUT = 600  # seconds per command; the trimmed build is the slowest
PLACEHOLDERS = re.compile(r"CHAPTER_STEM|CHAPTER_TITLE|LESSON_MODULE")
NAV_CHAPTER = re.compile(r'^(?P<indent>\s*)- "(?P<number>\d+)\. (?P<title>[^"]+)": chapters/')


def section(text: str, heading: str) -> str:
    """The markdown of the ``## heading`` section of a page."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def bash_blocks(text: str) -> list[str]:
    """The top-level ```bash blocks of ``text``, as written."""
    return re.findall(r"^```bash\n(.*?)^```$", text, flags=re.S | re.M)


CHECKLIST = section(PAGE.read_text(encoding="utf-8"), "Adding a chapter")


def scratch_checkout(dest: Path) -> Path:
    """The repository's files as they are in the working tree: tracked, and untracked
    but not ignored (no .git, .venv, site or .cache)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def run(shell: str, cwd: Path, env: dict[str, str], tmp_path: Path) -> str:
    environment = dict(
        os.environ,
        **env,
        PYTEST_DEBUG_TEMPROOT=str(tmp_path),
        NO_MKDOCS_2_WARNING="1",
        PYTHONHASHSEED="0",
    )
    # The scratch checkout's own packages, never the repository's installed ones.
    environment["PYTHONPATH"] = str(cwd)
    proc = subprocess.run(
        ["bash", "-c", shell],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{shell!r} failed in the scratch checkout:\n{output[-6000:]}"
    return output


# ------------------------------------------------ the registrations, as the page words them


def replace_in(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def register_in_nav(root: Path, stem: str, config: str = "mkdocs.yml") -> int:
    """Step 1: an entry "N. Title" after AFTER, and one added to every later chapter's
    number (step 7: the same in mkdocs.zh.yml). Returns N."""
    path = root / config
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if f": chapters/{AFTER}.md" in line)
    before = NAV_CHAPTER.match(lines[at])
    number = int(before["number"]) + 1
    for i in range(at + 1, len(lines)):
        if match := NAV_CHAPTER.match(lines[i]):
            old = f'"{match["number"]}. '
            lines[i] = lines[i].replace(old, f'"{int(match["number"]) + 1}. ', 1)
    entry = f'{before["indent"]}- "{number}. {TITLE}": chapters/{stem}.md\n'
    lines.insert(at + 1, entry)
    path.write_text("".join(lines), encoding="utf-8")
    return number


def register_on_home(root: Path, stem: str) -> None:
    """Step 2: a line at its place in the home page's path."""
    path = root / "docs" / "index.md"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if f"](chapters/{AFTER}.md)" in line)
    line = f"- [#. {TITLE}](chapters/{stem}.md) — a chapter made from the templates.\n"
    lines.insert(at + 1, line)
    path.write_text("".join(lines), encoding="utf-8")


def module_names(root: Path, module: str) -> list[str]:
    tree = ast.parse((root / "attention_src" / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"attention_src/{module}.py has no __all__")


def register_in_package(root: Path, module: str, names: list[str], number: int) -> None:
    """Step 3: the import line, sorted; a ``# chapter N`` comment and the names in
    ``__all__`` at the chapter's place; one added to the later comments."""
    path = root / "attention_src" / "__init__.py"
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    imports = [
        i
        for i, line in enumerate(lines)
        if (match := re.match(r"from \.([\w.]+) import", line)) and match[1] > module
    ]
    lines.insert(imports[0], f"from .{module} import {', '.join(names)}\n")
    comment = re.compile(r"^(\s*)# chapter (\d+):")
    place = None
    for i, line in enumerate(lines):
        if (match := comment.match(line)) and int(match[2]) >= number:
            place = i if place is None else place
            lines[i] = line.replace(f"chapter {match[2]}:", f"chapter {int(match[2]) + 1}:", 1)
    if place is None:  # the last chapter: before the closing bracket of __all__
        start = next(i for i, line in enumerate(lines) if line.startswith("__all__"))
        place = next(i for i in range(start, len(lines)) if lines[i].startswith("]"))
    block = [f"    # chapter {number}: {TITLE.lower()}\n"] + [f'    "{n}",\n' for n in names]
    lines[place:place] = block
    path.write_text("".join(lines), encoding="utf-8")


def register_in_reference(root: Path, stem: str, module: str, names: list[str]) -> None:
    """Step 4: a ``## [#. Title](chapters/stem.md)`` heading and a ``:::`` line per name,
    after the previous chapter's section."""
    path = root / "docs" / "reference.md"
    text = path.read_text(encoding="utf-8")
    start = text.index(f"](chapters/{AFTER}.md)")
    end = text.index("\n## ", start) + 1
    entries = "".join(f"::: attention_src.{module}.{name}\n\n" for name in names)
    new = f"## [#. {TITLE}](chapters/{stem}.md)\n\n{entries}"
    path.write_text(text[:end] + new + text[end:], encoding="utf-8")


def register_in_house_rules(root: Path, module: str) -> None:
    """Step 5: the module in CHAPTER_MODULES, in alphabetical order."""
    path = root / "tests" / "test_house_rules.py"
    text = path.read_text(encoding="utf-8")
    start = text.index("CHAPTER_MODULES = (\n") + len("CHAPTER_MODULES = (\n")
    end = text.index(")\n", start)
    entries = [line for line in text[start:end].splitlines(keepends=True) if line.strip()]
    entries = sorted([*entries, f'    "attention_src.{module}",\n'])
    path.write_text(text[:start] + "".join(entries) + text[end:], encoding="utf-8")


# ---------------------------------------------------------------------------- the test


def linked_pages(page: Path, docs: Path) -> set[str]:
    """The pages (relative to docs/) that a page links to."""
    found = set()
    for target in re.findall(r"\]\(([^)#\s]+\.md)", page.read_text(encoding="utf-8")):
        found.add((page.parent / target).resolve().relative_to(docs.resolve()).as_posix())
    return found


def trimmed_config(root: Path, stem: str, edition: str = "") -> Path:
    """mkdocs.yml (``edition="zh"``: mkdocs.zh.yml) with every page but home, notation,
    reference, the new chapter and the pages it links excluded from the build (the nav,
    and so every number, stays whole)."""
    docs = root / ("docs-zh" if edition == "zh" else "docs")
    keep = {*ALWAYS_BUILT, f"chapters/{stem}.md"}
    keep |= linked_pages(docs / "chapters" / f"{stem}.md", docs)
    pages = [p.relative_to(docs).as_posix() for p in [*docs.rglob("*.md"), *docs.rglob("*.ipynb")]]
    excluded = sorted(set(pages) - keep)
    parent = "mkdocs.zh.yml" if edition == "zh" else "mkdocs.yml"
    path = root / parent.replace(".yml", ".trimmed.yml")
    path.write_text(
        f"INHERIT: {parent}\nexclude_docs: |\n" + "".join(f"  /{p}\n" for p in excluded),
        encoding="utf-8",
    )
    return path


def test_the_checklist_is_on_the_page():
    blocks = bash_blocks(CHECKLIST)
    assert len(blocks) == 3, (
        "the checklist has a block to copy the templates, one for the Chinese edition's "
        "placeholder and one of checks"
    )
    steps = ["The nav", "The home page", "The package", "The reference", "The house rules"]
    for step in [*steps, "The Chinese edition"]:
        assert f"**{step}**" in CHECKLIST, f"the checklist has no step {step!r}"
    assert "**The diagram**" in CHECKLIST
    for template in ["chapter.md", "diagram.svg", "lesson.py", "test_lesson.py"]:
        assert (ROOT / "templates" / template).is_file(), f"templates/{template} is missing"


def test_every_chapter_of_the_nav_is_on_the_home_page_in_order():
    """Step 2 of the checklist, held for every chapter: the home page's path links to
    every chapter of the nav, in the nav's order."""
    nav = re.findall(r": chapters/([\w-]+)\.md\s*$", (ROOT / "mkdocs.yml").read_text("utf-8"), re.M)
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    linked = list(dict.fromkeys(re.findall(r"\]\(chapters/([\w-]+)\.md\)", home)))
    assert len(nav) >= 14, "no chapters found in mkdocs.yml's nav"
    assert linked == nav, f"the home page's path {linked} is not the nav's chapters {nav}"


def test_a_new_chapter_from_the_templates_builds_and_passes_its_checks(tmp_path):
    root = scratch_checkout(tmp_path / "checkout")
    copy, chinese, checks = bash_blocks(CHECKLIST)

    # Copy the templates: the page's block, run as written.
    run(copy, root, {}, tmp_path)
    env = page_commands(f"```bash\n{copy}```\n")[-1][1]  # what its `export` lines set
    stem, module = env["STEM"], env["MODULE"]
    files = [
        root / "docs" / "chapters" / f"{stem}.md",
        root / "diagrams" / f"{stem}.svg",
        root / "attention_src" / f"{module}.py",
        root / "tests" / "lessons" / f"test_{module}.py",
    ]
    for path in files:
        replace_in(path, "CHAPTER_TITLE", TITLE)
        left = PLACEHOLDERS.findall(path.read_text(encoding="utf-8"))
        assert not left, f"{path.relative_to(root)} still holds the placeholders {left}"

    # Register it: the six places.
    number = register_in_nav(root, stem)
    register_on_home(root, stem)
    names = module_names(root, module)
    register_in_package(root, module, names, number)
    register_in_reference(root, stem, module, names)
    register_in_house_rules(root, module)  # the diagram is in place since the copy
    # Step 7: the Chinese edition's placeholder (the page's block) and nav entry.
    for line in [c for c, _ in page_commands(f"```bash\n{chinese}```\n")]:
        run(here(line), root, env, tmp_path)
    assert register_in_nav(root, stem, "mkdocs.zh.yml") == number

    # Run its checks: the page's block, line by line; ruff on what the checklist touched.
    touched = [
        "attention_src/__init__.py",
        f"attention_src/{module}.py",
        f"tests/lessons/test_{module}.py",
        "tests/test_house_rules.py",
    ]
    quoted = " ".join(shlex.quote(t) for t in touched)
    run(f"{BIN}/ruff check {quoted} && {BIN}/ruff format --check {quoted}", root, {}, tmp_path)
    config = trimmed_config(root, stem)
    outputs = {}
    for line in [c for c, _ in page_commands(f"```bash\n{checks}```\n")]:
        shell = here(line)
        if " -m mkdocs build" in line:  # the trimmed site, into site/ of the checkout
            shell += f" -f {config.name} --site-dir site"
        outputs[line] = run(shell, root, env, tmp_path)
    copies = next(out for line, out in outputs.items() if "copyrun" in line)
    assert re.search(r"\b([1-9]\d*) passed, 0 failed", copies), copies

    # What the browser test checks of the new page, read from the built HTML.
    site = root / "site"
    html = (site / "chapters" / stem / "index.html").read_text(encoding="utf-8")
    article = BeautifulSoup(html, "html.parser").select_one(".md-content article")
    heading = article.h1.get_text().replace("¶", "").strip()
    assert heading == TITLE, f"the page's heading {heading!r} is not its nav title"
    figures = article.select("figure")
    assert figures and figures[0].get("id") == f"fig-{stem}-diagram", "the diagram comes first"
    for k, figure in enumerate(figures, start=1):
        caption = figure.select_one(":scope > figcaption").get_text()
        assert figure.get("data-number") == f"{number}.{k}", figure.get("id")
        assert caption.startswith(f"Figure {number}.{k} — "), caption
    texts = [a.get_text() for a in article.select("a") if "headerlink" not in a.get("class", [])]
    assert not [t for t in texts if re.search(r"(?<![\w#&])#(?![\w#])", t)], texts
    assert "data-pending-ref" not in html
    home = (site / "index.html").read_text(encoding="utf-8")
    assert f">{number}. {TITLE}</a>" in home, "the home page's line is not numbered"
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    assert f">{number}. {TITLE}</a>" in reference, "the reference heading is not numbered"
    for name in names:
        assert f'id="attention_src.{module}.{name}"' in reference, f"{name} is not documented"

    # The Chinese edition: the placeholder passes the parity check, is listed as
    # pending, builds (trimmed) from the store without running a block, and says so.
    run(f"{BIN}/python -m site_tools.edition check chapters/{stem}.md", root, {}, tmp_path)
    stale = run(f"{BIN}/python -m site_tools.edition stale", root, {}, tmp_path)
    assert f"pending  docs-zh/chapters/{stem}.md" in stale, stale
    zh_config = trimmed_config(root, stem, "zh")
    log = run(
        f"{BIN}/python -m mkdocs build --strict -f {zh_config.name} --site-dir site/zh",
        root,
        {},
        tmp_path,
    )
    assert "executed 0 blocks in this build" in log, log[-3000:]
    html = (site / "zh" / "chapters" / stem / "index.html").read_text(encoding="utf-8")
    article = BeautifulSoup(html, "html.parser").select_one(".md-content article")
    assert article.select_one(".translation-pending"), "no 'translation pending' banner"
    for k, figure in enumerate(article.select("figure"), start=1):
        caption = figure.select_one(":scope > figcaption").get_text()
        assert caption.startswith(f"图 {number}.{k} — "), caption
