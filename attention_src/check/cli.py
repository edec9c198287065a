"""The command line, ``python -m attention_src.check FILE.py:NAME [options]``:
check your own attention function or multi-head module and name the mistake.

It speaks English, or Chinese with ``--lang zh`` or ``ATTENTION_CHECK_LANG=zh``
(never by the locale); see ``lang``."""

from __future__ import annotations

import argparse
import os
import re
import sys
import unicodedata

from . import zh
from .decoder import check_decode, check_gqa, check_rope
from .findings import FINDINGS
from .function import check_function
from .lang import LANGS, current, language, tr, use
from .loader import UsageError, load_target
from .module import check_module
from .running import Timeout, describe_error

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

DESCRIPTIONS = {"en": DESCRIPTION, "zh": zh.DESCRIPTION}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        if current() == "zh":  # argparse's own messages, e.g. a missing target
            for pattern, chinese in zh.ARGPARSE:
                message = re.sub(pattern, chinese, message)
        self.exit(2, tr("error: {message} (see --help)", message=message) + "\n")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help, with "usage:" in the current language, and Chinese
    help texts wrapped by display width (a Chinese character takes two
    columns)."""

    def format_help(self):
        text = super().format_help()
        if current() == "en":
            return text
        # argparse ends a section's title with ":"; a Chinese title takes "："
        return re.sub(r"^([^\s:][^\n]*[^\x00-\x7f]):$", r"\1：", text, flags=re.M)

    def _format_usage(self, usage, actions, groups, prefix):
        text = super()._format_usage(usage, actions, groups, prefix)
        return text.replace("usage: ", tr("usage: "), 1)

    def _split_lines(self, text, width):
        if current() == "en":
            return super()._split_lines(text, width)
        lines, line = [], ""  # a line may end after a Chinese character
        for token in re.findall(r"[!-~]+|\s|.", " ".join(text.split())):
            wide = _columns(line + token) > width and token != " "
            if line and wide and token not in "，。；：）、":
                lines.append(line.rstrip())
                line = ""
            if line or token != " ":
                line += token
        return [*lines, line.rstrip()] if line.strip() else lines


def _columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _parser() -> argparse.ArgumentParser:
    """The parser, its help in the current language."""
    p = _Parser(
        prog="python -m attention_src.check",
        description=DESCRIPTIONS[current()],
        epilog=tr("finding ids: {ids}", ids=", ".join(FINDINGS)),
        formatter_class=_Formatter,
        add_help=False,
    )
    p._positionals.title = tr("positional arguments")
    p._optionals.title = tr("options")
    p.add_argument(
        "-h", "--help", action="help", help=tr("show this help message and exit")
    )
    p.add_argument(
        "target", help=tr("FILE.py:NAME, e.g. my_attention.py:attention")
    )
    p.add_argument(
        "--module",
        action="store_true",
        help=tr(
            "NAME builds an nn.Module as NAME(d_model, num_heads): a class, "
            "or a one-line factory function"
        ),
    )
    p.add_argument(
        "--mask-convention",
        choices=["allow", "block", "auto"],
        default="auto",
        help=tr(
            "what True means in a mask: allow = may attend (as "
            "F.scaled_dot_product_attention), block = not allowed (as "
            "nn.MultiheadAttention), auto = find it from behaviour (default)"
        ),
    )
    p.add_argument(
        "--seq-first",
        action="store_true",
        help=tr("the module takes x as (L, B, D) instead of (B, L, D)"),
    )
    p.add_argument(
        "--device",
        default=None,
        help=tr("where to run (default: cuda if available, else cpu)"),
    )
    p.add_argument(
        "--rope",
        action="store_true",
        help=tr("NAME is rope(x, positions): rotary position embedding"),
    )
    p.add_argument(
        "--base",
        type=float,
        default=None,
        help=tr("with --rope: the frequency base meant (default 10000)"),
    )
    p.add_argument(
        "--gqa",
        action="store_true",
        help=tr(
            "NAME is attention(q, k, v, mask=None) with q (B, H, L, Dh) and "
            "k, v (B, G, S, Dh): grouped-query attention"
        ),
    )
    p.add_argument(
        "--decode",
        action="store_true",
        help=tr(
            "NAME is decode(tokens, cache) -> (out, cache): cached decoding, "
            "compared with a full recompute at every step"
        ),
    )
    p.add_argument(
        "--window",
        type=int,
        default=None,
        help=tr("with --decode: the sliding window W the model is meant to have"),
    )
    p.add_argument(
        "--call-limit",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help=tr("how long one call of your code may take (default 10)"),
    )
    p.add_argument(
        "--json", action="store_true", help=tr("print the report as JSON")
    )
    p.add_argument(
        "--lang",
        choices=LANGS,
        default="en",
        help=tr(
            "the language of the report: en (default) or zh; without --lang, "
            "the environment variable ATTENTION_CHECK_LANG; never the locale"
        ),
    )
    return p


def _language(argv: list[str]) -> str:
    """``--lang``, else ``ATTENTION_CHECK_LANG``, else English: read before
    the rest, so that the help and the usage errors speak it too."""
    pre = _Parser(add_help=False)
    pre.add_argument("--lang")
    return language(pre.parse_known_args(argv)[0].lang, os.environ)


def main(argv: list[str] | None = None) -> int:
    """Run the checker with command-line arguments ``argv`` (default:
    ``sys.argv[1:]``), print the report, and return the exit status: 0 when
    nothing is wrong, 1 when something is, 2 for a usage error."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        lang = _language(argv)
    except ValueError as error:  # an unknown --lang or ATTENTION_CHECK_LANG
        print(f"error: {error} (see --help)", file=sys.stderr)
        return 2
    with use(lang):
        args = _parser().parse_args(argv)
        args.lang = lang  # ATTENTION_CHECK_LANG's, where --lang is not given
        return _main(args)


