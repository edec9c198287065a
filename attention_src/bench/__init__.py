"""Benchmark attention on this machine: ``python -m attention_src.bench``.

Side by side, in one run:

- ``matmul``: GFLOP/s of a large ``torch.matmul``, measured first and last --
  the ceiling the attention figures are compared with;
- ``attention``: one forward call of naive attention
  (``attention_src.scaled_dot_product_attention``), ``tiled_attention`` and
  ``F.scaled_dot_product_attention``, causal and not, L = S over powers of two;
- ``modules``: ``nn.MultiheadAttention(need_weights=False)`` against
  ``FastMultiHeadAttention`` and our ``MultiHeadAttention``, self-attention,
  under ``torch.no_grad()`` (inference) and with autograd on (forward only);
- ``blocks``: ``tiled_attention`` with other tile sizes;
- ``memory``: peak memory of one call per implementation and size, each in a
  fresh subprocess (``python -m attention_src.bench --peak-memory IMPL L``);
- ``kv_cache``: greedy decoding of a seeded, untrained ``DecoderOnlyLM``,
  ``generate(use_cache=False)`` (the whole prefix again at every step) against
  ``generate(use_cache=True)``, for each prompt length.

The machine may be shared and noisy, so the implementations of one
comparison are timed round-robin within every repetition (a burst of load
hits them all alike) and the summary is the median of the per-repetition
ratios. A repetition during which other processes used more than a tenth of
the machine's CPU time is thrown away and repeated once the machine is quiet
(waiting up to half an hour per comparison); the results record how many
were, and the other processes' share during each kept one. The number of
threads is
torch's default; set it from outside, e.g.
``OMP_NUM_THREADS=2 python -m attention_src.bench``.

Every section is a function ``bench_<name>(settings) -> dict`` listed in
``SECTIONS``; ``run`` collects their results, with a description of the
machine, in one JSON-serialisable dict. A new section is one more function
and one more entry.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..efficient import FastMultiHeadAttention, tiled_attention
from ..kv_cache import decoding_setup
from ..masks import causal_mask
from ..multi_head import MultiHeadAttention
from ..scaled_dot_product import scaled_dot_product_attention

__all__ = [
    "Settings",
    "FULL",
    "QUICK",
    "SECTIONS",
    "ATTENTION_IMPLS",
    "KV_IMPLS",
    "time_round_robin",
    "summarize",
    "attention_flops",
    "machine_info",
    "peak_memory",
    "measure_peak_memory",
    "tensor_memory_peak",
    "memory_sweep",
    "run",
    "format_tables",
    "load_results",
    "main",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RESULTS = REPO_ROOT / "docs" / "data" / "benchmark-cpu.json"


@dataclass(frozen=True)
class Settings:
    """What one run measures. ``FULL`` and ``QUICK`` below are the two presets."""

    sizes: tuple[int, ...]  # L = S for the attention section
    module_sizes: tuple[int, ...]  # L for the modules section, inference mode
    autograd_sizes: tuple[int, ...]  # L for the modules section with autograd on
    memory_sizes: tuple[int, ...]  # L for the peak-memory subprocesses
    block_sweep_length: int  # L for the tile-size sweep
    block_sizes: tuple[tuple[int, int], ...]  # (block_size, key_block_size) pairs
    reps: int  # round-robin repetitions per comparison
    min_sample_s: float  # a timing sample repeats the call until it lasts this long
    batch: int = 1  # B
    heads: int = 8  # H
    head_dim: int = 64  # Dh (the modules use d_model = H * Dh)
    matmul_n: int = 2048  # the large matmul is (n, n) @ (n, n)
    dtype: str = "float32"
    device: str = "cpu"
    seed: int = 0
    kv_prompt_lens: tuple[int, ...] = (16, 512)  # prompts for the KV-cache section
    kv_new_tokens: int = 256  # tokens generated after each prompt
    # the decoder the KV-cache section times (d_ff = 4 * d_model)
    kv_d_model: int = 256
    kv_heads: int = 4
    kv_layers: int = 4
    kv_vocab: int = 1000
    sections: tuple[str, ...] = (
        "attention",
        "modules",
        "blocks",
        "memory",
        "kv_cache",
    )
    # repeat a repetition if others used more CPU than this
    quiet_share: float | None = 0.1
    # ... but wait for a quiet machine at most this long per comparison
    max_wait_s: float = 1800.0


POWERS = tuple(2**i for i in range(7, 14))  # 128 ... 8192
FULL = Settings(
    sizes=POWERS,
    module_sizes=POWERS,
    autograd_sizes=POWERS[:-1],
    memory_sizes=POWERS,
    block_sweep_length=4096,
    block_sizes=(
        (64, 256),
        (128, 128),
        (128, 512),
        (128, 2048),
        (256, 256),
        (256, 1024),
    ),
    reps=7,
    min_sample_s=0.2,
)
QUICK = Settings(
    sizes=(128, 256, 512, 1024),
    module_sizes=(128, 512),
    autograd_sizes=(128,),
    memory_sizes=(256, 1024),
    block_sweep_length=512,
    block_sizes=((64, 256), (128, 512)),
    reps=3,
    min_sample_s=0.02,
    kv_prompt_lens=(16, 64),
    kv_new_tokens=32,
    max_wait_s=0.0,  # a first look: never wait for a quiet machine
)


# --------------------------------------------------------------------------- timing


def _sync(device: torch.device | str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _cpu_ticks() -> tuple[int, int, int] | None:
    """Clock ticks so far: (all CPUs, all CPUs busy, this process); None off
    Linux."""
    try:
        fields = [
            int(x)
            for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
        ]
        own = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, ValueError, IndexError):
        return None
    total = sum(fields)
    busy = total - fields[3] - fields[4]  # minus idle and iowait
    # utime + stime of all our threads
    return total, busy, int(own[11]) + int(own[12])


def _other_share(before, after) -> float | None:
    """Share of the machine's CPU time that other processes used between two
    snapshots."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    other = (after[1] - before[1]) - (after[2] - before[2])
    return max(0.0, other / (after[0] - before[0]))


