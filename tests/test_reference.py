"""What the API reference says about imports is what the package does.

``docs/reference.md`` (and its Chinese twin) opens with a sentence: ``from attention_src
import ...`` works for every name it documents except the ones it lists, each with the
module it imports from. The exceptions are read from that sentence's code spans: a
module path (``attention_src.bench``) covers every entry under it, and an import
statement (``from attention_src.experiments.seq2seq_task import TASKS``) covers that one
entry and must run. Then, for every ``::: attention_src...`` entry of the page:

- an exception imports from its module and NOT from the top (``from attention_src import
  name`` does not give that object), so that the sentence is exact both ways;
- every other entry is importable from the top: ``from attention_src import name`` gives
  that very object.

And the chapters of the page are the package's map (``__all__``, one ``# chapter N:
Title`` comment per chapter, ``tests/site/test_teaching_path.py``): each exported name is
documented in the section of the chapter it is registered under, in the same order.

Fast tier: reads Markdown and imports the package, no build.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import attention_src

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "attention_src"
EDITIONS = {"en": ROOT / "docs" / "reference.md", "zh": ROOT / "docs-zh" / "reference.md"}
FROM_TOP = f"`from {PACKAGE} import ...`"
ENTRY = re.compile(r"^:::\s+(attention_src(?:\.\w+)*)\s*$")
SECTION = re.compile(r"^## \[#\. [^\]]+\]\(chapters/(?P<stem>[\w-]+)\.md\)")
NAV_ENTRY = re.compile(r'^\s*- "(?P<number>\d+)\. [^"]+": chapters/(?P<stem>[\w-]+)\.md')
CHAPTER_COMMENT = re.compile(r"^\s*# chapter (?P<number>\d+): ")


# ------------------------------------------------------------------ reading the page


def import_sentence(text: str) -> str:
    """The paragraph that says what imports from the top."""
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if FROM_TOP in p]
    assert paragraphs, f"the reference has no paragraph with {FROM_TOP}"
    return paragraphs[0]


def exceptions(sentence: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(module paths, (module, name) import statements) named in the sentence's code."""
    modules, statements = [], []
    for span in re.findall(r"`([^`]+)`", sentence):
        if match := re.fullmatch(r"from (attention_src(?:\.\w+)+) import (\w+)", span):
            statements.append((match[1], match[2]))
        elif re.fullmatch(r"attention_src(?:\.\w+)+", span):
            modules.append(span)
    return modules, statements


def entries(text: str) -> list[tuple[str, list[str] | None, str | None]]:
    """``(identifier, members, chapter stem)`` of every ``:::`` line; ``members`` is the
    option block's ``members:`` list if any, the stem that of the chapter section."""
    lines = text.splitlines()
    found, stem = [], None
    for i, line in enumerate(lines):
        if line.startswith("## "):
            stem = m["stem"] if (m := SECTION.match(line)) else None
        if not (match := ENTRY.match(line)):
            continue
        members = None
        for following in lines[i + 1 :]:
            if following.strip() and not following[:1].isspace():
                break
            if listed := re.match(r"\s+-\s+(\w+)\s*$", following):
                members = [*(members or []), listed[1]]
        found.append((match[1], members, stem))
    return found


def resolve(identifier: str) -> tuple[str, object]:
    """(the longest importable module prefix, the object the identifier names)."""
    parts = identifier.split(".")
    for end in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for attr in parts[end:]:
            obj = getattr(obj, attr)
        return ".".join(parts[:end]), obj
    raise ImportError(identifier)


def _within(identifier: str, module: str) -> bool:
    return identifier == module or identifier.startswith(module + ".")


def import_problems(text: str) -> list[str]:
    """Every way in which the page's sentence about imports is false."""
    modules, statements = exceptions(import_sentence(text))
    problems = []
    for module, name in statements:
        try:
            exec(f"from {module} import {name}", {})
        except ImportError as error:
            problems.append(f"the sentence's `from {module} import {name}` fails: {error}")
    for identifier, members, _ in entries(text):
        try:
            module, obj = resolve(identifier)
        except (ImportError, AttributeError):
            problems.append(f"{identifier} names nothing")
            continue
        if module == identifier:  # a whole module: its members import from it
            listed = members if members is not None else getattr(obj, "__all__", [])
            named = [(m, getattr(obj, m, None)) for m in listed]
            problems += [f"{identifier} has no member {m}" for m, v in named if v is None]
            excepted = any(_within(identifier, m) for m in modules)
            if not excepted:
                problems.append(f"{identifier} is a module the sentence does not name")
                continue
        else:
            owner, _, name = identifier.rpartition(".")
            named = [(name, obj)]
            excepted = (owner, name) in statements or any(_within(identifier, m) for m in modules)
        for name, value in named:
            top = getattr(attention_src, name, None)
            if excepted and value is not None and top is value:
                problems.append(
                    f"{identifier}: the sentence names it as an exception, but "
                    f"`from {PACKAGE} import {name}` gives it"
                )
            elif not excepted and top is not value:
                problems.append(
                    f"{identifier}: `from {PACKAGE} import {name}` does not give it, and "
                    "the sentence names no module it imports from"
                )
    return problems


