"""The mask checks of a module (see ``check_module``): no output depends on a later
token under a causal mask (by gradient), padding leaves the real tokens'
outputs as they are alone, a query with no allowed key gets zero weights, and
the rows of the returned weights sum to 1."""

from __future__ import annotations

import torch

from ...masks import causal_mask, padding_mask
from ..lang import tr
from ..running import Recorder
from .facts import B, Facts, L
from .masks import LAYOUTS, band
from .probe import nonzero
from .trace import find_attention

__all__ = ["weights_sum", "causal_facts", "padding_facts", "fully_masked_facts"]


def weights_sum(w, allow=None) -> str | None:
    if w is None or w.shape[-1] != L:
        return None
    sums = w.detach().float().sum(dim=-1)
    rows = torch.ones_like(sums, dtype=torch.bool)
    if allow is not None:
        rows = allow.any(dim=-1).expand(sums.shape)
    good = sums[rows]
    if torch.allclose(good, torch.ones_like(good), atol=1e-4):
        return None
    return tr(
        "rows sum to {low:.3g}..{high:.3g}",
        low=float(good.min()),
        high=float(good.max()),
    )


def causal_facts(probe, facts: Facts, convention, explicit) -> str:
    """Run the causal probes (for a module with causal attention built in, a
    mask allowing tokens i-1 and i); return the convention found."""
    layout = probe.masks.layout(True, probe.runs)
    if layout is None:
        what = (
            tr("a mask on earlier tokens") if probe.causal else tr("a causal mask")
        )
        facts.notes.append(
            tr(
                "{what} was not checked: the module takes {masks} only, which "
                "cannot say it",
                what=what,
                masks=probe.masks.describe(),
            )
        )
        facts.drop("causal-mask", "mask-layouts")
        return convention
    if probe.causal:
        allow, what = (
            band(probe.device)[0, 0],
            tr("a mask allowing tokens i-1 and i"),
        )
    else:
        allow, what = causal_mask(L, device=probe.device), tr("a causal mask")
    form = (layout, convention)
    x = probe.leaf()
    out, w, error = probe.run(x, allow, form=form)
    if error is not None:
        layout = tr(LAYOUTS[layout])
        facts.crashes.append(
            tr(
                "{error} with {what} {layout}",
                error=error,
                what=what,
                layout=layout,
            )
        )
        return convention
    dep = probe.token_matrix(out, x)
    skip = (layout, "BS", "lengths")
    others = [lay for lay in probe.masks.layouts if lay not in skip]
    if not probe.masks.found:
        others = ["B1LS"] if layout == "LS" else []
    for other in others:
        out4, _, error4 = probe.run(probe.x, allow, form=(other, convention))
        if error4 is not None:
            facts.crashes.append(_with_mask(error4, other))
        elif not torch.allclose(out4, out.detach(), atol=1e-5, equal_nan=True):
            facts.seen["mask-shapes"] = tr(
                "a {other} mask gives other outputs than the same mask {layout}",
                other=tr(LAYOUTS[other]),
                layout=tr(LAYOUTS[layout]),
            )
    if dep is None:
        return convention
    base, _, _ = probe.run(probe.x)
    off = ~torch.eye(L, dtype=torch.bool, device=probe.device)
    future = dep & ~allow
    # the queries with a key under the mask read the other way round: the
    # others have none under that reading, and what they get shows the fill,
    # not which way the mask is read
    keyed = (~allow & off).any(dim=-1)
    seen_past = (dep & allow & off)[keyed].any()  # not the diagonal: its query
    if base is not None and torch.allclose(out.detach(), base, atol=1e-6):
        facts.seen["ignored"] = tr("{what} does not change the output", what=what)
    elif future[:-1].any() and not seen_past:
        if not explicit and convention != "float":  # it means the other one
            return "block" if convention == "allow" else "allow"
        meaning = tr("blocked") if convention == "allow" else tr("allowed")
        facts.seen["inverted"] = tr(
            "with {what} each query sees only the tokens it may not: the code "
            "treats True as {meaning}",
            what=what,
            meaning=meaning,
        )
        _fill_fact(facts, out, dep & off, ~keyed, what)
    elif future.any():
        i, j = future.nonzero()[0].tolist()
        facts.seen["leak"] = tr(
            "under {what} output {i} depends on token {j}", what=what, i=i, j=j
        )
    issue = weights_sum(w, allow)
    if issue:
        facts.seen["weights-sum"] = tr(
            "under {what} the weights' {issue}", what=what, issue=issue
        )
    return convention