def _wait_until_quiet(
    quiet_share: float, budget_s: float, window_s: float = 2.0
) -> float:
    """Sleep in windows of ``window_s`` until other processes use at most
    ``quiet_share`` of the CPU time (or ``budget_s`` runs out); returns the time
    slept."""
    slept = 0.0
    while slept < budget_s:
        before = _cpu_ticks()
        time.sleep(window_s)
        slept += window_s
        share = _other_share(before, _cpu_ticks())
        if share is None or share <= quiet_share:
            break
    return slept


def time_round_robin(
    fns: dict[str, Callable[[], object]],
    reps: int,
    min_sample_s: float = 0.0,
    device: torch.device | str = "cpu",
    *,
    quiet_share: float | None = None,
    max_wait_s: float = 0.0,
    report: dict | None = None,
) -> dict[str, list[float]]:
    """Seconds per call of each function, ``reps`` samples each, interleaved.

    Each function is called once first (warm-up; it also tells how many calls
    make a sample of at least ``min_sample_s``). Then every repetition times
    every function once, starting with a different one each time, so that a
    burst of load on a shared machine lands on all of them alike.

    With ``quiet_share`` set, a repetition during which other processes used
    more than that share of the machine's CPU time is thrown away, and timing
    resumes once the machine is quiet again -- until ``max_wait_s`` seconds
    have been spent waiting; after that repetitions are kept as they come.
    ``report``, if given, receives how many were thrown away and the share of
    other processes during each kept one.
    """
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    calls = {}
    for name, fn in fns.items():
        start = time.perf_counter()
        fn()
        _sync(device)
        once = time.perf_counter() - start
        calls[name] = max(1, math.ceil(min_sample_s / max(once, 1e-9)))
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    shares: list[float | None] = []
    rejected, waited, attempt = 0, 0.0, 0
    while len(shares) < reps:
        order = names[attempt % len(names) :] + names[: attempt % len(names)]
        attempt += 1
        before = _cpu_ticks()
        sample = {}
        for name in order:
            fn, n = fns[name], calls[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            _sync(device)
            sample[name] = (time.perf_counter() - start) / n
        share = _other_share(before, _cpu_ticks())
        disturbed = (
            quiet_share is not None and share is not None and share > quiet_share
        )
        if disturbed and waited < max_wait_s:
            rejected += 1
            waited += _wait_until_quiet(quiet_share, max_wait_s - waited)
            continue
        for name in names:
            times[name].append(sample[name])
        shares.append(share)
    if report is not None:
        report["rejected_reps"] = rejected
        report["other_cpu_share"] = [
            None if x is None else round(x, 3) for x in shares
        ]
    return times


def summarize(times: dict[str, list[float]], reference: str) -> dict:
    """Median seconds per function and the median of its paired ratios to
    ``reference``."""
    ref = times[reference]
    return {
        "median_s": {name: statistics.median(ts) for name, ts in times.items()},
        "ratio": {
            name: statistics.median(t / r for t, r in zip(ts, ref, strict=True))
            for name, ts in times.items()
        },
        "times_s": times,
    }


def attention_flops(
    B: int, H: int, L: int, S: int, D: int, causal: bool = False
) -> int:
    """Multiply-adds of ``Q K^T`` and ``P V``, counted as 2 flops each: 4 B H L S D.

    Causal attention only computes the pairs a query may see, so it counts
    those: ``j <= i + (S - L)``.
    """
    if not causal:
        return 4 * B * H * L * S * D
    pairs = sum(min(S, max(0, i + 1 + S - L)) for i in range(L))
    return 4 * B * H * pairs * D


# ---------------------------------------------------------------------- the machine


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info(device: str = "cpu") -> dict:
    """Where the numbers come from: CPU, cores, threads, library versions."""
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "omp_num_threads_env": os.environ.get("OMP_NUM_THREADS"),
        "device": device,
    }
    if torch.device(device).type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --------------------------------------------------------------------- the sections


