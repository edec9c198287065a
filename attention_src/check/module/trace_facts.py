"""What the attention computations of a module show (see ``trace``), measured by
gradient: the scale, the softmax's axis and which axes of the scores hold the
queries and the keys (found by behaviour), the head split and merge, and the
heads' independence. Each observation becomes a fact for ``resolve``."""

from __future__ import annotations

import math

import torch

from ..lang import tr
from ..running import Event
from .facts import ATTENTION, B, Facts, L
from .probe import nonzero
from .trace import (
    DIVIDE,
    MULTIPLY,
    PASS,
    PRODUCTS,
    VIEWS,
    find_attention,
    manual_softmax,
    output_of,
    product_parts,
    projections,
    tensors,
    walk_back,
)

__all__ = ["attention_facts"]


def _unnormalized(events: list[Event]) -> str | None:
    """How the rows of attention weights sum, where they are the ``exp`` of
    scores (a product, as q @ k.T) that reach the values without being
    divided by their sum; ``None`` where every such row sums to 1."""
    for i, ev in enumerate(events):
        if ev.name not in ("exp", "exp_") or manual_softmax(events, i):
            continue
        _, p = walk_back(events, ev.args[0], i, through_masks=True)
        if p is None:
            continue
        derived, weights = [ev.out], None
        for later in events[i + 1 :]:
            used = [
                a for a in tensors(list(later.args)) if any(a is d for d in derived)
            ]
            if not used:
                continue
            if later.name in DIVIDE or later.name.startswith(("sum", "norm")):
                break  # normalised by hand, another way
            if later.name in PRODUCTS:
                weights = used[0]
                break
            if later.name in VIEWS | PASS | MULTIPLY:
                derived.extend(tensors(later.out))
        if weights is None:
            continue
        sums = weights.detach().float().sum(dim=-1)
        if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
            low, high = float(sums.min()), float(sums.max())
            return tr(
                "the weights are the exp of the scores, never divided by their "
                "sum: their rows sum to {low:.3g}..{high:.3g}",
                low=low,
                high=high,
            )
    return None


def _token_axes(probe, out, weights) -> tuple[int, int] | None:
    """``(query axis, key axis)`` of attention weights, found by behaviour:
    the last output token reaches the weights only through its own query's
    row, and through every key of it (it sees them all, causal or not).
    ``None`` unless exactly one axis of each kind shows."""
    if not isinstance(weights, torch.Tensor) or not weights.requires_grad:
        return None
    g = probe.grad_abs(out[:, L - 1], weights)
    if g is None:
        return None
    queries, keys = [], []
    for a in range(weights.dim()):
        if weights.size(a) != L:
            continue
        per = nonzero(g.movedim(a, 0).reshape(L, -1).sum(dim=1))
        if per == [L - 1]:
            queries.append(a)
        elif len(per) == L:
            keys.append(a)
    if len(queries) != 1 or len(keys) != 1:
        return None
    return queries[0], keys[0]


def _relayout(probe, events, att, out) -> None:
    """Scores laid out otherwise than ``(..., L, S)`` (an einsum to
    ``[L, S, B, H]``, or to a key-first ``(B, H, S, L)`` that its shape alone
    does not tell from ``(..., L, S)``): take the query and key axes that
    behaviour shows, wherever it shows one of each."""
    if att.kind != "softmax":
        return
    axes = _token_axes(probe, out, att.weights)
    if axes is None or axes == (att.ndim - 2, att.ndim - 1):
        return
    att.query_axis, att.key_axis = axes
    att.attended = att.weights.size(axes[1])
    att.query = att.key = None
    if att.product is not None:
        query, key, terms = product_parts(events[att.product], axes)
        if query is not None and key is not None:
            att.query, att.key, att.terms = query, key, terms
    att.output = output_of(events, att.weights, att.after, axes[0])


