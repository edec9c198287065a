"""The command line: ``python -m attention_src.bench [--quick] [--out FILE]``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from .memory import peak_memory
from .results import format_tables
from .runner import run
from .sections import SECTIONS
from .settings import FULL, QUICK

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m attention_src.bench",
        description="Time and measure naive, tiled and PyTorch attention on this "
        "machine. Set the number of threads from outside, e.g. OMP_NUM_THREADS=2.",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, few repetitions (<= 60 s)",
    )
    p.add_argument("--out", type=Path, help="where to write the JSON results")
    p.add_argument(
        "--sections", help=f"comma-separated subset of {','.join(SECTIONS)}"
    )
    p.add_argument("--reps", type=int, help="repetitions per comparison")
    p.add_argument("--sizes", help="comma-separated L for the attention section")
    p.add_argument(
        "--module-sizes", help="comma-separated L for the modules section"
    )
    p.add_argument(
        "--autograd-sizes", help="comma-separated L, modules with autograd on"
    )
    p.add_argument(
        "--memory-sizes", help="comma-separated L for the memory section"
    )
    p.add_argument(
        "--block-sweep-length", type=int, help="L for the tile-size sweep"
    )
    p.add_argument(
        "--matmul-n", type=int, help="size n of the reference (n, n) @ (n, n)"
    )
    p.add_argument(
        "--kv-prompt-lens", help="comma-separated prompt lengths, KV-cache section"
    )
    p.add_argument(
        "--kv-new-tokens", type=int, help="tokens generated, KV-cache section"
    )
    p.add_argument(
        "--min-sample-s", type=float, help="shortest timing sample, seconds"
    )
    p.add_argument(
        "--max-wait-s", type=float,
        help="per comparison, how long to keep repeating repetitions disturbed "
        "by other processes",
    )  # fmt: skip
    p.add_argument("--dtype", default="float32")
    p.add_argument("--device", default="cpu")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument(
        "--peak-memory", nargs=2, metavar=("IMPL", "L"),
        help="measure one call in this process and print JSON "
        "(used by the memory section)",
    )  # fmt: skip
    p.add_argument("--causal", action="store_true", help="with --peak-memory")
    return p


def _ints(text: str | None) -> tuple[int, ...] | None:
    return None if text is None else tuple(int(x) for x in text.split(",") if x)


def main(argv: list[str] | None = None) -> dict | None:
    """``python -m attention_src.bench`` with ``argv`` (default: the command
    line's): run, print the tables, write the JSON results; returns them.

    With ``--peak-memory IMPL L`` it only measures that call in this process
    and prints its JSON line (what the memory section runs), returning None.
    """
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    settings = replace(
        QUICK if args.quick else FULL,
        dtype=args.dtype, device=args.device,
        batch=args.batch, heads=args.heads, head_dim=args.head_dim,
    )  # fmt: skip
    if args.peak_memory:
        impl, L = args.peak_memory[0], int(args.peak_memory[1])
        print(json.dumps(peak_memory(impl, L, settings, causal=args.causal)))
        return None
    overrides = {
        "sections": tuple(args.sections.split(",")) if args.sections else None,
        "reps": args.reps,
        "sizes": _ints(args.sizes),
        "module_sizes": _ints(args.module_sizes),
        "autograd_sizes": _ints(args.autograd_sizes),
        "memory_sizes": _ints(args.memory_sizes),
        "block_sweep_length": args.block_sweep_length,
        "matmul_n": args.matmul_n,
        "kv_prompt_lens": _ints(args.kv_prompt_lens),
        "kv_new_tokens": args.kv_new_tokens,
        "min_sample_s": args.min_sample_s,
        "max_wait_s": args.max_wait_s,
    }
    settings = replace(
        settings, **{k: v for k, v in overrides.items() if v is not None}
    )
    threads = os.environ.get("OMP_NUM_THREADS")
    command = ("OMP_NUM_THREADS=" + threads + " " if threads else "") + " ".join(
        ["python -m attention_src.bench", *argv]
    )
    results = run(settings, command=command)
    print()
    print(format_tables(results))
    out = args.out or Path(
        f"benchmark-{settings.device}{'-quick' if args.quick else ''}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {out}")
    return results
