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
A step that differs is named by when and how it first differs:

- the new query does not depend on the cached tokens between the first and
  itself: ``decode-causal-top-left`` (a top-left triangle gives one new query
  the oldest key only);
- with ``--window W``, right until the new token should see ``W`` tokens
  (step ``W - 1``: it sees fewer) or until it and the cache exceed ``W``
  (step ``W`` on: it sees more): ``decode-window``, either side;
- wrong at the first cached step, where one cached key (at position 0) is
  the same however often it is rotated: ``decode-position-offset``;
- wrong from step 2, the first whose cache holds a key at a position other
  than 0 (a key at 0 is the same however often it is rotated), and the
  output depends on how many steps the keys spent in the cache (one step
  after a long prefill differs from the same step reached one token at a
  time): ``decode-rope-twice``. A wrong window in two layers or more also
  depends on the path (layer 2's keys carry layer 1's error), but shows
  first at step ``W - 1`` or ``W``, so it is never taken for a rotation.

With ``--window W`` the tensors reachable from the cache are counted after
each step; if they still grow after ``W`` tokens the finding is
``decode-cache-unbounded``, even when every output is right.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...checks import shape_str
from ..findings import Finding, Report
from ..lang import tr, use
from ..loader import UsageError, binds, check_options, signature
from ..running import Timeout, call_quietly

__all__ = ["check_decode"]

B, VOCAB = 2, 10
ATOL, RTOL = 1e-4, 1e-3


class _AdapterError(Exception):
    """A call of the adapter raised or returned something unusable."""


def _call(fn, tokens, cache, what, limit=None):
    result, error = call_quietly(
        fn, [tokens, cache], what=tr("{what} of decode", what=what), limit=limit
    )
    if error is not None:
        raise _AdapterError(tr("{what} raises {error}", what=what, error=error))
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise _AdapterError(
            tr(
                "{what} returned {type}, not (out, cache)",
                what=what,
                type=type(result).__name__,
            )
        )
    out, cache = result
    if not isinstance(out, torch.Tensor) or out.shape[:2] != tokens.shape:
        got = shape_str(out.shape) if isinstance(out, torch.Tensor) else out
        raise _AdapterError(
            tr(
                "{what} returned out {got} for tokens {shape}, "
                "expected (B, T, ...)",
                what=what,
                got=got,
                shape=shape_str(tokens.shape),
            )
        )
    return out.detach().float(), cache


def _elements(obj, seen=None, depth=0) -> int:
    """How many tensor elements are reachable from ``obj``."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 8 or isinstance(obj, (str, bytes, type)):
        return 0
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return obj.numel()
    if isinstance(obj, dict):
        items = obj.values()
    elif isinstance(obj, (list, tuple, set)):
        items = obj
    elif hasattr(obj, "__dict__") and not isinstance(obj, torch.nn.Module):
        items = vars(obj).values()
    else:
        return 0
    return sum(_elements(x, seen, depth + 1) for x in items)


def _stepwise(fn, tokens, prefill: int, stop: int):
    """Outputs ``{t: (B, ...)}`` of one-token steps ``prefill .. stop - 1``
    after reading ``tokens[:, :prefill]``, and the cache sizes after each."""
    _, cache = fn(tokens[:, :prefill], None, tr("the prefill of {n}", n=prefill))
    outs, sizes = {}, {prefill - 1: _elements(cache)}
    for t in range(prefill, stop):
        out, cache = fn(tokens[:, t : t + 1], cache, tr("step {t}", t=t))
        outs[t], sizes[t] = out[:, -1], _elements(cache)
    return outs, sizes


def _close(a, b) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=ATOL, rtol=RTOL))


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
        ``decode-rope-twice``, ``decode-causal-top-left``, ``decode-window``,
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
        return _call(fn, tokens, cache, what, call_limit)

    try:
        report.findings += _diagnose(call, tokens, window, report)
    except _AdapterError as error:
        report.findings.append(Finding("shape", str(error)))
    except Timeout as timeout:
        raise UsageError(str(timeout)) from None
    return report


def _diagnose(fn, tokens, window, report) -> list[Finding]:
    total = tokens.size(1)
    full = {
        t: fn(tokens[:, : t + 1], None, _recompute(t + 1))[0][:, -1]
        for t in range(1, total)
    }
    outs, sizes = _stepwise(fn, tokens, 1, total)
    findings = []
    if window is not None:
        findings += _growth(sizes, window, report)
    wrong = [t for t in range(1, total) if not _close(outs[t], full[t])]
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
    if _reads_only_the_oldest(fn, tokens, full):
        message = tr(
            "{where}; at step 2 the output does not change when token 1 "
            "changes: the new query sees only the oldest cached key",
            where=where,
        )
        return [Finding("decode-causal-top-left", message), *findings]
    if window is not None and first >= window - 1:
        message = _window_message(first, window, where)
        return [Finding("decode-window", message), *findings]
    if first == 1:
        message = tr(
            "{where}; with only position 0 cached, a key rotated once or "
            "twice is the same, so the new token's own position is wrong",
            where=where,
        )
        return [Finding("decode-position-offset", message), *findings]
    last = total - 1  # its keys spent 1 .. last steps in the cache
    late, _ = _stepwise(fn, tokens, last, last + 1)
    if first == 2 and not _close(late[last], outs[last]):
        # A rotation applied again to the cached keys shows at the first step
        # whose cache holds a key at a position other than 0 (a key at 0 is the
        # same however often it is rotated); a wrong window in a model of two
        # layers or more also depends on the path, but first shows later.
        message = tr(
            "{where}, and it depends on how many steps the cached keys "
            "spent in the cache (one step after a prefill of {last} "
            "tokens differs from the same step reached token by token): "
            "something is applied to the cached keys again at every step",
            where=where,
            last=last,
        )
        return [Finding("decode-rope-twice", message), *findings]
    return [Finding("unexplained", where), *findings]


def _window_message(first: int, window: int, where: str) -> str:
    """decode-window's message: the first wrong step is where the new token
    should see W tokens (step W - 1: too few seen) or more (step W on: the
    cache and the new token exceed the window)."""
    if first == window - 1:
        return tr(
            "steps 1 to {last} equal the full recompute; from step {first} on, "
            "the first where the new token should see W = {window} tokens "
            "(itself and the {before} before it), they do not (it sees fewer): "
            "{where}",
            last=first - 1,
            first=first,
            window=window,
            before=window - 1,
            where=where,
        )
    return tr(
        "steps 1 to {last} equal the full recompute, while the new token and "
        "the ones cached are at most W = {window}; from step {first} on, where "
        "they are {n}, they do not (it sees more than W): {where}",
        last=first - 1,
        window=window,
        first=first,
        n=first + 1,
        where=where,
    )


def _recompute(n: int) -> str:
    return tr("the full recompute of {n}", n=n)


def _reads_only_the_oldest(fn, tokens, full) -> bool:
    """Whether step 2 ignores token 1, where the full recompute does not."""
    if tokens.size(1) < 3:
        return False
    other = tokens.clone()
    other[:, 1] = (tokens[:, 1] + 1) % VOCAB
    full_other = fn(other[:, :3], None, _recompute(3))[0][:, -1]
    if _close(full_other, full[2]):
        return False  # the model itself ignores token 1 at step 2
    a, _ = _stepwise(fn, tokens, 1, 3)
    b, _ = _stepwise(fn, other, 1, 3)
    return _close(a[2], b[2])


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
            "every token",
            **counts,
        )
        return [Finding("decode-cache-unbounded", message)]
    return []