def attention_facts(probe, facts: Facts, x, out, recorder) -> None:
    events = recorder.events
    unnormalized = _unnormalized(events)
    if unnormalized:
        facts.seen["weights-sum"] = unnormalized
    computations = find_attention(events)
    if not computations:
        facts.notes.append(
            tr(
                "no softmax or F.scaled_dot_product_attention call was visible "
                "(one inside nn.MultiheadAttention is not): the scale, softmax "
                "dim, head split and head independence were not checked"
            )
        )
        return
    facts.add(*ATTENTION)
    H = probe.H
    for s in computations:
        _relayout(probe, events, s, out)
        if s.kind == "softmax" and s.key_axis != -1 and s.dim != s.key_axis:
            queries = s.dim == s.query_axis
            over = tr("the query axis") if queries else tr("another axis")
            facts.seen["sdim"] = tr(
                "the softmax runs over dim={dim} ({over}) of scores with {ndim} "
                "dims, whose keys are dim={keys}",
                dim=s.dim - s.ndim,
                over=over,
                ndim=s.ndim,
                keys=s.key_axis - s.ndim,
            )
            facts.fixes["sdim"] = tr(
                "take the softmax over the keys: dim={keys} of these scores, the "
                "axis their keys were found on",
                keys=s.key_axis - s.ndim,
            )
        elif s.kind == "softmax" and s.key_axis == -1 and s.dim != s.ndim - 1:
            facts.seen["sdim"] = tr(
                "the softmax runs over dim={dim} of scores with {ndim} dims",
                dim=s.dim - s.ndim,
                ndim=s.ndim,
            )
        if s.factor is not None and s.terms:
            right = 1 / math.sqrt(s.terms)
            if not math.isclose(s.factor, right, rel_tol=1e-3):
                width = 1 / s.factor**2
                what = tr(" (the model width)") if round(width) == probe.D else ""
                if math.isclose(s.factor, 1.0, rel_tol=1e-3):
                    facts.seen["scale-none"] = tr(
                        "the scores (dot products of {n} terms) are not scaled",
                        n=s.terms,
                    )
                else:
                    facts.seen["scale-wrong"] = tr(
                        "the scores are multiplied by {factor:.4g} = "
                        "1/sqrt({width:.4g}){what}, but each dot product has {n} "
                        "terms: the scale is 1/sqrt({n})",
                        factor=s.factor,
                        width=width,
                        what=what,
                        n=s.terms,
                    )
        if s.attended != L:  # the last axis of the scores, the keys
            axis = {H: tr("the heads"), B: tr("the batch")}.get(
                s.attended, tr("another axis")
            )
            fact = "attend-H" if s.attended == H else "attend-B"
            if s.attended == B:
                facts.seen["attend-B"] = tr(
                    "attention runs over {axis} (size {B})", axis=axis, B=B
                )
            else:
                facts.seen[fact if s.attended == H else "split"] = tr(
                    "attention runs over an axis of size {n} ({axis}), not over "
                    "the {L} tokens",
                    n=s.attended,
                    axis=axis,
                    L=L,
                )
            continue
        for name, part in (("query", s.query), ("key", s.key)):
            if part is None or part[0].size(part[1]) != L:
                continue
            for i in range(L):
                dep = probe.dependence(part[0].select(part[1], i), x, 1)
                if dep is not None and nonzero(dep) != [i]:
                    fact = "split" if name == "query" else "keyT"
                    facts.seen.setdefault(
                        fact,
                        tr(
                            "{name} {i} of the scores is built from input "
                            "tokens {tokens}",
                            name=tr(name),
                            i=i,
                            tokens=nonzero(dep),
                        ),
                    )
                    break
    outputs = [s.output for s in computations if s.output is not None]
    for o, axis in outputs:
        if o.size(axis) == L and "merge" not in facts.seen:
            _merge_fact(probe, facts, out, o, axis)
    if out.detach().isnan().any():  # gradients through a NaN are NaN
        facts.drop("heads-apart")
    else:
        _heads_facts(probe, facts, computations, events)


def _merge_fact(probe, facts, out, o, axis) -> None:
    """Output token i must use position i of every head's output."""
    batched = o.dim() == 4 and o.size(1) == probe.H and axis % 4 == 2
    for i in range(L):
        g = probe.grad_abs(out[:, i], o)
        if g is None:
            return
        g = g.movedim(axis, -1)  # (..., L)
        per = g.movedim(1, 0).reshape(probe.H, -1, L) if batched else g[None]
        per = per.reshape(per.size(0), -1, L).sum(dim=1)  # (heads, L)
        limit = 1e-6 * float(per.clamp(max=1e30).max().clamp(min=1e-30))
        missing = [h for h in range(per.size(0)) if per[h, i] <= limit]
        if missing:
            h = missing[0]
            head = tr("head {h}'s", h=h) if batched else tr("the heads'")
            used = [j for j in range(L) if per[:, j].max() > limit]
            facts.seen["merge"] = tr(
                "output token {i} does not use position {i} of {head} output "
                "(it mixes positions {used} of the heads' outputs)",
                i=i,
                head=head,
                used=used,
            )
            return


def _heads_facts(probe, facts, computations, events) -> None:
    """Each head must read its own features of the projections."""
    H = probe.H
    outs = [s.output for s in computations if s.output is not None]
    if len(outs) == 1 and outs[0][0].dim() == 4 and outs[0][0].size(1) == H:
        parts = [outs[0][0][:, h] for h in range(H)]
    elif len(outs) == H:
        parts = [o for o, _ in outs]
    else:
        return
    ys = projections(events, min(s.index for s in computations))
    used = []
    for part in parts:
        feats = set()
        for n, y in enumerate(ys):
            dep = probe.dependence(part, y, -1)
            if dep is not None:
                feats |= {(n, f) for f in nonzero(dep)}
        used.append(feats)
    for a in range(H):
        for b in range(a + 1, H):
            if used[a] & used[b]:
                facts.seen["heads-shared"] = tr(
                    "heads {a} and {b} both read {n} of the same projected "
                    "features",
                    a=a,
                    b=b,
                    n=len(used[a] & used[b]),
                )
                return
