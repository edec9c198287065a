"""The strict build of the site, both editions, once per test session (``built_site``).

A plugin of the suite (``pytest_plugins`` in tests/conftest.py), so that the tests of
tests/site/ and tests/browser/ share one build; tests/conftest.py keeps it out of the fast
tier."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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