# -------------------------------------------------------------- the package's map


def chapter_numbers() -> dict[str, int]:
    text = (ROOT / "mkdocs.yml").read_text("utf-8")
    return {
        m["stem"]: int(m["number"]) for line in text.splitlines() if (m := NAV_ENTRY.match(line))
    }


def registered() -> dict[int, list[str]]:
    """``{chapter: names of __all__ under its comment, in order}``."""
    text = (ROOT / PACKAGE / "__init__.py").read_text("utf-8")
    start = text.index("__all__ = [")
    chapters: dict[int, list[str]] = {}
    current = None
    for line in text[start : text.index("\n]", start)].splitlines()[1:]:
        if m := CHAPTER_COMMENT.match(line):
            current = int(m["number"])
        elif m := re.match(r'^\s*"(\w+)",', line):
            chapters.setdefault(current, []).append(m[1])
    return chapters


def documented_by_chapter(text: str) -> dict[int, list[str]]:
    """``{chapter: names its section documents that import from the top, in order}``."""
    numbers = chapter_numbers()
    found: dict[int, list[str]] = {}
    for identifier, _, stem in entries(text):
        module, obj = resolve(identifier)
        name = identifier.rpartition(".")[2]
        if stem is None or module == identifier or getattr(attention_src, name, None) is not obj:
            continue  # outside the chapters, a whole module, or an exception
        found.setdefault(numbers[stem], []).append(name)
    return found


# ---------------------------------------------------------------------- the tests


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_sentence_about_imports_is_exact(edition):
    assert import_problems(EDITIONS[edition].read_text("utf-8")) == []


@pytest.mark.parametrize("edition", EDITIONS)
def test_each_chapter_section_documents_its_names_in_the_order_of_all(edition):
    documented = documented_by_chapter(EDITIONS[edition].read_text("utf-8"))
    assert documented == registered()


def test_the_two_editions_name_the_same_exceptions():
    en, zh = (exceptions(import_sentence(p.read_text("utf-8"))) for p in EDITIONS.values())
    assert sorted(en[0]) == sorted(zh[0]) and sorted(en[1]) == sorted(zh[1])


# ------------------------------------------- the checks fail on a page that is wrong

PAGE = """\
# API reference

`from attention_src import ...` works for every name below except the checker's
(`attention_src.check`, e.g. `from attention_src.check import check_function`) and
chapter 1's `TASKS` (`from attention_src.experiments.seq2seq_task import TASKS`).

## [#. Masks](chapters/masks.md)

::: attention_src.masks.causal_mask

::: attention_src.experiments.seq2seq_task.TASKS

::: attention_src.check
    options:
      members:
        - check_function
"""


def test_a_true_page_passes():
    assert import_problems(PAGE) == []


def test_an_entry_that_does_not_import_from_the_top_fails():
    page = PAGE + "\n::: attention_src.validate.check_tensor\n"
    assert import_problems(page) == [
        "attention_src.validate.check_tensor: `from attention_src import check_tensor` does "
        "not give it, and the sentence names no module it imports from"
    ]


def test_an_exception_that_imports_from_the_top_fails():
    page = PAGE.replace("`attention_src.check`,", "`attention_src.check`, `attention_src.masks`,")
    assert import_problems(page) == [
        "attention_src.masks.causal_mask: the sentence names it as an exception, but "
        "`from attention_src import causal_mask` gives it"
    ]


def test_an_import_statement_of_the_sentence_that_fails_fails():
    page = PAGE.replace("import check_function`", "import no_such_name`")
    problems = import_problems(page)
    assert problems[0].startswith("the sentence's `from attention_src.check import no_such_name`")


def test_an_exception_not_named_fails():
    page = PAGE.replace("`from attention_src.experiments.seq2seq_task import TASKS`", "")
    assert import_problems(page) == [
        "attention_src.experiments.seq2seq_task.TASKS: `from attention_src import TASKS` "
        "does not give it, and the sentence names no module it imports from"
    ]


def test_the_map_reads_sections_in_page_order():
    page = PAGE + "\n## [#. Multi-head attention](chapters/multi-head-attention.md)\n\n"
    page += "::: attention_src.multi_head.split_heads\n\n::: attention_src.multi_head.merge_heads\n"
    numbers = chapter_numbers()
    assert documented_by_chapter(page) == {
        numbers["masks"]: ["causal_mask"],
        numbers["multi-head-attention"]: ["split_heads", "merge_heads"],
    }


SPHINX_ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|obj|exc):`")


def test_no_docstring_the_reference_renders_has_a_sphinx_role():
    """mkdocstrings renders the docstrings as Markdown (Google style): a Sphinx role such as
    :func:`~attention_src.rope.rotate_pairs` would reach the reader as its raw text, so
    the package's lesson modules name code in double backticks instead."""
    package = ROOT / PACKAGE
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted(package.rglob("*.py"))
        if path.relative_to(package).parts[0] not in ("check", "bench", "machinery")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if SPHINX_ROLE.search(line)
    ]
    assert not found, found
