"""The command line, ``python -m attention_src.check FILE.py:NAME [options]``:
check your own attention function or multi-head module and name the mistake."""

from __future__ import annotations

import argparse
import sys

from .findings import FINDINGS
from .function import check_function
from .loader import UsageError, load_target
from .module import check_module

__all__ = ["main"]

DESCRIPTION = """\
Check your own attention code and name the mistake.

A function attention(q, k, v, mask=None) on (..., L, Dh) tensors is compared
with F.scaled_dot_product_attention on inputs chosen to expose each known
mistake; a wrong output is named by the known wrong variant it equals. A
module MyMultiHead(d_model, num_heads) with forward(x, mask=None) is checked
by behaviour (padding, causal leaks, batch mixing, equivariance, weights,
eval() determinism, head split, scale).

WARNING: this imports and runs FILE.py, as `python FILE.py` would. Only check
code you trust.

Masks are bool (..., L, S). Exit status: 0 nothing wrong, 1 a mistake found,
2 a usage error (file, name or signature not found).
"""

EPILOG = "finding ids: " + ", ".join(FINDINGS)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(2, f"error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m attention_src.check",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", help="FILE.py:NAME, e.g. my_attention.py:attention")
    p.add_argument(
        "--module",
        action="store_true",
        help="NAME is an nn.Module class, built as NAME(d_model, num_heads)",
    )
    p.add_argument(
        "--mask-convention",
        choices=["allow", "block", "auto"],
        default="auto",
        help="what True means in a mask: allow = may attend (as "
        "F.scaled_dot_product_attention), block = not allowed (as "
        "nn.MultiheadAttention), auto = find it from behaviour (default)",
    )
    p.add_argument(
        "--seq-first",
        action="store_true",
        help="the module takes x as (L, B, D) instead of (B, L, D)",
    )
    p.add_argument(
        "--device",
        default=None,
        help="where to run (default: cuda if available, else cpu)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the checker with command-line arguments ``argv`` (default:
    ``sys.argv[1:]``), print the report, and return the exit status: 0 when
    nothing is wrong, 1 when something is, 2 for a usage error."""
    args = _parser().parse_args(argv)
    try:
        target = load_target(args.target)
        name = args.target.rpartition(":")[2]
        if not callable(target):
            kind = type(target).__name__
            raise UsageError(
                f"{name} is an object of type {kind}, not a function or a class"
            )
        if args.module:
            report = check_module(
                target,
                mask_convention=args.mask_convention,
                seq_first=args.seq_first,
                device=args.device,
                name=name,
            )
        else:
            if args.seq_first:
                raise UsageError("--seq-first applies to --module only")
            report = check_function(
                target,
                mask_convention=args.mask_convention,
                device=args.device,
                name=name,
            )
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report.to_json() if args.json else report.text())
    return 0 if report.ok else 1
