"""Shared fixtures for the documentation tests: one strict build per session."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
ARTIFACTS = ROOT / "test-artifacts"


@dataclass
class BuiltSite:
    dir: Path  # the built site: the English edition, the Chinese one in dir / "zh"
    log: str  # everything the English `mkdocs build --strict` printed
    seconds: float  # wall time of the English build
    log_zh: str = ""  # the same for the Chinese edition (mkdocs.zh.yml)
    seconds_zh: float = 0.0


def _mkdocs_build(config: str, dest: Path, env: dict[str, str]) -> tuple[str, float]:
    start = time.perf_counter()
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config]
    proc = subprocess.run(
        [*command, "--site-dir", str(dest)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        failed = f"mkdocs build --strict -f {config} failed (exit {proc.returncode})"
        pytest.fail(f"{failed}:\n{log[-6000:]}")
    return log, seconds


def build_site(dest: Path) -> BuiltSite:
    """Both editions, as ``./dev.sh build`` builds them: English into ``dest``, then
    Chinese into ``dest/zh`` (the last build prunes the store: both have run)."""
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        PYTHONHASHSEED="0",
        ATTENTION_BUILD_STARTED=str(time.time()),
    )
    log, seconds = _mkdocs_build("mkdocs.yml", dest, env)
    log_zh, seconds_zh = _mkdocs_build("mkdocs.zh.yml", dest / "zh", env)
    return BuiltSite(dest, log, seconds, log_zh, seconds_zh)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> BuiltSite:
    """The site, both editions, built once per test session with ``mkdocs build --strict``.

    Under pytest-xdist (``./dev.sh test`` runs two workers) the workers share one build:
    the first to ask builds it, holding a file lock in the run's shared temporary folder,
    and the others wait on the lock and read what it built (or the failure it met).
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return build_site(tmp_path_factory.mktemp("site") / "site")
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # the run's folder, above each worker's
    record = shared / "built-site.json"
    with FileLock(str(shared / "built-site.lock")):
        if not record.exists():
            try:
                site = build_site(shared / "built-site" / "site")
            except BaseException as exc:  # pytest.fail too: the other workers say it again
                record.write_text(json.dumps({"failed": str(exc)[-6000:]}), encoding="utf-8")
                raise
            data = {**asdict(site), "dir": str(site.dir)}
            record.write_text(json.dumps(data), encoding="utf-8")
        data = json.loads(record.read_text(encoding="utf-8"))
    if "failed" in data:
        pytest.fail(f"the shared build failed (in another worker):\n{data['failed']}")
    return BuiltSite(**{**data, "dir": Path(data["dir"])})


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