def _main(args) -> int:
    try:
        target = load_target(args.target)
        name = args.target.rpartition(":")[2]
        if not callable(target):
            raise UsageError(
                tr(
                    "{name} is an object of type {kind}, not a function or a class",
                    name=name,
                    kind=type(target).__name__,
                )
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
                lang=args.lang,
            )
        else:
            if args.seq_first:
                raise UsageError(tr("--seq-first applies to --module only"))
            report = check_function(
                target,
                mask_convention=args.mask_convention,
                device=args.device,
                name=name,
                call_limit=args.call_limit,
                lang=args.lang,
            )
    except (UsageError, Timeout) as error:  # Timeout: past --call-limit
        print(tr("error: {error}", error=error), file=sys.stderr)
        return 2
    except Exception as error:  # a case the checker did not foresee: one line
        print(
            tr(
                "error: the checker could not check {target}: {error}",
                target=args.target,
                error=describe_error(error),
            ),
            file=sys.stderr,
        )
        return 2
    print(report.to_json() if args.json else report.text())
    return 0 if report.ok else 1


def _check_decoder_piece(args, target, name):
    """--rope, --gqa or --decode (one of them), with their own options."""
    kinds = [k for k in ("module", "rope", "gqa", "decode") if getattr(args, k)]
    if len(kinds) != 1 or kinds == ["module"]:
        given = ", ".join(f"--{k}" for k in kinds) or tr("none")
        raise UsageError(
            tr(
                "pick one of --module, --rope, --gqa, --decode (given: {given}); "
                "--base goes with --rope, --window with --decode",
                given=given,
            )
        )
    if args.base is not None and not args.rope:
        raise UsageError(tr("--base applies to --rope only"))
    if args.window is not None and not args.decode:
        raise UsageError(tr("--window applies to --decode only"))
    if args.seq_first:
        raise UsageError(tr("--seq-first applies to --module only"))
    if args.rope:
        base = 10000.0 if args.base is None else args.base
        return check_rope(
            target,
            base=base,
            device=args.device,
            name=name,
            call_limit=args.call_limit,
            lang=args.lang,
        )
    if args.gqa:
        return check_gqa(
            target,
            mask_convention=args.mask_convention,
            device=args.device,
            name=name,
            call_limit=args.call_limit,
            lang=args.lang,
        )
    return check_decode(
        target,
        window=args.window,
        device=args.device,
        name=name,
        call_limit=args.call_limit,
        lang=args.lang,
    )