def _dtype(settings: Settings) -> torch.dtype:
    dtype = getattr(torch, settings.dtype, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(
            f"dtype must name a floating torch dtype, got {settings.dtype!r}"
        )
    return dtype


def _qkv(settings: Settings, L: int, S: int | None = None):
    S = L if S is None else S
    g = torch.Generator(device=settings.device).manual_seed(settings.seed)
    B, H, Dh = settings.batch, settings.heads, settings.head_dim
    kw = {"generator": g, "device": settings.device, "dtype": _dtype(settings)}
    return (
        torch.randn(B, H, L, Dh, **kw),
        torch.randn(B, H, S, Dh, **kw),
        torch.randn(B, H, S, Dh, **kw),
    )


def _attention_fns(q, k, v, causal: bool) -> dict[str, Callable[[], torch.Tensor]]:
    L, S = q.size(-2), k.size(-2)
    # built once, not timed
    mask = causal_mask(L, S, device=q.device) if causal else None
    # F.scaled_dot_product_attention's is_causal is top-left aligned:
    # explicit mask if L != S
    sdpa_mask = mask if causal and L != S else None
    return {
        "naive": lambda: scaled_dot_product_attention(q, k, v, mask)[0],
        "tiled": lambda: tiled_attention(q, k, v, causal=causal),
        "sdpa": lambda: F.scaled_dot_product_attention(
            q, k, v, attn_mask=sdpa_mask, is_causal=causal and sdpa_mask is None
        ),
    }


ATTENTION_IMPLS = {
    "naive": "attention_src.scaled_dot_product_attention: the full (L, S) weights",
    "tiled": (
        "attention_src.tiled_attention: online softmax over tiles, plain PyTorch"
    ),
    "sdpa": (
        "torch.nn.functional.scaled_dot_product_attention: PyTorch's fused kernel"
    ),
}


def _max_diff(
    fns: dict[str, Callable[[], torch.Tensor]], reference: str
) -> dict[str, float]:
    ref = fns[reference]().float()
    return {
        name: (fn().float() - ref).abs().max().item() for name, fn in fns.items()
    }


def _time(fns: dict[str, Callable[[], object]], settings: Settings):
    """``time_round_robin`` with the run's settings; returns
    (times, contention report)."""
    report: dict = {}
    times = time_round_robin(
        fns, settings.reps, settings.min_sample_s, settings.device,
        quiet_share=settings.quiet_share, max_wait_s=settings.max_wait_s,
        report=report,
    )  # fmt: skip
    return times, report


def bench_matmul(settings: Settings) -> dict:
    """GFLOP/s of ``(n, n) @ (n, n)``: what this machine's matrix products reach."""
    n = settings.matmul_n
    times, report = _time({"matmul": _matmul_fn(settings)}, settings)
    return {
        "n": n,
        "gflops": [2 * n**3 / t / 1e9 for t in times["matmul"]],
        **report,
    }


def _matmul_fn(settings: Settings) -> Callable[[], torch.Tensor]:
    n = settings.matmul_n
    g = torch.Generator(device=settings.device).manual_seed(settings.seed)
    kw = {"generator": g, "device": settings.device, "dtype": _dtype(settings)}
    a, b = torch.randn(n, n, **kw), torch.randn(n, n, **kw)
    return lambda: a @ b


def bench_attention(settings: Settings) -> dict:
    """naive vs tiled vs SDPA, one forward call each, causal and not, L = S.

    The large matmul is timed in the same round-robin, so each implementation's
    GFLOP/s can be compared with the machine's in the same repetitions
    (``matmul_fraction``: median over repetitions of the ratio of the two).
    """
    B, H, Dh = settings.batch, settings.heads, settings.head_dim
    matmul = _matmul_fn(settings)
    matmul_flops = 2 * settings.matmul_n**3
    rows = []
    for L in settings.sizes:
        q, k, v = _qkv(settings, L)
        for causal in (False, True):
            fns = _attention_fns(q, k, v, causal)
            with torch.no_grad():
                diffs = _max_diff(fns, "sdpa")
                times, report = _time({**fns, "matmul": matmul}, settings)
            matmul_times = times.pop("matmul")
            summary = summarize(times, "sdpa")
            flops = attention_flops(B, H, L, L, Dh, causal)
            gflops = {
                name: flops / t / 1e9 for name, t in summary["median_s"].items()
            }
            fraction = {
                name: statistics.median(
                    (flops / t) / (matmul_flops / m)
                    for t, m in zip(ts, matmul_times, strict=True)
                )
                for name, ts in times.items()
            }
            matmul_gflops = statistics.median(
                matmul_flops / m / 1e9 for m in matmul_times
            )
            rows.append(
                {"L": L, "S": L, "causal": causal, "flops": flops, "gflops": gflops,
                 "matmul_gflops": matmul_gflops, "matmul_fraction": fraction,
                 "max_abs_diff": diffs, **summary, **report}
            )  # fmt: skip
            print(_attention_line(rows[-1]), flush=True)
        del q, k, v
        gc.collect()
    return {
        "batch": B, "heads": H, "head_dim": Dh, "reference": "sdpa",
        "matmul_n": settings.matmul_n, "implementations": ATTENTION_IMPLS,
        "rows": rows,
    }  # fmt: skip


MODULE_IMPLS = {
    "nn": "torch.nn.MultiheadAttention(batch_first=True), need_weights=False",
    "fast": "attention_src.FastMultiHeadAttention: fused QKV projection + SDPA",
    "ours": (
        "attention_src.MultiHeadAttention: separate projections + naive attention"
    ),
}


def bench_modules(settings: Settings) -> dict:
    """nn.MultiheadAttention vs FastMultiHeadAttention vs MultiHeadAttention
    (eval mode)."""
    B, H = settings.batch, settings.heads
    D = H * settings.head_dim
    torch.manual_seed(settings.seed)
    reference = nn.MultiheadAttention(D, H, batch_first=True).to(
        settings.device, _dtype(settings)
    )
    reference.eval()
    fast = FastMultiHeadAttention.from_torch(reference)
    ours = MultiHeadAttention.from_torch(reference)
    rows = []
    runs = [("inference", L) for L in settings.module_sizes]
    runs += [("autograd", L) for L in settings.autograd_sizes]
    for mode, L in runs:
        g = torch.Generator(device=settings.device).manual_seed(settings.seed)
        x = torch.randn(
            B, L, D, generator=g, device=settings.device, dtype=_dtype(settings)
        )
        fns = {
            "nn": lambda x=x: reference(x, x, x, need_weights=False)[0],
            "fast": lambda x=x: fast(x)[0],
            "ours": lambda x=x: ours(x)[0],
        }
        with torch.set_grad_enabled(mode == "autograd"):
            diffs = _max_diff(fns, "nn")
            times, report = _time(fns, settings)
        rows.append(
            {
                "mode": mode,
                "L": L,
                "max_abs_diff": diffs,
                **summarize(times, "nn"),
                **report,
            }
        )
        print(_module_line(rows[-1]), flush=True)
        del x, fns
        gc.collect()
    return {
        "batch": B, "d_model": D, "heads": H, "reference": "nn",
        "modes": {
            "inference": "module.eval() under torch.no_grad()",
            "autograd": "module.eval() with autograd on (forward pass only)",
        },
        "implementations": MODULE_IMPLS, "rows": rows,
    }  # fmt: skip


def bench_blocks(settings: Settings) -> dict:
    """tiled_attention with other (block_size, key_block_size) pairs, against
    SDPA."""
    L = settings.block_sweep_length
    q, k, v = _qkv(settings, L)
    fns: dict[str, Callable[[], torch.Tensor]] = {
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v)
    }
    for bq, bk in settings.block_sizes:
        fns[f"{bq}x{bk}"] = lambda bq=bq, bk=bk: tiled_attention(
            q, k, v, block_size=bq, key_block_size=bk
        )
    with torch.no_grad():
        times, report = _time(fns, settings)
    summary = summarize(times, "sdpa")
    rows = [
        {"block_size": bq, "key_block_size": bk,
         "median_s": summary["median_s"][f"{bq}x{bk}"],
         "ratio": summary["ratio"][f"{bq}x{bk}"]}
        for bq, bk in settings.block_sizes
    ]  # fmt: skip
    for row in rows:
        print(
            f"  tiles {row['block_size']:4d} x {row['key_block_size']:<5d} "
            f"{row['median_s'] * 1e3:9.1f} ms  {row['ratio']:5.2f}x SDPA",
            flush=True,
        )
    return {
        "L": L, "causal": False, "sdpa_median_s": summary["median_s"]["sdpa"],
        "times_s": times, "rows": rows, **report,
    }  # fmt: skip


