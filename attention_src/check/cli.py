"""The command line, ``python -m attention_src.check FILE.py:NAME [options]``:
check your own attention function or multi-head module and name the mistake."""

from __future__ import annotations

import argparse
import sys

from .decode import check_decode
from .findings import FINDINGS
from .function import check_function
from .gqa import check_gqa
from .loader import UsageError, load_target
from .module import check_module
from .rope import check_rope
from .running import _describe_error, _Timeout

__all__ = ["main"]

DESCRIPTION = """\
Check your own attention code and name the mistake.

A function attention(q, k, v, mask=None) on (..., L, Dh) tensors is compared
with F.scaled_dot_product_attention on inputs chosen to expose each known
mistake; a wrong output is named by the known wrong variant it equals. A
module (--module: a class, or a function that builds one, called as
NAME(d_model, num_heads)) is called as forward(x), forward(x, mask) or
forward(q, k, v[, mask]), whichever it takes, with masks in the layout and
encoding it takes, and checked by behaviour (padding, causal leaks, batch
mixing, equivariance, weights, eval() determinism, head split, scale); one
without a mask argument is found causal or bidirectional.

The pieces of a decoder: --rope checks rope(x, positions) (either pairing
layout); --gqa checks attention(q, k, v, mask=None) with G key/value heads
for H query heads; --decode [--window W] checks an adapter
decode(tokens, cache) -> (out, cache) against a full recompute at every step.

WARNING: this imports and runs FILE.py, as `python FILE.py` would. Only check
code you trust.

A function's masks are bool (..., L, S). Exit status: 0 nothing wrong, 1 a
mistake found, 2 a usage error (file, name or signature not found, or a call
that did not return within --call-limit).
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
        help="NAME builds an nn.Module as NAME(d_model, num_heads): a class, "
        "or a one-line factory function",
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
    p.add_argument(
        "--rope",
        action="store_true",
        help="NAME is rope(x, positions): rotary position embedding",
    )
    p.add_argument(
        "--base",
        type=float,
        default=None,
        help="with --rope: the frequency base meant (default 10000)",
    )
    p.add_argument(
        "--gqa",
        action="store_true",
        help="NAME is attention(q, k, v, mask=None) with q (B, H, L, Dh) and "
        "k, v (B, G, S, Dh): grouped-query attention",
    )
    p.add_argument(
        "--decode",
        action="store_true",
        help="NAME is decode(tokens, cache) -> (out, cache): cached decoding, "
        "compared with a full recompute at every step",
    )
    p.add_argument(
        "--window",
        type=int,
        default=None,
        help="with --decode: the sliding window W the model is meant to have",
    )
    p.add_argument(
        "--call-limit",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long one call of your code may take (default 10)",
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
        if args.rope or args.gqa or args.decode or args.window or args.base:
            report = _check_decoder_piece(args, target, name)
        elif args.module:
            report = check_module(
                target,
                mask_convention=args.mask_convention,
                seq_first=args.seq_first,
                device=args.device,
                name=name,
                call_limit=args.call_limit,
            )
        else:
            if args.seq_first:
                raise UsageError("--seq-first applies to --module only")
            report = check_function(
                target,
                mask_convention=args.mask_convention,
                device=args.device,
                name=name,
                call_limit=args.call_limit,
            )
    except (UsageError, _Timeout) as error:  # _Timeout: past --call-limit
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a case the checker did not foresee: one line
        print(
            f"error: the checker could not check {args.target}: "
            f"{_describe_error(error)}",
            file=sys.stderr,
        )
        return 2
    print(report.to_json() if args.json else report.text())
    return 0 if report.ok else 1


def _check_decoder_piece(args, target, name):
    """--rope, --gqa or --decode (one of them), with their own options."""
    kinds = [k for k in ("module", "rope", "gqa", "decode") if getattr(args, k)]
    if len(kinds) != 1 or kinds == ["module"]:
        given = ", ".join(f"--{k}" for k in kinds) or "none"
        raise UsageError(
            f"pick one of --module, --rope, --gqa, --decode (given: {given}); "
            "--base goes with --rope, --window with --decode"
        )
    if args.base is not None and not args.rope:
        raise UsageError("--base applies to --rope only")
    if args.window is not None and not args.decode:
        raise UsageError("--window applies to --decode only")
    if args.seq_first:
        raise UsageError("--seq-first applies to --module only")
    if args.rope:
        base = 10000.0 if args.base is None else args.base
        return check_rope(
            target,
            base=base,
            device=args.device,
            name=name,
            call_limit=args.call_limit,
        )
    if args.gqa:
        return check_gqa(
            target,
            mask_convention=args.mask_convention,
            device=args.device,
            name=name,
            call_limit=args.call_limit,
        )
    return check_decode(
        target,
        window=args.window,
        device=args.device,
        name=name,
        call_limit=args.call_limit,
    )
