"""A page as one program: what its copy buttons give, in page order, run once.

The contract of the site is the copy button: the texts a reader copies from a
page, pasted block by block in page order into one fresh Python interpreter,
run (or raise exactly the exception the page shows right after them). The
build executes exactly that program, and the outputs the page shows are
captured from that one run, block by block:

- :func:`page_program` reads a page's Markdown (its ``--8<--`` includes
  expanded, as ``pymdownx.snippets`` expands them) and returns its Python
  blocks in page order, each with the text its copy button gives: a block's
  code as shown, or, for a listing included from ``attention_src``, the code
  with the imports and helpers it needs (:func:`site_tools.engine.copytext.listing_copy`).
  The copy texts are known here, at the Markdown level, before any rendering.
- A figure's drawing code (an executed block that shows no code) is not copied
  by a reader. It runs at its place in the program, against the names the page
  has made so far (and those earlier figures' code made), but in a namespace of
  its own and with the random generators put back afterwards, so that the
  blocks the reader copies run exactly as they would without it.
- :func:`run_program` runs the program in a fresh interpreter
  (``python -m site_tools.engine.program``) and returns, per block, what it printed,
  the exception message a ``raises=`` block showed, or the traceback of a block
  that failed (the build then fails: every copy text runs, as a fact of the build).

The store of executed outputs (:mod:`site_tools.engine.store`) keys each block on the
shape of the program up to it and serves the Python fence
(:mod:`site_tools.engine.fences`) from this run.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import linecache
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from site_tools.engine.blocks import split

ROOT = Path(__file__).resolve().parents[2]

ATTR = re.compile(r'(\w+)="([^"]*)"')
SKIP = re.compile(r'<div\b[^>]*\bdata-skip-reason="(?P<why>[^"]*)"')
LISTING = re.compile(r"attention_src/[\w/]+\.py")
EXEC_ON = {"on", "true", "yes", "1"}
TORCH_FRESH_SEED = 67280421310721  # torch's default seed (torch.initial_seed() may differ)


@dataclass
class Block:
    """One Python block of a page, as the program runs it."""

    index: int  # 1-based, among the page's Python blocks, in page order
    kind: str  # "code" (executed, shown), "figure" (executed, not shown), "plain", "listing"
    code: str  # what runs: the copy text (a figure's code for a figure)
    shown: str  # the code shown on the page ("" for a figure)
    raises: str | None = None  # the exception the page shows right after it
    skip: str | None = None  # why the build and the tests do not run it (still copied)
    listing: str | None = None  # the source file of an included listing
    session: str | None = None  # markdown-exec's session (one namespace for the page now)

    @property
    def executed_by_fence(self) -> bool:
        """Whether the page shows this block's output (markdown-exec's fence asks for it)."""
        return self.kind in {"code", "figure"}

    @property
    def copied(self) -> bool:
        return self.kind != "figure"


class ProgramError(ValueError):
    """A page whose Python blocks cannot make a program (a marked block that runs, …)."""


@cache
def _snippets():
    import markdown

    md = markdown.Markdown(
        extensions=["pymdownx.snippets"],
        extension_configs={"pymdownx.snippets": {"base_path": [str(ROOT)], "check_paths": True}},
    )
    return md.preprocessors["snippet"]


def page_program(markdown_text: str) -> list[Block]:
    """The page's Python blocks in page order, each with its copy text.

    Fences inside other fences (a ````markdown example) are not blocks; a fence
    inside ``<div class="copy-skip" data-skip-reason="…" markdown>`` is copied
    but not run (the reason travels with it).
    """
    from site_tools.engine.copytext import listing_copy

    lines = _snippets().run(markdown_text.split("\n"))
    fences, prose = split(lines)
    skip_at: dict[int, str | None] = {}  # line -> the copy-skip reason in force there
    skip: str | None = None
    for number, line in prose:
        found = SKIP.search(line)
        if found:
            skip = found["why"]
        elif skip is not None and line.strip() == "</div>":
            skip = None
        skip_at[number] = skip
    blocks: list[Block] = []
    for fence in fences:
        before = [n for n in skip_at if n < fence.line]
        skip = skip_at[max(before)] if before else None
        info = fence.info
        if fence.lang != "python":
            continue
        attrs = dict(ATTR.findall(info))
        code = fence.code.rstrip("\n")
        executed = attrs.get("exec") in EXEC_ON
        title = attrs.get("title", "")
        number = len(blocks) + 1
        if executed and skip is not None:
            raise ProgramError(
                f'block {number}: an executed block (exec="on") cannot be marked '
                f"copy-skip ({skip!r}): the page shows what it prints"
            )
        if executed:
            kind = "code" if attrs.get("source") else "figure"
            block = Block(number, kind, code, code if kind == "code" else "")
        elif LISTING.fullmatch(title):
            module = title[:-3].replace("/", ".")
            block = Block(number, "listing", listing_copy(code, module).text, code, listing=title)
        else:
            block = Block(number, "plain", code, code)
        if attrs.get("raises") and not executed:
            raise ProgramError(
                f'block {number}: raises="{attrs["raises"]}" on a block the build does not '
                'show running: add exec="on" source="above", so the page shows the error'
            )
        block.raises = attrs.get("raises")
        block.skip = skip
        block.session = attrs.get("session")
        blocks.append(block)
    return blocks


def copies(blocks: list[Block]) -> list[dict]:
    """The copy texts (what ``site_tools.engine.copyrun`` reads): the blocks a reader copies,
    numbered 1, 2, … in page order."""
    found = []
    for block in blocks:
        if block.copied:
            found.append(
                {
                    "index": len(found) + 1,
                    "kind": "python",
                    "code": block.code,
                    "shown": block.shown,
                    "raises": block.raises,
                    "skip": block.skip,
                    "listing": block.listing,
                }
            )
    return found


def write_copies(site_dir: str | Path, url: str, page) -> Path | None:
    """Write the copy texts of a page's program (an open page of :mod:`site_tools.engine.store`)
    to ``<site>/_copies/<url>.json``, in the format ``site_tools.engine.copyrun`` reads, each with
    what the build's run of it did (``status``: ``ok``, ``raised as shown``, ``skipped`` or
    ``failed``)."""
    from site_tools.engine.copytext import copies_path

    blocks = copies(page.blocks)
    if not blocks:
        return None
    copied = [i for i, b in enumerate(page.blocks) if b.copied]
    for block, index in zip(blocks, copied, strict=True):
        if index in page.errors:
            block["status"] = "failed"
        elif block["skip"] is not None:
            block["status"] = "skipped"
        else:
            block["status"] = "raised as shown" if block["raises"] else "ok"
    path = copies_path(site_dir, url)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"page": url or "/", "blocks": blocks}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


# --- running a program: in a fresh interpreter -------------------------------------------


def _exception(name: str) -> type[BaseException]:
    exc = getattr(builtins, name, None)
    if exc is None:
        import torch  # torch's own errors, e.g. torch.OutOfMemoryError

        exc = getattr(torch, name, None)
    if not (isinstance(exc, type) and issubclass(exc, BaseException)):
        raise ProgramError(f'raises="{name}" does not name an exception class')
    return exc


def shown_exception(error: BaseException) -> str:
    """The message a ``raises=`` block shows under its code, reflowed to the code
    column (84)."""
    shown = "".join(traceback.format_exception_only(type(error), error))
    wrap = textwrap.TextWrapper(84, subsequent_indent="  ", break_long_words=False)
    wrap.break_on_hyphens = False
    return "".join(wrap.fill(line) + "\n" for line in shown.splitlines())


class _Generators:
    """The random generators' states, to put back after a figure's code."""

    def __init__(self):
        import random

        import numpy as np
        import torch

        self.torch = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        self.random = random.getstate()
        self.numpy = np.random.get_state()

    def restore(self) -> None:
        import random

        import numpy as np
        import torch

        torch.set_rng_state(self.torch)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
        random.setstate(self.random)
        np.random.set_state(self.numpy)


def execute(blocks: list[dict], page: str = "page") -> list[dict]:
    """Run the program's blocks in this interpreter, in order, in one namespace.

    Returns per block ``{"index", "status", "output", "error", "seconds"}``:
    status ``ok``, ``raised as shown`` (output: the message), ``skipped``,
    ``failed`` (error: the traceback), or ``not run`` (after a failure).
    """
    import random

    import numpy as np
    import torch

    # A reader's fresh interpreter, made repeatable: torch's documented default seed,
    # Python's and NumPy's generators seeded with 0, so the page prints the same each run.
    torch.manual_seed(TORCH_FRESH_SEED)
    random.seed(0)
    np.random.seed(0)
    namespace: dict = {"__name__": "__main__"}
    drawing: dict = {}  # names the figures' code made (a reader's namespace never sees them)
    results: list[dict] = []
    failed = False
    for block in blocks:
        result = {"index": block["index"], "status": "ok", "output": "", "error": None}
        if failed:
            results.append({**result, "status": "not run"})
            continue
        if block.get("skip") is not None:
            results.append({**result, "status": "skipped"})
            continue
        filename = f"<{page}, block {block['index']}>"
        code = block["code"]
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        figure = block["kind"] == "figure"
        saved = _Generators() if figure else None
        scope = {**drawing, **namespace} if figure else namespace
        printed = io.StringIO()
        start = time.perf_counter()
        try:
            compiled = compile(code, filename, "exec")
            with contextlib.redirect_stdout(printed):
                exec(compiled, scope)
            if block.get("raises"):
                result["status"] = "failed"
                result["error"] = (
                    f"the block was marked raises={block['raises']!r} but ran without an "
                    f"error\noutput was:\n{printed.getvalue()}"
                )
        except Exception as error:
            expected = _exception(block["raises"]) if block.get("raises") else None
            if expected is not None and isinstance(error, expected):
                result["status"] = "raised as shown"
                printed = io.StringIO(shown_exception(error))
            else:
                result["status"] = "failed"
                result["error"] = "".join(traceback.format_exception(error))
        finally:
            if saved is not None:
                saved.restore()
                drawing.update(
                    (k, v) for k, v in scope.items() if k not in namespace or namespace[k] is not v
                )
        result["output"] = printed.getvalue()
        result["seconds"] = round(time.perf_counter() - start, 3)
        failed = result["status"] == "failed"
        results.append(result)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    return results


def run_program(
    blocks: list[Block],
    page: str = "page",
    threads: int | None = None,
    timeout: float = 3600,
    nice: bool = False,
) -> list[dict]:
    """Run ``blocks`` as one program in a fresh interpreter; :func:`execute`'s results.

    The interpreter starts in the checkout (the pages read and write there, as a
    reader's session in the repository does) with the project importable.
    ``threads``: torch's thread count in it (the build's parallel pages share the
    cores); by default torch's own. ``nice``: at a lower priority (the background runs
    of ``./dev.sh serve``, so that the pages it serves stay quick).
    """
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTHONSAFEPATH", None)
    if threads:
        env["ATTENTION_PROGRAM_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory(prefix="program-") as folder:
        source = Path(folder) / "program.json"
        report = Path(folder) / "report.json"
        source.write_text(
            json.dumps({"page": page, "blocks": [asdict(b) for b in blocks]}), encoding="utf-8"
        )
        proc = subprocess.run(
            [sys.executable, "-m", "site_tools.engine.program", str(source), str(report)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            preexec_fn=(lambda: os.nice(10)) if nice else None,
        )
        if proc.returncode != 0 or not report.exists():
            crash = f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            return [
                {
                    "index": b.index,
                    "status": "failed" if n == 0 else "not run",
                    "output": "",
                    "error": f"the page's interpreter crashed: {crash}" if n == 0 else None,
                }
                for n, b in enumerate(blocks)
            ]
        return json.loads(report.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    """``python -m site_tools.engine.program PROGRAM.json REPORT.json`` (used by
    :func:`run_program`)."""
    args = sys.argv[1:] if argv is None else argv
    data = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    threads = os.environ.get("ATTENTION_PROGRAM_THREADS")
    if threads:
        import torch

        torch.set_num_threads(int(threads))
    results = execute(data["blocks"], data["page"])
    Path(args[1]).write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