def bench_memory(settings: Settings) -> dict:
    """Peak memory of one call per implementation and size, each in a fresh
    process."""
    rows = []
    for L in settings.memory_sizes:
        for impl in ATTENTION_IMPLS:
            row = measure_peak_memory(impl, L, settings=settings)
            rows.append(row)
            print(
                f"  memory {impl:6s} L={L:5d}  peak extra "
                f"{row['peak_extra_bytes'] / 2**20:10.1f} MiB  (weights would be "
                f"{row['weights_bytes'] / 2**20:.1f} MiB)",
                flush=True,
            )
    return {
        "batch": settings.batch, "heads": settings.heads,
        "head_dim": settings.head_dim, "causal": False, "method": _MEMORY_METHOD,
        "rows": rows,
    }  # fmt: skip


KV_IMPLS = {
    "no_cache": (
        "DecoderOnlyLM.generate(use_cache=False): the whole prefix at every step"
    ),
    "cache": (
        "DecoderOnlyLM.generate(use_cache=True): only the new token, "
        "keys/values cached"
    ),
}


def bench_kv_cache(settings: Settings) -> dict:
    """Greedy decoding with and without the KV cache, per prompt length.

    ``speedup`` is the median over repetitions of (time without the cache) /
    (time with it). Both variants must write the same tokens.
    """
    rows, n = [], settings.kv_new_tokens
    for prompt_len in settings.kv_prompt_lens:
        model, prompt, model_kwargs = decoding_setup(
            prompt_len, settings.kv_new_tokens, d_model=settings.kv_d_model,
            num_heads=settings.kv_heads, num_layers=settings.kv_layers,
            vocab_size=settings.kv_vocab, batch_size=settings.batch,
            seed=settings.seed, device=settings.device,
        )  # fmt: skip
        model.to(_dtype(settings))
        fns = {
            "no_cache": lambda m=model, p=prompt: m.generate(p, n, use_cache=False),
            "cache": lambda m=model, p=prompt: m.generate(p, n, use_cache=True),
        }
        identical = torch.equal(fns["no_cache"](), fns["cache"]())
        if not identical:
            raise RuntimeError(
                f"cached decoding wrote other tokens (prompt {prompt_len})"
            )
        times, report = _time(fns, settings)
        summary = summarize(times, "cache")
        rows.append(
            {"prompt_len": prompt_len, "new_tokens": n, "identical": identical,
             "speedup": summary["ratio"]["no_cache"], **summary, **report}
        )  # fmt: skip
        print(_kv_line(rows[-1]), flush=True)
        del model, fns
        gc.collect()
    return {
        "batch": settings.batch, "model": model_kwargs, "reference": "cache",
        "implementations": KV_IMPLS, "rows": rows,
    }  # fmt: skip


