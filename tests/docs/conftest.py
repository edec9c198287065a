"""Shared fixtures for the documentation tests: one strict build per session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
ARTIFACTS = ROOT / "test-artifacts"


@dataclass
class BuiltSite:
    dir: Path  # the built site
    log: str  # everything `mkdocs build --strict` printed
    seconds: float  # wall time of the build


def build_site(dest: Path) -> BuiltSite:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONHASHSEED="0")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(dest)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed (exit {proc.returncode}):\n{log[-6000:]}")
    return BuiltSite(dest, log, seconds)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> BuiltSite:
    """The site built once per test session with ``mkdocs build --strict``."""
    return build_site(tmp_path_factory.mktemp("site") / "site")


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


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
