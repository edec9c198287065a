"""The sections of a run, one function ``bench_<name>(settings) -> dict`` each,
listed in :data:`SECTIONS`."""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..efficient import FastMultiHeadAttention, tiled_attention
from ..multi_head import MultiHeadAttention
from .decoding import decoding_setup
from .memory import _MEMORY_METHOD, measure_peak_memory
from .results import _attention_line, _kv_line, _module_line
from .settings import Settings
from .timing import summarize, time_round_robin
from .workloads import (
    ATTENTION_IMPLS,
    _attention_fns,
    _dtype,
    _matmul_fn,
    _qkv,
    attention_flops,
)

__all__ = [
    "SECTIONS",
    "bench_matmul",
    "bench_attention",
    "bench_modules",
    "bench_blocks",
    "bench_memory",
    "bench_kv_cache",
    "MODULE_IMPLS",
    "KV_IMPLS",
]


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
