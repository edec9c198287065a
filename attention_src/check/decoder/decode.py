"""Check cached decoding against a full recompute, and name the mistake:
python -m attention_src.check my_adapter.py:decode --decode [--window W]

The adapter: one function
--------------------------

The checker needs one thing from your model: a function

    decode(tokens, cache) -> (out, cache)

- ``tokens``: token ids ``(B, T)`` (int64, each below 10); a layer rather
  than a model turns them into vectors itself, e.g. with a fixed
  ``nn.Embedding(10, d_model)``.
- ``cache=None``: start from nothing and read all ``T`` tokens — the full
  recompute, and also the prefill.
- ``cache`` = what the previous call returned: the ``T`` tokens come after
  the ones already read, and only they are processed.
- ``out``: ``(B, T, ...)``, one output per new token (logits, or a layer's
  vectors); ``cache``: anything (a ``transformers`` ``Cache``, a list of
  ``(k, v)`` per layer, a preallocated tensor with a position pointer); it
  is only passed back, and its tensors are counted.

The model behind it is built once, seeded and in ``eval()``; ``decode`` must
keep no state of its own between calls other than in ``cache``.

What it does
------------

It reads one token with ``cache=None``, then one token per call, for more
steps than the window (``2 W + 3`` tokens, at least 10), and compares each
step's output with ``decode(tokens[:, :t + 1], None)``, the full recompute.
When a step differs, each finding of cached decoding is tested as a
hypothesis on inputs of its own, whatever step the outputs first differ at
(see ``causes``): ``decode-causal-top-left``,
``decode-attend-before-append``, ``decode-window`` (given ``--window W``),
``decode-rope-twice``, ``decode-position-offset``; the first whose test the
adapter fails names the mistake, and when none does it is ``unexplained``,
with what the tests saw.

With ``--window W`` the tensors reachable from the cache are counted after
each step: if there are more after the last step than after ``W`` tokens,
the finding is ``decode-cache-unbounded``, even when every output is right.
What is counted is what the cache holds, not what a step reads: a buffer
preallocated for the whole sequence does not grow, and passes.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...validate import shape_str
from ..findings import Finding, Report
from ..lang import tr, use
from ..loader import UsageError, binds, check_options, signature
from ..running import Timeout
from .causes import explain
from .stepping import (
    VOCAB,
    AdapterError,
    B,
    call_adapter,
    close,
    recompute,
    stepwise,
)

__all__ = ["check_decode"]


def check_decode(
    fn: Callable,
    *,
    window: int | None = None,
    device: torch.device | str | None = None,
    name: str | None = None,
    call_limit: float | None = None,
    lang: str = "en",
) -> Report:
    """Check the cached decoding of ``fn(tokens, cache) -> (out, cache)``
    (see the module's docstring) against a full recompute at every step.

    Args:
        fn: the adapter; it is called, so it must be code you trust.
        window: the sliding window ``W`` the model is meant to have (each
            token sees itself and the ``W - 1`` before it), or None.
        device: where the token ids are made (the adapter's model must be
            there too); cpu by default.
        name: what to call ``fn`` in the report.
        call_limit: seconds one call may take (default 10).
        lang: the language of the report, ``"en"`` or ``"zh"``.

    Returns:
        A ``Report`` whose findings are among ``decode-position-offset``,
        ``decode-rope-twice``, ``decode-causal-top-left``,
        ``decode-attend-before-append``, ``decode-window``,
        ``decode-cache-unbounded``, ``shape`` and ``unexplained``.

    Raises:
        TypeError: ``fn`` is not callable.
        UsageError: (a ``ValueError``) ``fn`` cannot be called as
            ``fn(tokens, cache)``, or a bad window or device.
    """
    with use(lang):
        return _check_decode(fn, window, device, name, call_limit)


def _check_decode(fn, window, device, name, call_limit) -> Report:
    device = check_options("auto", "cpu" if device is None else device)
    if not callable(fn):
        raise TypeError(
            tr("fn must be callable, got {type}", type=type(fn).__name__)
        )
    label = name or getattr(fn, "__name__", "decode")
    sig = signature(fn)
    if sig is not None and not binds(sig, 1, None):
        raise UsageError(
            tr(
                "{label}{sig} cannot be called as {label}(tokens, cache)",
                label=label,
                sig=sig,
            )
        )
    if window is not None and (
        isinstance(window, bool) or not isinstance(window, int) or window < 2
    ):
        raise UsageError(
            tr("window must be an int >= 2, got {window!r}", window=window)
        )
    total = max(10, 2 * window + 3) if window else 10
    g = torch.Generator(device=device).manual_seed(0)
    tokens = torch.randint(0, VOCAB, (B, total), generator=g, device=device)
    shape = shape_str(tokens.shape)
    checks = [tr("tokens {shape}: token 0 read with cache=None", shape=shape)]
    checks += [
        tr(
            "step {t}: token {t} after {t} cached, against "
            "decode(tokens[:, :{n}], None)",
            t=t,
            n=t + 1,
        )
        for t in range(1, total)
    ]
    if window is not None:
        checks.append(
            tr("the cache stops growing after W = {window} tokens", window=window)
        )
    report = Report(label, [], None, checks)

    def call(tokens, cache, what):  # the adapter, checked and time-limited
        return call_adapter(fn, tokens, cache, what, call_limit)

    try:
        report.findings += _diagnose(call, tokens, window, report)
    except AdapterError as error:
        report.findings.append(Finding("shape", str(error)))
    except Timeout as timeout:
        raise UsageError(str(timeout)) from None
    return report


def _diagnose(call, tokens, window, report) -> list[Finding]:
    total = tokens.size(1)
    full = {t: recompute(call, tokens[:, : t + 1]) for t in range(1, total)}
    outs, sizes = stepwise(call, tokens, 1, total)
    findings = []
    if window is not None:
        findings += _growth(sizes, window, report)
    wrong = [t for t in range(1, total) if not close(outs[t], full[t])]
    if not wrong:
        report.decided_by = tr(
            "every one of {n} cached steps equals the full recompute", n=total - 1
        )
        return findings
    first = wrong[0]
    gap = float((outs[first] - full[first]).abs().max())
    where = tr(
        "step {t} (the token at position {t}, after {t} cached) differs from "
        "the full recompute by {gap:.3g}",
        t=first,
        gap=gap,
    )
    report.decided_by = tr(
        "{n} of {total} cached steps differ; {where}",
        n=len(wrong),
        total=total - 1,
        where=where,
    )
    return [explain(call, tokens, window, full, outs, where), *findings]


def _growth(sizes: dict, window: int, report) -> list[Finding]:
    last = max(sizes)
    at_window, at_end = sizes.get(window - 1, 0), sizes[last]
    if at_end == 0:
        report.notes.append(
            tr("no tensors found in the cache: its size was not checked")
        )
        return []
    counts = dict(at_window=at_window, window=window, at_end=at_end, n=last + 1)
    report.notes.append(
        tr(
            "cache: {at_window} tensor elements after {window} tokens, "
            "{at_end} after {n}",
            **counts,
        )
    )
    if at_end > at_window:
        message = tr(
            "with window W = {window} the cache holds {at_window} tensor "
            "elements after {window} tokens and {at_end} after {n}: it keeps "
            "growing after the window is full",
            **counts,
        )
        return [Finding("decode-cache-unbounded", message)]
    return []
