"""Where a module computes attention, traced in a recorded forward pass (every
torch call it made, see ``running.Recorder``).

Each attention computation is one softmax over scores (or one call of
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

from ..running import Event

__all__ = [
    "VIEWS", "MULTIPLY", "DIVIDE", "PASS", "PRODUCTS", "TracedAttention", "tensors",
    "walk_back", "product_parts", "output_of", "manual_softmax", "find_attention",
    "projections",
]  # fmt: skip

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
class TracedAttention:
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
    weights: torch.Tensor | None = None  # the softmax's output
    query_axis: int = -2  # of the scores, as behaviour shows it
    key_axis: int = -1
    product: int | None = None  # the event of the product that made the scores
    after: int = 0  # where to look for the product with the values


def tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _producer(events: list[Event], t, before: int) -> int | None:
    for j in range(before - 1, -1, -1):
        if any(o is t for o in tensors(events[j].out)):
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


def _scaling(ev: Event):
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


def walk_back(events, t, before, *, through_masks: bool, depth: int = 0):
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
            for arg in tensors(list(ev.args)):
                if arg.is_floating_point() and arg.numel() == size:
                    f, p = walk_back(
                        events, arg, j, through_masks=True, depth=depth
                    )
                    if p is not None:
                        return factor * f, p
            return factor, None
        else:
            return factor, None
        before = j
    return factor, None


def _einsum_parts(ev: Event):
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


def product_parts(ev: Event, axes=(-2, -1)):
    """``(query operand, axis), (key operand, axis), dot-product length``
    of a product that made scores whose query and key axes are ``axes``
    (``(..., L, S)`` unless found otherwise; other axes only for an einsum
    whose output is the scores)."""
    if ev.name != "einsum":
        if axes != (-2, -1):
            return None, None, None
        a, b = ev.args[0], ev.args[1]
        if ev.name == "__rmatmul__":
            a, b = b, a
        return (a, -2), (b, -1), a.size(-1)
    inputs, rhs, operands = _einsum_parts(ev)
    if len(operands) != 2 or len(rhs) < 2 or "." in rhs[-2:]:
        return None, None, None
    if axes != (-2, -1) and ("." in rhs or len(rhs) != ev.out.dim()):
        return None, None, None
    q_letter, k_letter = rhs[axes[0]], rhs[axes[1]]
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


def output_of(events, weights, start, query_axis=-2):
    """``(tensor, token axis)`` of the product that mixes the values with
    ``weights`` (whose queries run along ``query_axis``)."""
    derived = [weights]
    for j in range(start + 1, len(events)):
        ev = events[j]
        args = list(ev.args)
        if ev.name == "einsum":
            inputs, rhs, operands = _einsum_parts(ev)
            for subs, operand in zip(inputs, operands, strict=False):
                if any(operand is d for d in derived) and len(subs) >= 2:
                    if query_axis != -2 and len(subs) != operand.dim():
                        return None
                    letter = subs[query_axis]
                    if letter in rhs and letter != ".":
                        return ev.out, _axis(rhs, letter)
            continue
        if not any(any(a is d for d in derived) for a in tensors(args)):
            continue
        if ev.name in PRODUCTS:
            return (ev.out, -2) if query_axis == -2 else None
        if ev.name in VIEWS | PASS | MULTIPLY | DIVIDE:
            derived.extend(tensors(ev.out))
    return None


def manual_softmax(events: list[Event], i: int):
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


def find_attention(events: list[Event]) -> list[TracedAttention]:
    found = []
    for i, ev in enumerate(events):
        manual = manual_softmax(events, i)
        if manual is not None:
            ev = Event("softmax", (manual[0], manual[1]), {}, manual[2])
        if ev.name == "scaled_dot_product_attention":
            q, k = ev.args[0], ev.args[1]
            scale = ev.kwargs.get("scale", ev.args[6] if len(ev.args) > 6 else None)
            factor = 1 / math.sqrt(q.size(-1)) if scale is None else float(scale)
            found.append(
                TracedAttention(
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
            att = TracedAttention(
                "softmax", i, scores.size(-1), dim=dim, ndim=scores.dim()
            )
            att.weights = ev.out
            factor, p = walk_back(events, scores, i, through_masks=True)
            att.product = p
            if p is not None:
                query, key, terms = product_parts(events[p])
                if query is not None and key is not None:
                    fq, _ = walk_back(events, query[0], p, through_masks=False)
                    fk, _ = walk_back(events, key[0], p, through_masks=False)
                    att.factor, att.terms = factor * fq * fk, terms
                    att.query, att.key = query, key
            att.after = i if manual is None else i + 1
            att.output = output_of(events, ev.out, att.after)
            found.append(att)
    return found


def projections(events: list[Event], before: int) -> list[torch.Tensor]:
    """Outputs of the linear maps (``F.linear``, or a product with a
    parameter) computed before event ``before``."""
    found = []
    for ev in events[:before]:
        args = tensors(list(ev.args))
        params = any(isinstance(a, torch.nn.Parameter) for a in args)
        if ev.name == "linear" or (ev.name in PRODUCTS and params):
            if isinstance(ev.out, torch.Tensor) and ev.out.requires_grad:
                found.append(ev.out)
    return found
