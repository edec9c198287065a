"""The tiers and the order of the suite (tests/conftest.py).

A test's tier is the folder it lives in: tests/site/ is the ``docs`` tier, tests/browser/
the ``browser`` tier, every other folder the fast tier; a test that needs the built site
anywhere else is an error. And the order in which ``./dev.sh test``'s two workers take the
test modules (``_build_first``): the module that builds the site first, then the modules
that do not need the site, then the browser passes, then the other modules that need the
site, the longest first (``TAIL``), so that the workers end close together. The modules
of one edition's browser visit (``ONE_VISIT``) are one unit of work for pytest-xdist, so
that one worker visits each page of the edition once."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest

TESTS = Path(conftest.__file__).resolve().parent


def _items(names_and_fixtures: list[tuple[str, list[str]]]) -> list:
    return [
        SimpleNamespace(path=TESTS / name, fixturenames=fixtures)
        for name, fixtures in names_and_fixtures
    ]


def test_the_tail_names_test_modules_that_exist():
    assert conftest.TAIL, "no tail order"
    missing = [name for name in conftest.TAIL if not (TESTS / name).is_file()]
    assert missing == [], f"TAIL names modules that are not in tests/: {missing}"


def test_the_tier_is_the_folder():
    assert conftest.tier(TESTS / "site" / "test_build.py") == "docs"
    assert conftest.tier(TESTS / "browser" / "test_render.py") == "browser"
    for fast in ("lessons/test_masks.py", "site_tools/test_store.py", "test_house_rules.py"):
        assert conftest.tier(TESTS / fast) is None, fast
    assert conftest.tier(TESTS.parent / "templates" / "test_lesson.py") is None
    assert set(conftest.TIERS) == {p.name for p in TESTS.iterdir() if p.name in conftest.TIERS}


def test_a_test_that_needs_the_site_outside_its_folders_is_an_error():
    marked = []
    item = SimpleNamespace(
        path=TESTS / "site_tools" / "test_new.py",
        fixturenames=["built_site"],
        nodeid="tests/site_tools/test_new.py::test_x",
        add_marker=marked.append,
    )
    with pytest.raises(pytest.UsageError, match="belongs in tests/site/"):
        conftest.pytest_collection_modifyitems(None, [item])
    item.path = TESTS / "site" / "test_new.py"
    conftest.pytest_collection_modifyitems(None, [item])
    assert [m.name for m in marked] == ["docs"]


def test_the_build_first_the_browser_passes_then_the_longest():
    site = [name for name in conftest.TAIL if name.startswith("site/")]
    longest = sorted(site, key=conftest.TAIL.get, reverse=True)[:2]
    shortest = min(site, key=conftest.TAIL.get)
    built, visit = ["built_site"], ["built_site", "page_reports"]
    items = _items(
        [
            ("site/test_new_module.py", built),  # not in TAIL: last
            (shortest, built),
            ("browser/test_zh.py", visit),
            ("lessons/test_unit.py", []),
            (longest[1], built),
            ("site/test_build.py", built),
            (longest[0], built),
            ("browser/test_render.py", visit),
            ("site_tools/test_other_unit.py", []),
        ]
    )
    order = [Path(item.path).relative_to(TESTS).as_posix() for item in conftest._build_first(items)]
    assert order == [
        "site/test_build.py",
        "lessons/test_unit.py",
        "site_tools/test_other_unit.py",
        "browser/test_zh.py",
        "browser/test_render.py",
        longest[0],
        longest[1],
        shortest,
        "site/test_new_module.py",
    ]


def test_one_visit_names_every_module_that_checks_the_visit():
    """Every module of tests/browser/ with a test of the visit's reports (``page_reports``)
    is in ``ONE_VISIT`` with its edition, and nothing else is. (The modules are imported
    here, not at collection: the GPU run collects this file without MkDocs.)"""
    found = {}
    for path in sorted((TESTS / "browser").glob("test_*.py")):
        module = importlib.import_module(f"tests.browser.{path.stem}")
        tests = [f for name, f in vars(module).items() if name.startswith("test_")]
        if any("page_reports" in inspect.signature(f).parameters for f in tests):
            found[f"browser/{path.name}"] = getattr(module, "EDITION", "en")
    assert found == conftest.ONE_VISIT
    assert set(found.values()) == {"en", "zh"}


def test_the_modules_of_one_visit_are_one_unit_of_work():
    units = {
        edition: {
            conftest.scope_of(f"tests/{m}::test_x[a]")
            for m, e in conftest.ONE_VISIT.items()
            if e == edition
        }
        for edition in ("en", "zh")
    }
    assert all(len(scopes) == 1 for scopes in units.values()), units
    assert units["en"] != units["zh"]
    # every other test's unit is pytest-xdist's own: its module, or its class
    assert conftest.scope_of("tests/browser/test_explorer.py::test_fits_a_phone") == (
        "tests/browser/test_explorer.py"
    )
    assert conftest.scope_of("tests/lessons/test_masks.py::TestX::test_y[cpu]") == (
        "tests/lessons/test_masks.py::TestX"
    )
