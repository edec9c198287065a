"""Shared fixtures: the devices to run on and deterministic random tensors.

Every test that creates tensors takes the ``device`` fixture and passes
``device=device`` when it creates them, so the whole suite runs on CUDA too
where a GPU is present (the "cuda" parameter is skipped otherwise).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

# The tests share the build's results cache in the checkout (as ./dev.sh sets it), never
# the reader's default (the user's cache folder).
os.environ.setdefault(
    "ATTENTION_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".cache" / "attention_src")
)

TESTS = Path(__file__).resolve().parent
# The tier of a test is the folder it lives in (markers registered in pyproject.toml);
# every other folder (tests/lessons, tests/check, tests/site_tools, ...) and the top
# level are the fast tier, unmarked (``./dev.sh test --fast`` runs ``-m "not docs and
# not browser"``).
TIERS = {
    "site": "docs",  # the site: its build, pages, diagrams, notebooks and copies
    "browser": "browser",  # the built site in headless Chromium (tests/browser/conftest.py)
}

# The strict build of both editions, once per session (the fixture ``built_site``), shared
# by the tests of tests/site/ and tests/browser/.
pytest_plugins = ["tests.site.build"]


def tier(path) -> str | None:
    """The marker of the tier of the test module at ``path``: ``docs``, ``browser``, or
    None for the fast tier."""
    try:
        parts = Path(path).resolve().relative_to(TESTS).parts
    except ValueError:  # not under tests/
        return None
    return TIERS.get(parts[0]) if len(parts) > 1 else None


def pytest_collection_modifyitems(config, items):
    """Put every test in the tier of its folder, so that a new test lands in the right
    tier without a mark; a test that needs the built site (``built_site``) outside the
    site's folders is an error (it would build the site in the fast tier)."""
    for item in items:
        marker = tier(item.path)
        if marker:
            item.add_marker(getattr(pytest.mark, marker))
        elif "built_site" in getattr(item, "fixturenames", ()):
            raise pytest.UsageError(
                f"{item.nodeid} needs the built site: it belongs in tests/site/ "
                "(or tests/browser/ if it opens the site in Chromium)"
            )
    items[:] = _build_first(items)


def _build_first(items: list) -> list:
    """The order the two workers of ``./dev.sh test`` take modules in (``--dist loadscope
    --no-loadscope-reorder`` hands out whole modules in this order, first come first
    served): one module that needs the site's build first, so that one worker starts the
    build at once; then every module that does not need it, for the other worker while the
    build runs; then the rest of the site's, the browser passes (the longest, one per
    edition: the modules of the one visit of every page, ``page_reports``) first, so that
    the two workers run them side by side, then the others, longest first (:data:`TAIL`),
    so that the workers end close together."""
    modules: dict[str, list] = {}
    for item in items:
        modules.setdefault(str(item.path), []).append(item)

    def uses(group: list, fixture: str) -> bool:
        return any(fixture in getattr(i, "fixturenames", ()) for i in group)

    site = [m for m, group in modules.items() if uses(group, "built_site")]
    first = [m for m in site if m.endswith("test_build.py")] or site[:1]
    rest = [m for m in site if m not in first]
    # the browser passes first, then the longest modules first: the last module handed
    # out decides how long one worker waits for the other at the end (stable sort)
    rest.sort(key=lambda m: (not uses(modules[m], "page_reports"), -TAIL.get(_name(m), 0)))
    order = first + [m for m in modules if m not in site] + rest
    return [item for module in order for item in modules[module]]


def _name(module: str) -> str:
    """A module's path under tests/ (``site/test_store.py``), as :data:`TAIL` names it."""
    path = Path(module).resolve()
    return path.relative_to(TESTS).as_posix() if TESTS in path.parents else path.name


