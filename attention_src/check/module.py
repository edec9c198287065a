"""Check a multi-head attention module ``MyMultiHead(d_model, num_heads)`` by
behaviour: its weights cannot be matched to PyTorch's by name, so the checks
are properties any correct implementation has, measured by gradients where a
dependence is the question, plus what its attention sites show (see
``sites``). One mistake breaks several properties; ``resolve`` reports the
root cause and lists the rest under it."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from ..checks import shape_str
from ..masks import causal_mask, padding_mask
from .findings import Finding, Report
from .loader import (
    UsageError,
    _check_module_signature,
    _check_options,
)
from .probe import B, L, _Probe
from .resolve import _resolve
from .running import _describe_error, _devices, _Recorder
from .sites import _find_sites, _projections

__all__ = ["check_module"]

CHECKS = [
    "eval() is deterministic",
    "the output has the shape of x",
    "the examples of a batch stay apart (by gradient)",
    "every token sees the others (by gradient)",
    "permuting the tokens permutes the outputs",
    "no output depends on a later token under a causal mask (by gradient)",
    "a (B, 1, L, L) mask gives what the same (L, L) mask gives",
    "padding leaves the real tokens' outputs unchanged",
    "a query with no allowed key gets no weight",
    "the rows of returned weights sum to 1",
]
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


def _sites_facts(probe: _Probe, facts: dict, x, out, recorder) -> None:
    events = recorder.events
    sites = _find_sites(events)
    if not sites:
        facts["notes"].append(
            "no softmax or F.scaled_dot_product_attention call was visible (one "
            "inside nn.MultiheadAttention is not): the scale, softmax dim, head "
            "split and head independence were not checked"
        )
        return
    facts["checks"] += SITE_CHECKS
    H = probe.H
    for s in sites:
        if s.kind == "softmax" and s.dim != s.ndim - 1:
            facts["sdim"] = (
                f"the softmax runs over dim={s.dim - s.ndim} of scores with "
                f"{s.ndim} dims"
            )
        if s.factor is not None and s.terms:
            right = 1 / math.sqrt(s.terms)
            if not math.isclose(s.factor, right, rel_tol=1e-3):
                width = 1 / s.factor**2
                what = " (the model width)" if round(width) == probe.D else ""
                if math.isclose(s.factor, 1.0, rel_tol=1e-3):
                    facts["scale-none"] = (
                        f"the scores (dot products of {s.terms} terms) are "
                        "not scaled"
                    )
                else:
                    facts["scale-wrong"] = (
                        f"the scores are multiplied by {s.factor:.4g} = "
                        f"1/sqrt({width:.4g}){what}, but each dot product "
                        f"has {s.terms} terms: the scale is 1/sqrt({s.terms})"
                    )
        if s.attended != L:  # the last axis of the scores, the keys
            axis = {H: "the heads", B: "the batch"}.get(s.attended, "another axis")
            fact = "attend-H" if s.attended == H else "attend-B"
            if s.attended == B:
                facts["attend-B"] = f"attention runs over {axis} (size {B})"
            else:
                facts[fact if s.attended == H else "split"] = (
                    f"attention runs over an axis of size {s.attended} "
                    f"({axis}), not over the {L} tokens"
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
                        f"{name} {i} of the scores is built from input tokens "
                        f"{_nonzero(dep)}",
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
            head = f"head {h}'s" if batched else "the heads'"
            used = [j for j in range(L) if per[:, j].max() > limit]
            facts["merge"] = (
                f"output token {i} does not use position {i} of {head} output "
                f"(it mixes positions {used} of the heads' outputs)"
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
                facts["heads-shared"] = (
                    f"heads {a} and {b} both read {len(used[a] & used[b])} of "
                    "the same projected features"
                )
                return


def _weights_sum(w, allow=None) -> str | None:
    if w is None or w.shape[-1] != L:
        return None
    sums = w.detach().float().sum(dim=-1)
    rows = torch.ones_like(sums, dtype=torch.bool)
    if allow is not None:
        rows = allow.any(dim=-1).expand(sums.shape)
    good = sums[rows]
    if torch.allclose(good, torch.ones_like(good), atol=1e-4):
        return None
    return f"rows sum to {float(good.min()):.3g}..{float(good.max()):.3g}"


def _causal_facts(probe, facts, convention, explicit) -> str:
    """Run the causal probes; return the convention found."""
    allow = causal_mask(L, device=probe.device)
    passed = allow if convention != "block" else ~allow
    x = probe.leaf()
    out, w, error = probe.run(x, passed)
    if error is not None:
        facts["crash"].append(f"{error} with a causal mask (L, L)")
        return convention
    dep = probe.token_matrix(out, x)
    full = passed.expand(B, 1, L, L)
    out4, _, error4 = probe.run(probe.x, full)
    if error4 is not None:
        facts["crash"].append(f"{error4} with a mask (B, 1, L, L)")
    elif not torch.allclose(out4, out.detach(), atol=1e-5, equal_nan=True):
        facts["mask-shapes"] = "a (B, 1, L, L) mask gives other outputs than (L, L)"
    if dep is None:
        return convention
    base, _, _ = probe.run(probe.x)
    future = dep & ~allow
    seen_past = (dep & allow.tril(-1)).any()  # not the diagonal: its query
    if base is not None and torch.allclose(out.detach(), base, atol=1e-6):
        facts["ignored"] = "a causal mask does not change the output"
    elif future[:-1].any() and not seen_past:
        if not explicit:  # the code means the other convention
            return "block" if convention == "allow" else "allow"
        meaning = "blocked" if convention == "allow" else "allowed"
        facts["inverted"] = (
            "with a causal mask each query sees only later tokens: the code "
            f"treats True as {meaning}"
        )
    elif future.any():
        i, j = future.nonzero()[0].tolist()
        facts["leak"] = f"under a causal mask output {i} depends on token {j}"
    issue = _weights_sum(w, allow)
    if issue:
        facts["weights-sum"] = f"under a causal mask the weights' {issue}"
    return convention


def _padding_facts(probe, facts, convention) -> None:
    lengths = torch.tensor([L, 3], device=probe.device)
    real = padding_mask(lengths, L)  # (B, 1, 1, L)
    keys = real.expand(B, 1, L, L)
    passed = keys if convention != "block" else ~keys
    out, _, error = probe.run(probe.x, passed)
    if error is not None:
        facts["crash"].append(f"{error} with a padding mask (B, 1, L, L)")
        return
    for b, n in enumerate(lengths.tolist()):
        alone, _, error = probe.run(probe.x[b : b + 1, :n])
        if error is not None:
            facts["crash"].append(f"{error} on x (1, {n}, {probe.D})")
            return
        if not torch.allclose(out[b, :n], alone[0], atol=1e-5):
            gap = (out[b, :n] - alone[0]).detach().abs().nan_to_num(1e9)
            gap = float(gap.max())
            facts["padding"] = (
                f"with a padding mask, the real tokens of sequence {b} differ "
                f"by {gap:.3g} from the sequence run alone"
            )
            return


def _fully_masked_facts(probe, facts, convention) -> None:
    real = padding_mask(torch.tensor([L, 3], device=probe.device), L)
    both = real.transpose(-2, -1) & real  # (B, 1, L, L): queries 3, 4 of 1
    passed = both if convention != "block" else ~both
    x = probe.leaf()
    recorder = _Recorder(neutralize=True)
    out, w, error = probe.run(x, passed, recorder=recorder)
    if error is not None:
        facts["crash"].append(f"{error} with a mask (B, 1, L, L)")
        return
    where = "the queries of sequence 1 with no allowed key (a (B, 1, L, L) mask)"
    if torch.isnan(out).any():
        facts["nan"] = f"NaN in the output for {where}"
        return
    rows = []  # what attention gave the fully masked queries 3 and 4
    for site in _find_sites(recorder.events):
        if site.output is not None:
            o, axis = site.output
            if o.size(0) == B and o.size(axis) == L and o.dim() >= 3:
                rows.append(o[1].movedim(axis % o.dim() - 1, 0)[3:].detach())
    if rows:
        if any(float(r.abs().max()) > 1e-6 for r in rows):
            facts["uniform"] = (
                f"attention gives nonzero outputs to {where}: their weights "
                "are not zero"
            )
        return
    if w is not None and w.dim() >= 3 and w.shape[-1] == L and w.size(0) == B:
        rows = w[1].detach().float().movedim(-2, 0)[3:]  # (2, ..., S)
        if torch.allclose(rows, torch.full_like(rows, 1 / L), atol=1e-4):
            facts["uniform"] = f"uniform weights 1/{L} for {where}"
        return
    dep = probe.dependence(out[1, 3:], x, 1)
    if dep is not None and _nonzero(dep) and "leak" not in facts:
        facts["uniform"] = (
            f"the output for {where} depends on the input tokens; with zero "
            "weights it would not"
        )


def _plain_facts(probe, facts) -> tuple:
    """Determinism, shapes, batch, dependence pattern, equivariance."""
    out0, _, error = probe.run(probe.x, neutralize=False)
    if error is not None:
        return error, None
    out1, _, _ = probe.run(probe.x, seed=1, neutralize=False)
    if out1 is not None and not torch.equal(out0, out1):
        gap = float((out0 - out1).detach().abs().nan_to_num(0).max())
        facts["dropout"] = (
            "in eval(), two forward passes on the same x "
            f"{shape_str(probe.x.shape)} differ by up to {gap:.3g}; the other "
            "checks ran with dropout switched off"
        )
    x = probe.leaf()
    recorder = _Recorder(neutralize=True)
    out, w, error = probe.run(x, recorder=recorder)
    if error is not None:
        return error, None
    dep_batch = probe.dependence(out[0], x, 0)
    if dep_batch is not None and _nonzero(dep_batch) != [0]:
        facts["batch"] = "the output of sequence 0 depends on sequence 1"
    dep = probe.token_matrix(out, x)
    if dep is not None and not dep.all():
        if torch.equal(dep, torch.eye(L, dtype=torch.bool, device=dep.device)):
            facts["isolated"] = "without a mask, no token sees another token"
        else:
            i, j = (~dep).nonzero()[0].tolist()
            facts["isolated"] = f"without a mask, output {i} ignores token {j}"
    issue = _weights_sum(w)
    if issue:
        facts["weights-sum"] = f"without a mask the weights' {issue}"
    perm = torch.tensor([3, 0, 4, 1, 2], device=probe.device)
    moved, _, _ = probe.run(probe.x[:, perm])
    if moved is not None and not torch.allclose(moved, out[:, perm], atol=1e-5):
        facts["equivariance"] = (
            "permuting the tokens does not permute the outputs the same way"
        )
    return None, (x, out, recorder)


def check_module(
    factory: Callable,
    *,
    mask_convention: str = "auto",
    seq_first: bool = False,
    device: torch.device | str | None = None,
    d_model: int = 12,
    num_heads: int = 3,
    name: str | None = None,
) -> Report:
    """Check a multi-head attention module by behaviour.

    ``factory(d_model, num_heads)`` builds an ``nn.Module`` whose
    ``forward(x, mask=None)`` takes ``x`` ``(B, L, D)`` (``(L, B, D)`` with
    ``seq_first``) and a bool mask ``(L, L)`` or ``(B, 1, L, L)``, and
    returns the output or ``(output, weights)``. In ``eval()`` it must be
    deterministic, keep the examples of a batch apart, be permutation
    equivariant, leak nothing from later tokens under a causal mask (checked
    by gradient), leave real tokens unchanged by padding, give a query with
    no allowed key zero weights, return weights whose rows sum to 1, and —
    where its softmax or ``F.scaled_dot_product_attention`` call can be seen
    — scale by 1/sqrt(head width), softmax over the keys, split and merge
    the heads per token and keep the heads independent.

    Args:
        factory: the module class (or any callable building one). It is
            called and run, so it must be code you trust.
        mask_convention: ``"allow"``, ``"block"`` or ``"auto"``, as for
            ``check_function``.
        seq_first: the module takes ``(L, B, D)``.
        device: where to run; defaults to cuda if available, else cpu.
        d_model: D of the module that is built.
        num_heads: H of the module that is built.
        name: what to call the module in the report.

    Returns:
        A ``Report``, root causes first, each with the symptoms it explains.

    Raises:
        UsageError: (a ``ValueError``) not an ``nn.Module`` class, a
            constructor or forward that cannot be called this way, or an
            unknown option or device.
    """
    device = _check_options(mask_convention, device)
    _check_module_signature(factory, d_model, num_heads)
    name = name or factory.__name__
    with torch.random.fork_rng(devices=_devices()):
        torch.manual_seed(0)
        try:
            model = factory(d_model, num_heads)
        except Exception as error:
            raise UsageError(
                f"{name}({d_model}, {num_heads}) raised {_describe_error(error)}"
            ) from None
    if not isinstance(model, nn.Module):
        raise UsageError(f"{name}({d_model}, {num_heads}) is not an nn.Module")
    model = model.to(device).eval()
    probe = _Probe(model, d_model, num_heads, seq_first, device)
    facts = {"crash": [], "notes": [], "checks": list(CHECKS)}
    error, traced = _plain_facts(probe, facts)
    shape = f"x {shape_str(probe.x.shape)} (B, L, D), {num_heads} heads"
    if error is not None:
        finding = Finding("shape", f"forward {error} on {shape}")
        notes = ["the other checks need an output"]
        return Report(name, [finding], None, CHECKS[:2], notes)
    _sites_facts(probe, facts, *traced)
    explicit = mask_convention != "auto"
    convention = "allow" if not explicit else mask_convention
    before = {k: list(v) if isinstance(v, list) else v for k, v in facts.items()}
    found = _causal_facts(probe, facts, convention, explicit)
    if found != convention:  # under auto: the code means the other convention
        facts, convention = before, found
        _causal_facts(probe, facts, convention, True)
    _padding_facts(probe, facts, convention)
    _fully_masked_facts(probe, facts, convention)
    findings, checks = _resolve(facts), facts["checks"]
    notes = list(facts["notes"])
    if not explicit and "ignored" not in facts:
        meaning = "may attend" if convention == "allow" else "blocked"
        notes.append(
            f"mask convention found from behaviour: {convention} (True = {meaning})"
        )
    return Report(
        target=name,
        findings=findings,
        convention=None if "ignored" in facts else convention,
        checks=checks,
        notes=notes,
        decided_by=f"checked on {shape}, by gradients and by its attention",
    )
