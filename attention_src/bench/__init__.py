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
threads is torch's default; set it from outside, e.g.
``OMP_NUM_THREADS=2 python -m attention_src.bench``.

Every section is a function ``bench_<name>(settings) -> dict`` listed in
``SECTIONS``; ``run`` collects their results, with a description of the
machine, in one JSON-serialisable dict. A new section is one more function
and one more entry.

One subject a module, every public name importable from here:

- ``settings``: ``Settings`` and its presets ``FULL`` and ``QUICK``;
- ``timing``: round-robin timing on a busy machine, paired ratios;
- ``workloads``: the seeded inputs and the implementations compared, flops;
- ``memory``: peak memory, in a fresh process or as exact tensor bytes;
- ``decoding``: the decoder and prompt of the KV-cache timings;
- ``sections``: ``bench_<name>`` and ``SECTIONS``;
- ``runner``: ``run`` and the description of the machine;
- ``results``: the results file read back and printed as tables;
- ``cli``: ``main``, the command line.
"""

from .cli import main
from .decoding import decoding_setup, measure_kv_cache
from .memory import (
    measure_peak_memory,
    memory_sweep,
    peak_memory,
    tensor_memory_peak,
)
from .results import DEFAULT_RESULTS, format_tables, load_results
from .runner import machine_info, run
from .sections import (
    KV_IMPLS,
    MODULE_IMPLS,
    SECTIONS,
    bench_attention,
    bench_blocks,
    bench_kv_cache,
    bench_matmul,
    bench_memory,
    bench_modules,
)
from .settings import FULL, QUICK, Settings
from .settings import POWERS as POWERS
from .settings import REPO_ROOT as REPO_ROOT
from .timing import summarize, time_round_robin
from .workloads import ATTENTION_IMPLS, attention_flops

__all__ = [
    "Settings",
    "FULL",
    "QUICK",
    "SECTIONS",
    "bench_matmul",
    "bench_attention",
    "bench_modules",
    "bench_blocks",
    "bench_memory",
    "bench_kv_cache",
    "ATTENTION_IMPLS",
    "MODULE_IMPLS",
    "KV_IMPLS",
    "time_round_robin",
    "summarize",
    "attention_flops",
    "machine_info",
    "peak_memory",
    "measure_peak_memory",
    "tensor_memory_peak",
    "memory_sweep",
    "decoding_setup",
    "measure_kv_cache",
    "run",
    "format_tables",
    "load_results",
    "DEFAULT_RESULTS",
    "main",
]
