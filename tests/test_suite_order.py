"""The order in which ``./dev.sh test``'s two workers take the test modules
(tests/conftest.py, ``_build_first``): the module that builds the site first, then the
modules that do not need the site, then the browser passes, then the other modules that
need the site, the longest first (``TAIL``), so that the workers end close together."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests import conftest

DOCS_TESTS = Path(conftest.__file__).resolve().parent / "docs"


def _items(names_and_site: list[tuple[str, bool]]) -> list:
    return [
        SimpleNamespace(path=DOCS_TESTS / name, fixturenames=["built_site"] if site else [])
        for name, site in names_and_site
    ]


def test_the_tail_names_test_modules_that_exist():
    assert conftest.TAIL, "no tail order"
    missing = [name for name in conftest.TAIL if not (DOCS_TESTS / name).is_file()]
    assert missing == [], f"TAIL names modules that are not in tests/docs/: {missing}"


def test_the_build_first_the_browser_passes_then_the_longest():
    longest = sorted(conftest.TAIL, key=conftest.TAIL.get, reverse=True)[:2]
    shortest = min(conftest.TAIL, key=conftest.TAIL.get)
    items = _items(
        [
            ("test_new_module.py", True),  # not in TAIL: last
            (shortest, True),
            ("test_browser_zh.py", True),
            ("test_unit.py", False),
            (longest[1], True),
            ("test_build.py", True),
            (longest[0], True),
            ("test_browser.py", True),
            ("test_other_unit.py", False),
        ]
    )
    order = [Path(item.path).name for item in conftest._build_first(items)]
    assert order == [
        "test_build.py",
        "test_unit.py",
        "test_other_unit.py",
        "test_browser_zh.py",
        "test_browser.py",
        longest[0],
        longest[1],
        shortest,
        "test_new_module.py",
    ]
