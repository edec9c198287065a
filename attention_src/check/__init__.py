"""Check a reader's own attention code and name the mistake.

    python -m attention_src.check my_attention.py:attention
    python -m attention_src.check my_mha.py:MyMultiHead --module

It imports and runs the reader's file. A function ``attention(q, k, v,
mask=None)`` is compared with ``F.scaled_dot_product_attention`` on inputs
chosen so that each known mistake changes the output, and a wrong output is
named by the known wrong variant of the computation that it equals. A module
``MyMultiHead(d_model, num_heads)`` is checked by behaviour (padding, causal
leaks by gradient, batch mixing, permutation equivariance, normalized weights,
determinism in ``eval()``, how the heads are split and the scores scaled).

The pieces of a decoder have their own checks: ``check_rope`` (``--rope``:
``rope(x, positions)``, either pairing layout), ``check_gqa`` (``--gqa``:
grouped-query attention) and ``check_decode`` (``--decode [--window W]``:
an adapter ``decode(tokens, cache) -> (out, cache)`` against a full
recompute at every step).

Each finding is a root cause; what it broke elsewhere is listed under it.

The report is in English, or in Chinese with ``--lang zh`` or
``ATTENTION_CHECK_LANG=zh`` (``lang="zh"`` for the functions), never by the
locale; the ids, the ``FINDING <id>:`` lines' prefix, the JSON keys and the
exit status are the same in both (see ``lang``).

The package: a small core that every check uses — ``running`` (calling the
reader's code: quiet, seeded, time-limited, its torch calls recorded),
``loader`` (finding the target, checking options and signatures),
``findings`` (the finding kinds and the report) and ``lang`` (with ``zh``, the
Chinese texts) — and one sub-package per mode: ``function`` (a function
against the reference and known wrong variants), ``module`` (a module by
properties and gradients) and ``decoder`` (RoPE, grouped-query attention and
cached decoding); ``cli`` is the command line. Each module's ``__all__`` is
what it shares with the others; what a reader imports is listed below.
"""

from .cli import main
from .decoder import check_decode, check_gqa, check_rope
from .findings import FINDINGS, SITE_URL, Finding, Kind, Report
from .function import check_function
from .loader import UsageError, load_target
from .module import check_module

__all__ = [
    "check_function",
    "check_module",
    "check_rope",
    "check_gqa",
    "check_decode",
    "load_target",
    "main",
    "Report",
    "Finding",
    "Kind",
    "FINDINGS",
    "SITE_URL",
    "UsageError",
]
