"""Peak memory of one attention call: in a fresh process (the benchmark's
``memory`` section) and, exactly, as tensor bytes (:func:`memory_sweep`)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from ..efficient import tiled_attention
from ..scaled_dot_product import scaled_dot_product_attention
from .settings import QUICK, REPO_ROOT, Settings
from .workloads import ATTENTION_IMPLS, _attention_fns, _qkv

__all__ = [
    "peak_memory",
    "measure_peak_memory",
    "tensor_memory_peak",
    "memory_sweep",
]

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
