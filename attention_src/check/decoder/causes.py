"""Why a cached step differs from the full recompute. Each finding of cached
decoding is a hypothesis, and each is tested on inputs of its own against
what the adapter does, whatever step the outputs first differ at; the first
whose test the adapter fails names the finding. When none does, the finding
is ``unexplained``, with what the tests saw: a name is given only with its
evidence.

- ``decode-causal-top-left``: at step 2 the output does not change when
  token 1 changes (the full recompute's does): one new query sees the oldest
  cached key only.
- ``decode-attend-before-append``: after a prefill of 1, 2 or 3 copies of
  one token, one cached step with another token gives the same output, while
  the recompute's changes: the new token attends over the cached values, all
  alike, not over its own key and value.
- ``decode-window`` (given ``W``): with token 0, then token 1, changed, a
  step depends on it where the recompute does not (it sees more than the
  window), or not where the recompute does (fewer).
- ``decode-rope-twice``: one step after a prefill of one token is right and
  one after a prefill of two is not: the step changes the cached keys, except
  one at position 0 — the key a rotation leaves as it is.
- ``decode-position-offset``: one step after a prefill of one token is
  already wrong, while its one cached key sits at position 0 and the step
  reads the tokens the recompute reads: what is left is the new token's own
  position; or, given ``W``, with the window full of one token, one step after
  prefills of different lengths differs where the recompute gives the same.
"""

from __future__ import annotations

import torch

from ..findings import Finding
from ..lang import join, tr
from .stepping import VOCAB, close, recompute, stepwise

__all__ = ["explain"]


class _Adapter:
    """The adapter's outputs the tests compare, each computed once: ``full``
    and ``outs`` are the recompute and the token-by-token steps of
    ``tokens``."""

    def __init__(self, call, tokens, full, outs):
        self.call, self.tokens, self.full, self.outs = call, tokens, full, outs
        self._memo = {}

    def _once(self, kind, seq, make):
        key = (kind, tuple(seq.shape), tuple(seq.flatten().tolist()))
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def recompute(self, seq) -> torch.Tensor:
        """The output for the last of ``seq``, all read with ``cache=None``."""
        return self._once("full", seq, lambda: recompute(self.call, seq))

    def one_step(self, seq) -> torch.Tensor:
        """The output for the last of ``seq``, read as one cached step after a
        prefill of the others."""
        n = seq.size(1) - 1
        return self._once(
            "step", seq, lambda: stepwise(self.call, seq, n, n + 1)[0][n]
        )

    def with_token(self, j) -> torch.Tensor:
        """``tokens`` with token ``j`` changed."""
        other = self.tokens.clone()
        other[:, j] = (self.tokens[:, j] + 1) % VOCAB
        return other

    def constant(self, n) -> torch.Tensor:
        """``n`` copies of token 0, then another token."""
        a = self.tokens[:, :1]
        b = (a + 1 + self.tokens[:, 1:2] % (VOCAB - 1)) % VOCAB  # never a
        return torch.cat([a.expand(-1, n), b], dim=1)


def explain(call, tokens, window, full, outs, where) -> Finding:
    """The finding for cached steps ``outs`` that differ from the recompute
    ``full`` (``where``: the first that does, in words)."""
    adapter, seen = _Adapter(call, tokens, full, outs), []
    for test in (_top_left, _own_key, _window, _rotated_again, _position):
        finding = test(adapter, window, where, seen)
        if finding is not None:
            return finding
    return Finding(
        "unexplained",
        tr(
            "{where}; no known mistake explains it: {seen}",
            where=where,
            seen=join(seen, "; "),
        ),
    )


def _top_left(d, window, where, seen) -> Finding | None:
    other = d.with_token(1)
    if close(d.recompute(other[:, :3]), d.full[2]):
        return None  # the model itself ignores token 1 at step 2
    steps, _ = stepwise(d.call, other, 1, 3)
    if not close(steps[2], d.outs[2]):
        return None
    return Finding(
        "decode-causal-top-left",
        tr(
            "{where}; at step 2 the output does not change when token 1 "
            "changes: the new query sees only the oldest cached key",
            where=where,
        ),
    )


def _own_key(d, window, where, seen) -> Finding | None:
    seqs = [d.constant(n) for n in (1, 2, 3)]
    full = [d.recompute(s) for s in seqs]
    if close(full[0], full[1]):
        seen.append(
            tr(
                "the full recompute of one token after 1 or 2 copies of another "
                "is the same, so whether a step sees its own key was not told"
            )
        )
        return None
    steps = [d.one_step(s) for s in seqs]
    alike = close(steps[0], steps[1]) and close(steps[1], steps[2])
    if not alike or close(steps[0], full[0]):
        seen.append(
            tr(
                "after 1, 2 and 3 copies of one token, one cached step with "
                "another changes with their number, as the recompute does"
            )
        )
        return None
    return Finding(
        "decode-attend-before-append",
        tr(
            "{where}; after a prefill of 1, 2 or 3 copies of one token, one "
            "cached step with another token gives the same output each time, "
            "while the full recompute's changes (by {gap:.3g} from 1 copy to "
            "2): the new token attends over the cached values, all alike, and "
            "not over its own key and value",
            where=where,
            gap=float((full[1] - full[0]).abs().max()),
        ),
    )


