"""Run the copy texts of built pages as a reader would: one fresh interpreter per
page, every block in page order, each block executed as one unit (as IPython or
a notebook runs a cell).

    python -m site_tools.engine.copyrun site/_copies/*.json            # on the CPU
    python -m site_tools.engine.copyrun --device cuda site/_copies/*.json

The JSON files are written by the build (``site_tools.engine.copytext``). A block
passes when it runs, or when it raises exactly the exception its page shows
right after it (``raises``). Blocks marked ``skip`` are not run (the reason is
printed). Needs only the standard library here; the pages themselves need
what they import (torch, matplotlib, attention_src). The last line printed is
``N passed, N failed`` over the blocks; the exit status is 1 if any failed.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import io
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _exception_type(name: str) -> type[BaseException] | None:
    exc = getattr(builtins, name, None)
    if exc is None:
        import torch

        exc = getattr(torch, name, None)
    return exc if isinstance(exc, type) and issubclass(exc, BaseException) else None


def run_blocks(page: str, blocks: list[dict]) -> list[dict]:
    """Execute the blocks in this interpreter, in order, in one namespace."""
    namespace: dict = {"__name__": "__main__"}
    results = []
    for block in blocks:
        where = f"{page}, block {block['index']}"
        if block.get("skip") is not None:
            results.append({"index": block["index"], "status": "skipped", "why": block["skip"]})
            continue
        expected = _exception_type(block["raises"]) if block.get("raises") else None
        printed = io.StringIO()
        start = time.perf_counter()
        status, error = "ok", None
        try:
            code = compile(block["code"], f"<{where}>", "exec")
            with contextlib.redirect_stdout(printed):
                exec(code, namespace)
            if block.get("raises"):
                status, error = "failed", f"the page shows {block['raises']}, but it ran"
        except Exception as exc:
            if expected is not None and isinstance(exc, expected):
                status = "raised as shown"
            else:
                status = "failed"
                error = "".join(traceback.format_exception(exc))
                if block.get("raises"):
                    error = f"the page shows {block['raises']}; it raised:\n{error}"
        results.append(
            {
                "index": block["index"],
                "status": status,
                "error": error,
                "seconds": round(time.perf_counter() - start, 3),
                "printed": printed.getvalue()[-2000:],
            }
        )
    return results


def run_page(
    path: str | Path, device: str = "cpu", timeout: float = 600, python: str | Path | None = None
) -> dict:
    """Run one page's copy texts in a fresh interpreter; return its report.

    ``python``: another interpreter (a reader's environment), which runs this file as
    a script from a scratch folder, so that nothing of the checkout is importable.
    """
    import tempfile

    env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # the pages choose cuda when they see it
    if python is None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "site_tools.engine.copyrun"]
        cwd = ROOT
    else:
        env.pop("PYTHONPATH", None)
        command = [str(python), str(Path(__file__).resolve())]
        cwd = Path(tempfile.mkdtemp(prefix="reader-"))
    proc = subprocess.run(
        [*command, "--one", str(Path(path).resolve()), "--device", device],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {
            "page": str(path),
            "device": device,
            "crashed": f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}",
            "blocks": [],
        }
    return json.loads(lines[-1])


def _one(path: str, device: str) -> None:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device")
    report = {
        "page": data["page"],
        "device": device,
        "blocks": run_blocks(data["page"], data["blocks"]),
    }
    sys.stdout.flush()
    print(json.dumps(report))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="copy-text JSON files written by the build")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--report", help="write every page's report to this JSON file")
    args = parser.parse_args(argv)
    if args.one:
        _one(args.files[0], args.device)
        return 0
    reports, passed, failed = [], 0, 0
    for path in args.files:
        start = time.perf_counter()
        report = run_page(path, args.device)
        reports.append(report)
        bad = [b for b in report["blocks"] if b["status"] == "failed"]
        good = [b for b in report["blocks"] if b["status"] in {"ok", "raised as shown"}]
        if report.get("crashed"):
            failed += 1
            print(f"{path}: crashed\n{report['crashed']}")
            continue
        passed += len(good)
        failed += len(bad)
        print(
            f"{report['page']}: {len(good)} ran, {len(bad)} failed "
            f"({time.perf_counter() - start:.1f} s)"
        )
        for b in bad:
            print(f"  block {b['index']}:\n{b['error']}")
    if args.report:
        Path(args.report).write_text(json.dumps(reports, indent=1), encoding="utf-8")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