def _fill_fact(facts, out, dep, empty, what) -> None:
    """What a query gets that has no key under the mask read the other way
    round: NaN (a -inf fill) or, depending on every other token, uniform
    weights (a finite fill) — a mistake of its own besides the inversion."""
    for i in empty.nonzero().flatten().tolist():
        if out[:, i].isnan().any():
            facts.seen["fill-nan"] = tr(
                "with {what} read the other way round, query {i} has no key, "
                "and its output is NaN",
                what=what,
                i=i,
            )
        elif dep[i].sum() == L - 1:
            facts.seen["fill-uniform"] = tr(
                "with {what} read the other way round, query {i} has no key, "
                "and its output depends on every other token: a finite fill "
                "gives it uniform weights",
                what=what,
                i=i,
            )
        return


def _with_mask(error, layout) -> str:
    return tr(
        "{error} with a mask {layout}", error=error, layout=tr(LAYOUTS[layout])
    )


def padding_facts(probe, facts: Facts, convention) -> None:
    lengths = torch.tensor([L, 3], device=probe.device)
    real = padding_mask(lengths, L)  # (B, 1, 1, L)
    keys = real.expand(B, 1, L, L)
    layout = probe.masks.layout(False, probe.runs)
    if layout is None:
        facts.notes.append(
            tr(
                "padding was not checked: the module takes (L, S) masks only, the "
                "same for every example"
            )
        )
        facts.drop("padding")
        return
    out, _, error = probe.run(probe.x, keys, form=(layout, convention))
    if error is not None:
        layout = tr(LAYOUTS[layout])
        facts.crashes.append(
            tr("{error} with a padding mask {layout}", error=error, layout=layout)
        )
        return
    for b, n in enumerate(lengths.tolist()):
        alone, _, error = probe.run(probe.x[b : b + 1, :n])
        if error is not None:
            facts.crashes.append(
                tr("{error} on x (1, {n}, {D})", error=error, n=n, D=probe.D)
            )
            return
        if not torch.allclose(out[b, :n], alone[0], atol=1e-5):
            gap = (out[b, :n] - alone[0]).detach().abs().nan_to_num(1e9)
            gap = float(gap.max())
            facts.seen["padding"] = tr(
                "with a padding mask, the real tokens of sequence {b} differ "
                "by {gap:.3g} from the sequence run alone",
                b=b,
                gap=gap,
            )
            return


def fully_masked_facts(probe, facts: Facts, convention) -> None:
    layout = probe.masks.layout(False, probe.runs)
    if convention == "float":  # what such a row gets is the caller's fill
        facts.notes.append(
            tr(
                "a query with no allowed key was not checked: with a mask added to "
                "the scores, what it gets depends on the fill the caller picks "
                "(-inf gives NaN, torch.finfo(dtype).min uniform weights)"
            )
        )
        layout = None
    if layout in (None, "BS", "lengths"):
        facts.drop("fully-masked")
    if layout is None:
        return  # (L, S) masks only: noted under padding
    if layout in ("BS", "lengths"):
        facts.notes.append(
            tr(
                "a query with no allowed key was not checked: the module takes "
                "{layout} masks only, which cannot say it",
                layout=tr(LAYOUTS[layout]),
            )
        )
        return
    real = padding_mask(torch.tensor([L, 3], device=probe.device), L)
    both = real.transpose(-2, -1) & real  # (B, 1, L, L): queries 3, 4 of 1
    x = probe.leaf()
    recorder = Recorder(neutralize=True)
    out, w, error = probe.run(x, both, recorder=recorder, form=(layout, convention))
    if error is not None:
        facts.crashes.append(_with_mask(error, layout))
        return
    where = tr(
        "the queries of sequence 1 with no allowed key (a (B, 1, L, L) mask)"
    )
    if torch.isnan(out).any():
        facts.seen["nan"] = tr("NaN in the output for {where}", where=where)
        return
    rows = []  # what attention gave the fully masked queries 3 and 4
    for att in find_attention(recorder.events):
        if att.output is not None:
            o, axis = att.output
            if o.size(0) == B and o.size(axis) == L and o.dim() >= 3:
                rows.append(o[1].movedim(axis % o.dim() - 1, 0)[3:].detach())
    if rows:
        if any(float(r.abs().max()) > 1e-6 for r in rows):
            facts.seen["uniform"] = tr(
                "attention gives nonzero outputs to {where}: their weights are not "
                "zero",
                where=where,
            )
        return
    if w is not None and w.dim() >= 3 and w.shape[-1] == L and w.size(0) == B:
        rows = w[1].detach().float().movedim(-2, 0)[3:]  # (2, ..., S)
        if torch.allclose(rows, torch.full_like(rows, 1 / L), atol=1e-4):
            facts.seen["uniform"] = tr(
                "uniform weights 1/{L} for {where}", L=L, where=where
            )
        return
    dep = probe.dependence(out[1, 3:], x, 1)
    if dep is not None and nonzero(dep) and "leak" not in facts.seen:
        facts.seen["uniform"] = tr(
            "the output for {where} depends on the input tokens; with zero weights "
            "it would not",
            where=where,
        )
