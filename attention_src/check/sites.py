"""Where a module computes attention: the "sites" in a recorded forward pass.

A site is one softmax over scores (or one call of
``F.scaled_dot_product_attention``). For each, this module finds the product
that made the scores, the factor the scores were multiplied by on the way to
the softmax, the operands that hold the queries and the keys (and the axis
that runs over the tokens in each), and the product that mixed the values.
That is all observation of what the code did — no names are needed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch

from .lang import tr
from .probe import B, L
from .running import _Event

__all__ = []  # internal: see attention_src.check

VIEWS = {
    "transpose", "transpose_", "permute", "view", "reshape", "contiguous",
    "clone", "float", "half", "double", "bfloat16", "to", "type_as",
    "__getitem__", "unsqueeze", "squeeze", "flatten", "unflatten", "expand",
    "expand_as", "__get__", "swapaxes", "swapdims", "movedim", "narrow",
    "select", "chunk", "split", "unbind", "tensor_split", "view_as",
    "reshape_as", "t",
}  # fmt: skip
MULTIPLY = {"mul", "__mul__", "__rmul__", "multiply", "mul_", "__imul__"}
DIVIDE = {"div", "__truediv__", "true_divide", "divide", "div_", "__itruediv__"}
PASS = {
    "masked_fill", "masked_fill_", "where", "add", "__add__", "__radd__",
    "add_", "__iadd__", "sub", "__sub__", "sub_", "__isub__", "nan_to_num",
}  # fmt: skip
PRODUCTS = {"matmul", "__matmul__", "__rmatmul__", "bmm", "mm", "einsum"}


@dataclass
class _Site:
    """One attention computation found in a forward pass."""

    kind: str  # "softmax" or "sdpa"
    index: int  # its event
    attended: int  # the size of the axis the weights are spread over
    dim: int | None = None  # softmax dim (non-negative), None for sdpa
    ndim: int = 0  # dims of the scores
    factor: float | None = None  # what the scores were multiplied by
    terms: int | None = None  # the length of each dot product
    query: tuple | None = None  # (tensor, token axis)
    key: tuple | None = None
    output: tuple | None = None  # (tensor, token axis) of weights @ v


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _producer(events: list[_Event], t, before: int) -> int | None:
    for j in range(before - 1, -1, -1):
        if any(o is t for o in _tensors(events[j].out)):
            return j
    return None


def _scalar(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.detach())
    return None


def _scaling(ev: _Event):
    """``(tensor, factor)`` if the event multiplies or divides one tensor by
    a number, else ``None``."""
    if len(ev.args) < 2:
        return None
    a, b = ev.args[0], ev.args[1]
    if not isinstance(a, torch.Tensor):
        return None
    big_a = a.numel() > 1
    sa, sb = _scalar(a) if not big_a else None, _scalar(b)
    if ev.name in MULTIPLY:
        if big_a and sb is not None:
            return a, sb
        if sa is not None and isinstance(b, torch.Tensor) and b.numel() > 1:
            return b, sa
    if ev.name in DIVIDE and big_a and sb is not None and sb != 0:
        return a, 1.0 / sb
    return None


def _walk_back(events, t, before, *, through_masks: bool, depth: int = 0):
    """Follow ``t`` back through views and scalar factors: ``(factor,
    index of the product event or None)``."""
    factor = 1.0
    while depth < 200:
        depth += 1
        j = _producer(events, t, before)
        if j is None:
            return factor, None
        ev = events[j]
        if ev.name in PRODUCTS:
            return factor, j
        scaling = _scaling(ev)
        if scaling is not None:
            t, f = scaling
            factor *= f
        elif ev.name in VIEWS and ev.args and isinstance(ev.args[0], torch.Tensor):
            t = ev.args[0]
        elif through_masks and ev.name in PASS:
            size = t.numel()
            for arg in _tensors(list(ev.args)):
                if arg.is_floating_point() and arg.numel() == size:
                    f, p = _walk_back(
                        events, arg, j, through_masks=True, depth=depth
                    )
                    if p is not None:
                        return factor * f, p
            return factor, None
        else:
            return factor, None
        before = j
    return factor, None


def _einsum_parts(ev: _Event):
    """``(input subscripts, output subscripts, operands)`` of an einsum."""
    equation, *operands = ev.args
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    equation = equation.replace(" ", "").replace("...", ".")
    lhs, _, rhs = equation.partition("->")
    inputs = lhs.split(",")
    if "->" not in ev.args[0]:
        letters = re.sub(r"[^a-zA-Z]", "", lhs)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return inputs, rhs, operands


def _axis(subscripts: str, letter: str) -> int:
    i = subscripts.index(letter)
    return i - len(subscripts) if "." in subscripts[:i] else i


def _product_parts(ev: _Event):
    """``(query operand, axis), (key operand, axis), dot-product length``
    of a product that made scores ``(..., L, S)``."""
    if ev.name != "einsum":
        a, b = ev.args[0], ev.args[1]
        if ev.name == "__rmatmul__":
            a, b = b, a
        return (a, -2), (b, -1), a.size(-1)
    inputs, rhs, operands = _einsum_parts(ev)
    if len(operands) != 2 or len(rhs) < 2 or "." in rhs[-2:]:
        return None, None, None
    q_letter, k_letter = rhs[-2], rhs[-1]
    found = {}
    for subs, operand in zip(inputs, operands, strict=False):
        for letter in (q_letter, k_letter):
            if letter in subs and letter not in found:
                found[letter] = (operand, _axis(subs, letter))
    terms = 1
    for c in set("".join(inputs)) - set(rhs) - {"."}:
        subs, operand = next(
            (s, o) for s, o in zip(inputs, operands, strict=False) if c in s
        )
        terms *= operand.size(_axis(subs, c))
    return found.get(q_letter), found.get(k_letter), terms


def _output_of(events, weights, start):
    """``(tensor, token axis)`` of the product that mixes the values with
    ``weights``."""
    derived = [weights]
    for j in range(start + 1, len(events)):
        ev = events[j]
        args = list(ev.args)
        if ev.name == "einsum":
            inputs, rhs, operands = _einsum_parts(ev)
            for subs, operand in zip(inputs, operands, strict=False):
                if any(operand is d for d in derived) and len(subs) >= 2:
                    letter = subs[-2]
                    if letter in rhs and letter != ".":
                        return ev.out, _axis(rhs, letter)
            continue
        if not any(any(a is d for d in derived) for a in _tensors(args)):
            continue
        if ev.name in PRODUCTS:
            return ev.out, -2
        if ev.name in VIEWS | PASS | MULTIPLY | DIVIDE:
            derived.extend(_tensors(ev.out))
    return None


def _manual_softmax(events: list[_Event], i: int):
    """``(scores, dim, weights)`` if event ``i`` is the ``exp`` of a softmax
    written by hand, ``exp(z - max) / sum``; else ``None``."""
    ev = events[i]
    if ev.name not in ("exp", "exp_") or not isinstance(ev.out, torch.Tensor):
        return None
    scores, e = ev.args[0], ev.out
    j = _producer(events, scores, i)
    if j is not None and events[j].name in ("sub", "__sub__"):
        shifted = events[j].args[0]
        if isinstance(shifted, torch.Tensor) and shifted.shape == scores.shape:
            scores = shifted
    dim = weights = None
    for later in events[i + 1 :]:
        first = later.args[0] if later.args else None
        if first is not e:
            continue
        if later.name == "sum" and dim is None:
            dim = later.args[1] if len(later.args) > 1 else later.kwargs.get("dim")
            dim = (
                dim[0] if isinstance(dim, (tuple, list)) and len(dim) == 1 else dim
            )
        elif later.name in DIVIDE and weights is None:
            weights = later.out
    if not isinstance(dim, int) or not isinstance(weights, torch.Tensor):
        return None
    return scores, dim, weights


def _find_sites(events: list[_Event]) -> list[_Site]:
    sites = []
    for i, ev in enumerate(events):
        manual = _manual_softmax(events, i)
        if manual is not None:
            ev = _Event("softmax", (manual[0], manual[1]), {}, manual[2])
        if ev.name == "scaled_dot_product_attention":
            q, k = ev.args[0], ev.args[1]
            scale = ev.kwargs.get("scale", ev.args[6] if len(ev.args) > 6 else None)
            factor = 1 / math.sqrt(q.size(-1)) if scale is None else float(scale)
            sites.append(
                _Site(
                    "sdpa",
                    i,
                    k.size(-2),
                    ndim=q.dim(),
                    factor=factor,
                    terms=q.size(-1),
                    query=(q, -2),
                    key=(k, -2),
                    output=(ev.out, -2),
                )
            )
        elif ev.name == "softmax" and isinstance(ev.out, torch.Tensor):
            scores = ev.args[0]
            dim = ev.args[1] if len(ev.args) > 1 else ev.kwargs.get("dim")
            if not isinstance(dim, int):
                continue
            dim %= scores.dim()
            site = _Site("softmax", i, scores.size(-1), dim=dim, ndim=scores.dim())
            factor, p = _walk_back(events, scores, i, through_masks=True)
            if p is not None:
                query, key, terms = _product_parts(events[p])
                if query is not None and key is not None:
                    fq, _ = _walk_back(events, query[0], p, through_masks=False)
                    fk, _ = _walk_back(events, key[0], p, through_masks=False)
                    site.factor, site.terms = factor * fq * fk, terms
                    site.query, site.key = query, key
            site.output = _output_of(events, ev.out, i if manual is None else i + 1)
            sites.append(site)
    return sites


def _projections(events: list[_Event], before: int) -> list[torch.Tensor]:
    """Outputs of the linear maps (``F.linear``, or a product with a
    parameter) computed before event ``before``."""
    found = []
    for ev in events[:before]:
        args = _tensors(list(ev.args))
        params = any(isinstance(a, torch.nn.Parameter) for a in args)
        if ev.name == "linear" or (ev.name in PRODUCTS and params):
            if isinstance(ev.out, torch.Tensor) and ev.out.requires_grad:
                found.append(ev.out)
    return found


# --- what the sites show, by gradient ------------------------------------------

SITE_CHECKS = [
    "the scores are scaled by 1/sqrt(head width)",
    "the softmax runs over the keys",
    "each query and key row comes from its own token, each output token "
    "from its own position of every head",
    "the heads read separate features",
]


def _nonzero(dep) -> list[int]:
    top = float(dep.clamp(max=1e30).max())
    return [j for j, d in enumerate(dep.tolist()) if d > 1e-6 * max(top, 1e-30)]


def _unnormalized(events: list[_Event]) -> str | None:
    """How the rows of attention weights sum, where they are the ``exp`` of
    scores (a product, as q @ k.T) that reach the values without being
    divided by their sum; ``None`` where every such row sums to 1."""
    for i, ev in enumerate(events):
        if ev.name not in ("exp", "exp_") or _manual_softmax(events, i):
            continue
        _, p = _walk_back(events, ev.args[0], i, through_masks=True)
        if p is None:
            continue
        derived, weights = [ev.out], None
        for later in events[i + 1 :]:
            used = [
                a
                for a in _tensors(list(later.args))
                if any(a is d for d in derived)
            ]
            if not used:
                continue
            if later.name in DIVIDE or later.name.startswith(("sum", "norm")):
                break  # normalised by hand, another way
            if later.name in PRODUCTS:
                weights = used[0]
                break
            if later.name in VIEWS | PASS | MULTIPLY:
                derived.extend(_tensors(later.out))
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


def _sites_facts(probe, facts: dict, x, out, recorder) -> None:
    events = recorder.events
    unnormalized = _unnormalized(events)
    if unnormalized:
        facts["weights-sum"] = unnormalized
    sites = _find_sites(events)
    if not sites:
        facts["notes"].append(
            tr(
                "no softmax or F.scaled_dot_product_attention call was visible "
                "(one inside nn.MultiheadAttention is not): the scale, softmax "
                "dim, head split and head independence were not checked"
            )
        )
        return
    facts["checks"] += SITE_CHECKS
    H = probe.H
    for s in sites:
        if s.kind == "softmax" and s.dim != s.ndim - 1:
            facts["sdim"] = tr(
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
                    facts["scale-none"] = tr(
                        "the scores (dot products of {n} terms) are not scaled",
                        n=s.terms,
                    )
                else:
                    facts["scale-wrong"] = tr(
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
                facts["attend-B"] = tr(
                    "attention runs over {axis} (size {B})", axis=axis, B=B
                )
            else:
                facts[fact if s.attended == H else "split"] = tr(
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
                if dep is not None and _nonzero(dep) != [i]:
                    fact = "split" if name == "query" else "keyT"
                    facts.setdefault(
                        fact,
                        tr(
                            "{name} {i} of the scores is built from input "
                            "tokens {tokens}",
                            name=tr(name),
                            i=i,
                            tokens=_nonzero(dep),
                        ),
                    )
                    break
    outputs = [s.output for s in sites if s.output is not None]
    for o, axis in outputs:
        if o.size(axis) == L and "merge" not in facts:
            _merge_fact(probe, facts, out, o, axis)
    _heads_facts(probe, facts, sites, events)


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
            facts["merge"] = tr(
                "output token {i} does not use position {i} of {head} output "
                "(it mixes positions {used} of the heads' outputs)",
                i=i,
                head=head,
                used=used,
            )
            return


def _heads_facts(probe, facts, sites, events) -> None:
    """Each head must read its own features of the projections."""
    H = probe.H
    outs = [s.output for s in sites if s.output is not None]
    if len(outs) == 1 and outs[0][0].dim() == 4 and outs[0][0].size(1) == H:
        parts = [outs[0][0][:, h] for h in range(H)]
    elif len(outs) == H:
        parts = [o for o, _ in outs]
    else:
        return
    ys = _projections(events, min(s.index for s in sites))
    used = []
    for part in parts:
        feats = set()
        for n, y in enumerate(ys):
            dep = probe.dependence(part, y, -1)
            if dep is not None:
                feats |= {(n, f) for f in _nonzero(dep)}
        used.append(feats)
    for a in range(H):
        for b in range(a + 1, H):
            if used[a] & used[b]:
                facts["heads-shared"] = tr(
                    "heads {a} and {b} both read {n} of the same projected "
                    "features",
                    a=a,
                    b=b,
                    n=len(used[a] & used[b]),
                )
                return
