"""Measure the site's build and reload times: ``python -m site_tools.measure``.

- cold build: ``mkdocs build`` with empty caches (training, notebooks and the
  store of executed outputs);
- warm build: the same again, caches filled;
- a comment-only copy: a copy of the edited page whose code differs only in
  comments, rendered through the filled store (what a translated edition adds);
- page reload: ``mkdocs serve --dirty`` running; ``--edit-after`` seconds after it
  first shows the page, append a line to one page and time until the served HTML
  shows it (default: the masks chapter);
- code reload: add a statement inside ``causal_mask`` (``attention_src/masks.py``,
  included by the masks chapter) and time until that page is served with it,
  then until every other page that can reach the edited code has been rebuilt
  (the second build of ``site_tools.engine.deps``), and count the pages of each build.

Prints one line per figure. Every edit is undone afterwards.

``--reload-only`` skips the two builds; ``--page docs/notation.md`` times the
page edit on another page.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "chapters" / "masks.md"
CODE = ROOT / "attention_src" / "masks.py"
CODE_ANCHOR = "    size_k = size_q if size_k is None else size_k\n"  # inside causal_mask
CODE_PAGE_URL = "chapters/masks/"
STATE_DIR = ROOT / ".cache" / "site-deps"


def _both_builds_done(since: float, timeout: float = 300.0) -> tuple[float, list]:
    """Wait until a state file written after ``since`` records a finished edit."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        for state in STATE_DIR.glob("*.json"):
            if state.stat().st_mtime < since:
                continue
            try:
                data = json.loads(state.read_text("utf-8"))
            except ValueError:
                continue
            if data.get("code_mtime", -1.0) >= 0:
                return time.perf_counter() - start, data.get("builds", [])
        time.sleep(0.1)
    raise TimeoutError("the dependent pages were not rebuilt")


def _build(site_dir: str, env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-d", site_dir],
        cwd=ROOT,
        env=env,
        check=True,
    )
    return time.perf_counter() - start


def _reworded_copy(page: Path, tmp: str, env: dict) -> str:
    """Render a copy of ``page`` whose code differs only in comments (as a
    translated edition's does) through the store the builds filled: the time it
    adds is its rendering alone, and it should execute nothing."""
    copy = Path(tmp) / "edition" / page.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    from site_tools.engine.blocks import split

    lines = page.read_text("utf-8").split("\n")
    for fence in split(lines)[0]:  # the lines inside each fenced block
        for i in range(fence.line, fence.end - 1):
            if "  # " in lines[i]:
                lines[i] = lines[i].split("  # ")[0] + "  # 另一种语言的注释"
    copy.write_text("\n".join(lines), "utf-8")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "site_tools.engine.parallel", str(copy)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - start
    report = json.loads(proc.stdout.strip().splitlines()[-1])[0]
    return (
        f"{seconds:.1f} s (with the interpreter's start), "
        f"{report['executed']} of {report['blocks']} blocks executed"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read().decode("utf-8")
    except OSError:
        return ""


def _wait_for(url: str, marker: str, timeout: float = 120.0) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if marker in _fetch(url):
            return time.perf_counter() - start
        time.sleep(0.05)
    raise TimeoutError(f"{marker!r} did not appear at {url} within {timeout} s")


def _page_url(page: Path) -> str:
    relative = page.resolve().relative_to(ROOT / "docs").with_suffix("")
    return "" if relative.name == "index" else relative.as_posix() + "/"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m site_tools.measure")
    parser.add_argument("--reload-only", action="store_true", help="skip the two builds")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page to edit")
    parser.add_argument(
        "--edit-after",
        type=float,
        default=1.0,
        help="seconds after serve first shows the page before the page edit (3: an edit "
        "while the first build's work after it is under way)",
    )
    args = parser.parse_args(argv)
    page, page_url = args.page.resolve(), _page_url(args.page)
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    if not args.reload_only:
        with tempfile.TemporaryDirectory() as tmp:
            cold_env = dict(
                env, ATTENTION_CACHE_DIR=f"{tmp}/cache", ATTENTION_EXEC_STORE=f"{tmp}/executed"
            )
            shutil.rmtree(ROOT / ".cache" / "mkdocs-jupyter", ignore_errors=True)
            print(f"cold build: {_build(f'{tmp}/site', cold_env):.1f} s")
            print(f"warm build: {_build(f'{tmp}/site', cold_env):.1f} s")
            print(f"a comment-only copy of {page.name}: {_reworded_copy(page, tmp, cold_env)}")

    port = _free_port()
    base = f"http://127.0.0.1:{port}/"
    server = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", "--dirty", "-a", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    page_text, code_text = page.read_text(), CODE.read_text()
    try:
        start = time.perf_counter()
        _wait_for(base + page_url, "<html", timeout=900)
        print(
            f"mkdocs serve --dirty, first build until served: {time.perf_counter() - start:.1f} s"
        )
        time.sleep(args.edit_after)
        marker = f"reload-marker-{time.time_ns()}"
        start = time.perf_counter()
        page.write_text(page_text + f"\n{marker}\n")
        _wait_for(base + page_url, marker)
        print(
            f"page edit ({page.relative_to(ROOT)}) {args.edit_after:g} s after the first page "
            f"-> served: {time.perf_counter() - start:.2f} s"
        )
        page.write_text(page_text)
        time.sleep(2.0)
        marker = f"code-marker-{time.time_ns()}"
        assert CODE_ANCHOR in code_text, "the line to edit in causal_mask was not found"
        since = time.time()
        start = time.perf_counter()
        CODE.write_text(code_text.replace(CODE_ANCHOR, CODE_ANCHOR + f'    _ = "{marker}"\n', 1))
        _wait_for(base + CODE_PAGE_URL, marker)
        served = time.perf_counter() - start
        print(f"code edit in causal_mask -> {CODE_PAGE_URL} served: {served:.2f} s")
        _, builds = _both_builds_done(since)
        total = time.perf_counter() - start
        print(f"code edit -> every page that can reach it rebuilt: {total:.2f} s")
        for number, pages in enumerate(builds[-2:], start=1):
            print(f"  build {number}: {len(pages)} page(s): {', '.join(pages)}")
    finally:
        page.write_text(page_text)
        CODE.write_text(code_text)
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
