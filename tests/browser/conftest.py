"""The browser tier: headless Chromium over the built site (``built_site``, tests/site/build.py),
served on 127.0.0.1."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator

import pytest

# One Chromium for every browser test of the session: Playwright's sync API allows one
# driver per thread, so two test modules cannot each start their own.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Belt and braces behind the request routing below: no host name resolves, so nothing the
    # routing might miss (a worker, a prefetch) can reach the network either.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


@pytest.fixture(scope="session")  # session, like built_site, so that a skip comes before the build
def browser():
    """Headless Chromium, driven by Playwright; skips if either is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip(
            "no Playwright: pip install playwright (the 'test' extra) to run the browser test; "
            "do not run 'playwright install', the test uses the system's Chromium"
        )
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    if not (os.path.isfile(executable) and os.access(executable, os.X_OK)):
        pytest.skip(
            "no Chromium browser: install Debian's chromium (apt-get install chromium) "
            "to run the browser test"
        )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def site_url(built_site) -> Iterator[str]:
    """The built site (both editions), served over HTTP on a free port of 127.0.0.1."""

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # keep the test output clean
            pass

    handler = functools.partial(QuietHandler, directory=str(built_site.dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="session")
def _visits(browser, site_url, built_site):
    """``visit_of(module)``: the one visit of the module's edition (tests/browser/visit.py),
    made the first time a module of that edition asks and kept for the session; a visit
    that failed fails again without a second try."""
    from .visit import visit

    reports: dict[str, dict] = {}
    failed: dict[str, BaseException] = {}

    def visit_of(module) -> dict[str, dict]:
        edition = getattr(module, "EDITION", "en")
        if edition in failed:
            raise failed[edition]
        if edition not in reports:
            try:
                reports[edition] = visit(browser, site_url, built_site, module)
            except BaseException as exc:
                failed[edition] = exc
                raise
        return reports[edition]

    return visit_of


@pytest.fixture
def page_reports(_visits, request) -> dict[str, dict]:
    """Every page of the module's edition (its ``EDITION``, English where it sets none)
    opened once per session at 1280x900, every check of the visit run then: page -> its
    report. The modules of one edition share the one visit (under ``./dev.sh test`` they
    run on one worker: ``ONE_VISIT`` in tests/conftest.py)."""
    return _visits(request.module)