def _visibility(d):
    """The first ``(step t, earlier token j, the step depends on it)`` where
    the step and the recompute disagree on whether token ``j`` matters (its
    change moves the output at all), or None. Tokens 0 and 1 are changed:
    from step 1 to the last, their distance to the new token takes every
    value, so every step is checked at every distance a window can end at."""
    total, found = d.tokens.size(1), None
    for j in (0, 1):
        other = d.with_token(j)
        steps, _ = stepwise(d.call, other, 1, total)
        for t in range(j + 1, total):
            step = not torch.equal(steps[t], d.outs[t])
            full = not torch.equal(d.recompute(other[:, : t + 1]), d.full[t])
            if step != full and (found is None or (t, j) < found[:2]):
                found = (t, j, step)
    return found


def _window(d, window, where, seen) -> Finding | None:
    found = _visibility(d)
    if found is None:
        seen.append(
            tr(
                "each step depends on tokens 0 and 1 exactly when the full "
                "recompute does (each changed in turn)"
            )
        )
        return None
    t, j, more = found
    if window is None:  # no window meant: what it sees is only observed
        seen.append(
            tr(
                "at step {t} the output changes when token {j} changes and the "
                "full recompute's does not (if the model has a sliding window, "
                "--window W says so)",
                t=t,
                j=j,
            )
            if more
            else tr(
                "at step {t} the output does not change when token {j} "
                "changes and the full recompute's does (if the model has a "
                "sliding window, --window W says so)",
                t=t,
                j=j,
            )
        )
        return None
    if more:
        message = tr(
            "{where}; at step {t} the new token's output changes when token "
            "{j} changes, and the full recompute's does not: it sees more "
            "than the window of W = {window} lets it",
            where=where,
            t=t,
            j=j,
            window=window,
        )
    else:
        message = tr(
            "{where}; at step {t} the new token's output does not change when "
            "token {j} changes, and the full recompute's does: it sees fewer "
            "tokens than the window of W = {window}",
            where=where,
            t=t,
            j=j,
            window=window,
        )
    return Finding("decode-window", message)


def _rotated_again(d, window, where, seen) -> Finding | None:
    first = close(d.outs[1], d.full[1])  # a prefill of 1, one step
    second = close(d.one_step(d.tokens[:, :3]), d.full[2])  # of 2, one step
    if first and not second:
        return Finding(
            "decode-rope-twice",
            tr(
                "{where}; one step after a prefill of one token equals the full "
                "recompute, one step after a prefill of two tokens does not: the "
                "step changes the cached keys, except the one at position 0, "
                "which a rotation leaves as it is; the keys are rotated again",
                where=where,
            ),
        )
    right, wrong = tr("right"), tr("wrong")
    seen.append(
        tr(
            "one step after a prefill of one token is {first}, after two "
            "tokens {second}",
            first=right if first else wrong,
            second=right if second else wrong,
        )
    )
    return None


def _position(d, window, where, seen) -> Finding | None:
    if not close(d.outs[1], d.full[1]):
        return Finding(
            "decode-position-offset",
            tr(
                "{where}; one step after a prefill of one token already "
                "differs, though its one cached key sits at position 0, which "
                "a rotation leaves as it is, and the step reads the tokens the "
                "recompute reads: what is left is the new token's own position",
                where=where,
            ),
        )
    if window is None:
        return None
    lengths = range(max(window - 1, 1), window + 3)  # the window full of token 0
    full = [d.recompute(d.constant(n)) for n in lengths]
    if not all(close(f, full[0]) for f in full):
        return None
    steps = [d.one_step(d.constant(n)) for n in lengths]
    pairs = zip(lengths, steps, strict=True)
    moved = [n for n, s in pairs if not close(s, steps[0])]
    if not moved:
        seen.append(
            tr(
                "with the window full of one token, one step after a prefill "
                "of {low} to {high} tokens gives the same output",
                low=lengths[0],
                high=lengths[-1],
            )
        )
        return None
    return Finding(
        "decode-position-offset",
        tr(
            "{where}; with the window of W = {window} full of one token, one "
            "step with another token after a prefill of {n1} tokens and after "
            "{n2} gives different outputs, where the full recompute gives the "
            "same: the new token's position is counted wrongly (from the length "
            "of a trimmed cache, say)",
            where=where,
            window=window,
            n1=lengths[0],
            n2=moved[0],
        ),
    )