SECTIONS: dict[str, Callable[[Settings], dict]] = {
    "attention": bench_attention,
    "modules": bench_modules,
    "blocks": bench_blocks,
    "memory": bench_memory,
    "kv_cache": bench_kv_cache,
}


# ---------------------------------------------------------------------- peak memory

_MEMORY_METHOD = (
    "CPU: a fresh Python process allocates the inputs and runs a small warm-up "
    "call; writing 5 to /proc/self/clear_refs resets the high-water mark VmHWM to "
    "the current resident size VmRSS; after one call, peak extra = VmHWM - VmRSS "
    "before the call (output included). CUDA: torch.cuda.max_memory_allocated() "
    "over the call."
)


def _status_kib(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field_name} not found in /proc/self/status")


def peak_memory(
    impl: str, L: int, settings: Settings = QUICK, *, causal: bool = False
) -> dict:
    """Extra bytes one call of ``impl`` needs at its peak, measured in THIS process.

    Meant for a fresh process (``python -m attention_src.bench --peak-memory``):
    in a long-lived one, memory freed earlier but kept by the allocator hides
    part of the peak. Use :func:`measure_peak_memory` from elsewhere.
    """
    if impl not in ATTENTION_IMPLS:
        raise ValueError(
            f"impl must be one of {sorted(ATTENTION_IMPLS)}, got {impl!r}"
        )
    cuda = torch.device(settings.device).type == "cuda"
    with torch.no_grad():
        tiny = _qkv(settings, min(L, 16))
        _attention_fns(*tiny, causal)[impl]()  # load the kernels and thread pools
        q, k, v = _qkv(settings, L)
        fn = _attention_fns(q, k, v, causal)[impl]
        del tiny
        gc.collect()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            out = fn()
            torch.cuda.synchronize()
            extra = torch.cuda.max_memory_allocated() - before
        else:
            Path("/proc/self/clear_refs").write_text("5")
            before = _status_kib("VmRSS")
            out = fn()
            extra = (_status_kib("VmHWM") - before) * 1024
    element = q.element_size()
    B, H = settings.batch, settings.heads
    return {
        "impl": impl, "L": L, "S": L, "causal": causal, "peak_extra_bytes": extra,
        "inputs_bytes": 3 * q.numel() * element,
        "output_bytes": out.numel() * element,
        "weights_bytes": B * H * L * L * element,
    }  # fmt: skip