# Seconds of the site's modules that run after the browser passes, in a fresh clone's
# .ci/run (two workers, 2026-12-05); only their order is used. A module not listed goes
# last (tests/test_suite_order.py checks that each one listed exists).
TAIL = {
    "site/test_contributing.py": 45,
    "site/test_reader_disk.py": 42,
    "site/test_store_pages.py": 32,
    "site/test_codeblocks.py": 29,
    "site/test_notebooks.py": 28,
    "site/test_edition_zh.py": 25,
    "browser/test_a11y_units.py": 17,
    "browser/test_explorer.py": 6,
}


# The modules of the one browser visit of every page (tests/browser/visit.py), each with its
# edition: the modules of an edition share one visit (the fixture ``page_reports``), so under
# ``./dev.sh test`` they are one unit of work for pytest-xdist (:func:`scope_of`), and one
# worker visits each page of the edition once (tests/test_suite_order.py checks that this
# names every module that takes ``page_reports``, with its ``EDITION``).
ONE_VISIT = {
    "browser/test_accessibility.py": "en",
    "browser/test_copy_buttons.py": "en",
    "browser/test_figures.py": "en",
    "browser/test_render.py": "en",
    "browser/test_widgets.py": "en",
    "browser/test_zh.py": "zh",
}


def scope_of(nodeid: str) -> str:
    """The unit of work of a test for ``--dist loadscope``: its module (or class), as
    pytest-xdist's own, except that the modules of one edition's visit (:data:`ONE_VISIT`)
    are one unit."""
    scope = nodeid.rsplit("::", 1)[0]
    edition = ONE_VISIT.get(scope.split("::")[0].removeprefix("tests/"))
    return f"tests/browser/visit.py ({edition})" if edition else scope


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which may not be installed
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` (./dev.sh test) with the units of :func:`scope_of`."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneVisitPerEdition(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return OneVisitPerEdition(config, log)


def pytest_runtest_logreport(report):
    """``PYTEST_TIMELINE=FILE``: one JSON line per test phase (worker, test, phase, start,
    stop, outcome) appended to FILE, to see what each worker did when (what waits on the
    build, what runs beside it, which module ends last)."""
    path = os.environ.get("PYTEST_TIMELINE")
    if not path or hasattr(report, "node"):  # pytest-xdist's controller: the worker wrote it
        return
    import json

    row = {
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "test": report.nodeid,
        "phase": report.when,
        "start": round(report.start, 3),
        "stop": round(report.stop, 3),
        "outcome": report.outcome,
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def pytest_configure(config):
    # Under pytest-xdist each worker is a process with torch's default of one thread per
    # core: share the cores instead of oversubscribing them.
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(workers)))


CUDA = pytest.param(
    "cuda",
    marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
)


@pytest.fixture(params=["cpu", CUDA])
def device(request) -> torch.device:
    return torch.device(request.param)


@pytest.fixture(autouse=True)
def _seed():
    """Seed the global generators (module initialisation, dropout) before every test, and
    print tensors as a fresh interpreter does (a test that runs a page's code in-process
    may leave its torch.set_printoptions behind, which a later test in the same worker
    would otherwise see)."""
    torch.manual_seed(0)
    torch.set_printoptions(profile="default")


@pytest.fixture
def gen(device) -> torch.Generator:
    """A generator on ``device`` with a fixed seed, fresh for every test."""
    return torch.Generator(device=device).manual_seed(1234)


@pytest.fixture
def randn(device, gen):
    """``randn(*shape, dtype=..., requires_grad=...)``: seeded normal tensors on ``device``."""

    def make(*shape, dtype=torch.float32, requires_grad=False):
        x = torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)
        return x.to(dtype).requires_grad_(requires_grad)

    return make


@pytest.fixture
def rand_mask(device, gen):
    """``rand_mask(*shape, p_keep=0.6)``: a random bool mask on ``device`` (True = may attend)."""

    def make(*shape, p_keep=0.6):
        return torch.rand(*shape, generator=gen, device=device) < p_keep

    return make