def measure_peak_memory(
    impl: str,
    L: int,
    settings: Settings = QUICK,
    *,
    causal: bool = False,
    timeout: float = 600,
) -> dict:
    """:func:`peak_memory` in a fresh subprocess; returns its dict."""
    cmd = [
        sys.executable, "-m", "attention_src.bench", "--peak-memory", impl, str(L),
        "--batch", str(settings.batch), "--heads", str(settings.heads),
        "--head-dim", str(settings.head_dim), "--dtype", settings.dtype,
        "--device", settings.device,
    ]  # fmt: skip
    if causal:
        cmd.append("--causal")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=env, timeout=timeout
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def tensor_memory_peak(
    fn: Callable[[], object], device: torch.device | str = "cpu"
) -> int:
    """Peak bytes held by the tensors ``fn()`` allocates, counted while it runs.

    In-process and exact, so the same call gives the same number every time
    (unlike the resident size of a process): on the CPU from the profiler's
    record of every allocation and free, on CUDA from the caching allocator's
    statistics. It counts tensor storage only -- not buffers that libraries
    allocate for themselves -- and includes the output.
    """
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities, profile_memory=True) as prof:
        fn()
    events = prof.profiler.kineto_results.events()
    changes = sorted(
        (e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]"
    )
    live = peak = 0
    for _, nbytes in changes:  # + for an allocation, - for a free, in time order
        live += nbytes
        peak = max(peak, live)
    return peak


# --8<-- [start:memory_sweep]
def memory_sweep(
    sizes: list[int], heads: int = 8, head_dim: int = 64, device: str = "cpu"
) -> dict[str, list[int]]:
    """Peak tensor bytes of one call of each attention function, B = 1, L = S."""
    generator = torch.Generator(device=device).manual_seed(0)
    functions = {
        "naive": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
        "tiled": tiled_attention,
        "sdpa": F.scaled_dot_product_attention,
    }
    peaks: dict[str, list[int]] = {name: [] for name in functions}
    for L in sizes:
        q, k, v = torch.randn(
            3, 1, heads, L, head_dim, generator=generator, device=device
        )
        with torch.no_grad():
            for name, fn in functions.items():
                peaks[name].append(
                    tensor_memory_peak(lambda: fn(q, k, v), device)  # noqa: B023
                )
    return peaks


# --8<-- [end:memory_sweep]


# ------------------------------------------------------------------------- the run


def run(settings: Settings, command: str = "") -> dict:
    """Every section in ``settings.sections``; returns the results as one dict."""
    unknown = [s for s in settings.sections if s not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown sections {unknown}; known: {list(SECTIONS)}")
    started = time.perf_counter()
    results = {
        "schema": 1,
        "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "machine": machine_info(settings.device),
        "settings": asdict(settings),
        "load_start": _load(),
        "sections": {},
    }
    print(f"matmul {settings.matmul_n}^3 ...", flush=True)
    before = bench_matmul(settings)
    for name in settings.sections:
        load = _load()
        print(f"== {name} (load {load})", flush=True)
        section_start = time.perf_counter()
        results["sections"][name] = SECTIONS[name](settings)
        results["sections"][name]["seconds"] = round(
            time.perf_counter() - section_start, 1
        )
        results["sections"][name]["load_start"] = load
    after = bench_matmul(settings)
    gflops = before["gflops"] + after["gflops"]
    results["sections"]["matmul"] = {
        "n": settings.matmul_n,
        "gflops_before": before["gflops"],
        "gflops_after": after["gflops"],
        "gflops_median": statistics.median(gflops),
        "rejected_reps": before["rejected_reps"] + after["rejected_reps"],
    }
    results["load_end"] = _load()
    results["seconds"] = round(time.perf_counter() - started, 1)
    return results


def _attention_line(row: dict) -> str:
    med, ratio, gf = row["median_s"], row["ratio"], row["gflops"]
    parts = [f"  L={row['L']:5d} {'causal' if row['causal'] else 'full  '}"]
    parts += [
        f"{n} {med[n] * 1e3:9.2f} ms ({ratio[n]:5.2f}x, {gf[n]:6.1f} GF/s)"
        for n in med
    ]
    if "matmul_gflops" in row:
        parts.append(f"matmul {row['matmul_gflops']:6.1f} GF/s")
    if row.get("rejected_reps"):
        parts.append(f"[{row['rejected_reps']} reps repeated: machine busy]")
    return "  ".join(parts)


def _module_line(row: dict) -> str:
    med, ratio = row["median_s"], row["ratio"]
    parts = [f"  {row['mode']:9s} L={row['L']:5d}"]
    parts += [f"{n} {med[n] * 1e3:9.2f} ms ({ratio[n]:5.2f}x)" for n in med]
    if row.get("rejected_reps"):
        parts.append(f"[{row['rejected_reps']} reps repeated: machine busy]")
    return "  ".join(parts)


def _kv_line(row: dict) -> str:
    med = row["median_s"]
    line = (
        f"  prompt {row['prompt_len']:5d} + {row['new_tokens']} new: "
        f"no cache {med['no_cache']:8.3f} s, cache {med['cache']:8.3f} s, "
        f"speedup {row['speedup']:6.2f}x"
    )
    if row.get("rejected_reps"):
        line += f"  [{row['rejected_reps']} reps repeated: machine busy]"
    return line


def format_tables(results: dict) -> str:
    """The results as plain-text tables (what the command prints at the end)."""
    lines = [
        f"{results['machine']['cpu_model']}, "
        f"{results['machine']['torch_num_threads']} threads, torch "
        f"{results['machine']['torch']}, {results['settings']['dtype']}",
        f"load average {results['load_start']} -> {results.get('load_end')}, "
        f"{results.get('seconds')} s",
    ]
    sections = results["sections"]
    if "matmul" in sections:
        m = sections["matmul"]
        lines.append(
            f"matmul {m['n']}x{m['n']}: {m['gflops_median']:.1f} GFLOP/s (median)"
        )
    if "attention" in sections:
        a = sections["attention"]
        lines.append(
            f"\nattention B={a['batch']} H={a['heads']} Dh={a['head_dim']}, L = S "
            "(time per call; ratio to SDPA; GFLOP/s)"
        )
        lines += [_attention_line(row) for row in a["rows"]]
    if "modules" in sections:
        m = sections["modules"]
        lines.append(
            f"\nmodules B={m['batch']} D={m['d_model']} H={m['heads']} "
            "(ratio to nn.MultiheadAttention)"
        )
        lines += [_module_line(row) for row in m["rows"]]
    if "blocks" in sections:
        b = sections["blocks"]
        lines.append(
            f"\ntiled_attention tile sizes at L = {b['L']} (ratio to SDPA)"
        )
        lines += [
            f"  {r['block_size']:4d} x {r['key_block_size']:<5d} "
            f"{r['median_s'] * 1e3:9.1f} ms {r['ratio']:5.2f}x"
            for r in b["rows"]
        ]
    if "memory" in sections:
        lines.append("\npeak extra memory of one call (MiB)")
        for r in sections["memory"]["rows"]:
            lines.append(
                f"  {r['impl']:6s} L={r['L']:5d} "
                f"{r['peak_extra_bytes'] / 2**20:10.1f}   weights "
                f"{r['weights_bytes'] / 2**20:10.1f}"
            )
    if "kv_cache" in sections:
        kv = sections["kv_cache"]
        lines.append(
            f"\nKV cache, greedy decoding, B={kv['batch']}, model {kv['model']}"
        )
        lines += [_kv_line(row) for row in kv["rows"]]
    return "\n".join(lines)


def load_results(path: str | Path | None = None) -> dict:
    """A results file written by this command (default: the committed CPU run)."""
    return json.loads(Path(path or DEFAULT_RESULTS).read_text(encoding="utf-8"))


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


if __name__ == "__main__":
    main()
