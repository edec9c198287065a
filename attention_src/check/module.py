"""Check a multi-head attention module ``MyMultiHead(d_model, num_heads)`` by
behaviour: its weights cannot be matched to PyTorch's by name, so the checks
are properties any correct implementation has, measured by gradients where a
dependence is the question, plus what its attention sites show (see
``sites``). One mistake breaks several properties; ``resolve`` reports the
root cause and lists the rest under it."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..checks import shape_str
from ..masks import causal_mask, padding_mask
from .findings import Finding, Report
from .loader import UsageError, _check_module_signature, _check_options
from .probe import LAYOUTS, B, L, _band, _find_masks, _Probe
from .resolve import _resolve
from .running import (
    _OUTPUT,
    CALL_LIMIT_S,
    _describe_error,
    _devices,
    _guarded,
    _Recorder,
    _Timeout,
)
from .sites import _find_sites, _nonzero, _sites_facts

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


def _drop_checks(facts, *words) -> None:
    """Take the checks that mention any of ``words`` off the list."""
    facts["checks"] = [c for c in facts["checks"] if not any(w in c for w in words)]


def _causal_facts(probe, facts, convention, explicit) -> str:
    """Run the causal probes (for a module with causal attention built in, a
    mask allowing tokens i-1 and i); return the convention found."""
    layout = probe.masks.layout(True, probe.runs)
    if layout is None:
        what = "a mask on earlier tokens" if probe.causal else "a causal mask"
        facts["notes"].append(
            f"{what} was not checked: the module takes {probe.masks.describe()} "
            "only, which cannot say it"
        )
        _drop_checks(facts, "causal mask", "(B, 1, L, L)")
        return convention
    if probe.causal:
        allow, what = _band(probe.device)[0, 0], "a mask allowing tokens i-1 and i"
    else:
        allow, what = causal_mask(L, device=probe.device), "a causal mask"
    form = (layout, convention)
    x = probe.leaf()
    out, w, error = probe.run(x, allow, form=form)
    if error is not None:
        facts["crash"].append(f"{error} with {what} {LAYOUTS[layout]}")
        return convention
    dep = probe.token_matrix(out, x)
    skip = (layout, "BS", "lengths")
    others = [lay for lay in probe.masks.layouts if lay not in skip]
    if not probe.masks.found:
        others = ["B1LS"] if layout == "LS" else []
    for other in others:
        out4, _, error4 = probe.run(probe.x, allow, form=(other, convention))
        if error4 is not None:
            facts["crash"].append(f"{error4} with a mask {LAYOUTS[other]}")
        elif not torch.allclose(out4, out.detach(), atol=1e-5, equal_nan=True):
            facts["mask-shapes"] = (
                f"a {LAYOUTS[other]} mask gives other outputs than the same "
                f"mask {LAYOUTS[layout]}"
            )
    if dep is None:
        return convention
    base, _, _ = probe.run(probe.x)
    off = ~torch.eye(L, dtype=torch.bool, device=probe.device)
    future = dep & ~allow
    seen_past = (dep & allow & off).any()  # not the diagonal: its query
    if base is not None and torch.allclose(out.detach(), base, atol=1e-6):
        facts["ignored"] = f"{what} does not change the output"
    elif future[:-1].any() and not seen_past:
        if not explicit and convention != "float":  # it means the other one
            return "block" if convention == "allow" else "allow"
        meaning = "blocked" if convention == "allow" else "allowed"
        facts["inverted"] = (
            f"with {what} each query sees only the tokens it may not: the code "
            f"treats True as {meaning}"
        )
    elif future.any():
        i, j = future.nonzero()[0].tolist()
        facts["leak"] = f"under {what} output {i} depends on token {j}"
    issue = _weights_sum(w, allow)
    if issue:
        facts["weights-sum"] = f"under {what} the weights' {issue}"
    return convention


def _padding_facts(probe, facts, convention) -> None:
    lengths = torch.tensor([L, 3], device=probe.device)
    real = padding_mask(lengths, L)  # (B, 1, 1, L)
    keys = real.expand(B, 1, L, L)
    layout = probe.masks.layout(False, probe.runs)
    if layout is None:
        facts["notes"].append(
            "padding was not checked: the module takes (L, S) masks only, the "
            "same for every example"
        )
        _drop_checks(facts, "padding")
        return
    out, _, error = probe.run(probe.x, keys, form=(layout, convention))
    if error is not None:
        facts["crash"].append(f"{error} with a padding mask {LAYOUTS[layout]}")
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
    layout = probe.masks.layout(False, probe.runs)
    if convention == "float":  # what such a row gets is the caller's fill
        facts["notes"].append(
            "a query with no allowed key was not checked: with a mask added to "
            "the scores, what it gets depends on the fill the caller picks "
            "(-inf gives NaN, torch.finfo(dtype).min uniform weights)"
        )
        layout = None
    if layout in (None, "BS", "lengths"):
        _drop_checks(facts, "no allowed key")
    if layout is None:
        return  # (L, S) masks only: noted under padding
    if layout in ("BS", "lengths"):
        facts["notes"].append(
            "a query with no allowed key was not checked: the module takes "
            f"{LAYOUTS[layout]} masks only, which cannot say it"
        )
        return
    real = padding_mask(torch.tensor([L, 3], device=probe.device), L)
    both = real.transpose(-2, -1) & real  # (B, 1, L, L): queries 3, 4 of 1
    x = probe.leaf()
    recorder = _Recorder(neutralize=True)
    out, w, error = probe.run(x, both, recorder=recorder, form=(layout, convention))
    if error is not None:
        facts["crash"].append(f"{error} with a mask {LAYOUTS[layout]}")
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


def _pattern_facts(probe, facts, dep) -> None:
    """Which tokens each output depends on without a mask: all of them
    (bidirectional), exactly the earlier ones (causal built in), or — with
    no mask argument to explain it — something in between, a leak."""
    tril = torch.ones(L, L, dtype=torch.bool, device=dep.device).tril()
    if torch.equal(dep, tril):
        probe.causal = True
        facts["checks"] = [
            c.replace("the others", "the earlier ones") for c in facts["checks"]
        ]
        facts["checks"][4] = "a prefix run alone gives the same outputs"
        return
    later = dep & ~tril
    if later.any() and probe.call.mask is None:
        i, j = later.nonzero()[0].tolist()
        k, m = (~dep & ~tril).nonzero()[0].tolist()
        facts["leak"] = (
            f"with no mask argument, output {i} depends on the later token {j}, "
            f"but output {k} not on the later token {m}: neither causal nor "
            "bidirectional"
        )
    elif torch.equal(dep, torch.eye(L, dtype=torch.bool, device=dep.device)):
        facts["isolated"] = "without a mask, no token sees another token"
    else:
        i, j = (~dep).nonzero()[0].tolist()
        facts["isolated"] = f"without a mask, output {i} ignores token {j}"


def _cross_facts(probe, facts) -> None:
    """With a second sequence (``context=``, or k and v apart from q) of
    another length S: the output keeps x's shape, depends on the context,
    and each output on its own query token only."""
    g = torch.Generator(device=probe.device).manual_seed(1)
    context = torch.randn(B, L + 2, probe.D, generator=g, device=probe.device)
    context.requires_grad_(True)
    x = probe.leaf()
    out, _, error = probe.run(x, context=context)
    shape = f"a context {shape_str(context.shape)} (B, S, D)"
    if error is not None:  # built for self-attention only, as it may be
        facts["notes"].append(
            f"cross-attention was not checked: it {error} with {shape}"
        )
        return
    facts["checks"].append("with a context, each output uses its own query only")
    dep = probe.token_matrix(out, x)
    eye = torch.eye(L, dtype=torch.bool, device=probe.device)
    if dep is not None and not torch.equal(dep | eye, eye):
        i, j = (dep & ~eye).nonzero()[0].tolist()
        facts["cross"] = f"with {shape}, output {i} depends on query token {j}"
    used = probe.dependence(out, context, 1)
    if used is not None and not _nonzero(used):
        facts["cross"] = f"with {shape}, the output does not depend on it"


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
        _pattern_facts(probe, facts, dep)
    issue = _weights_sum(w)
    if issue:
        facts["weights-sum"] = f"without a mask the weights' {issue}"
    if "leak" in facts:  # a mask of its own, neither causal nor bidirectional
        return None, (x, out, recorder)
    if probe.causal:
        n = 3  # a causal module gives a prefix the outputs it gives it inside
        short, _, _ = probe.run(probe.x[:, :n])
        if short is not None and not torch.allclose(short, out[:, :n], atol=1e-5):
            facts["equivariance"] = (
                f"the first {n} tokens run alone give other outputs than the "
                "same tokens at the start of the whole sequence"
            )
        return None, (x, out, recorder)
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
    call_limit: float = CALL_LIMIT_S,
) -> Report:
    """Check a multi-head attention module by behaviour.

    ``factory(d_model, num_heads)`` (a class, or a function) builds an
    ``nn.Module`` that takes ``x`` ``(B, L, D)`` (``(L, B, D)`` with
    ``seq_first``) and returns the output or ``(output, weights)``. How it
    is called is found by trying: ``forward(x)``, ``forward(x, mask)`` (the
    mask second or by a name such as ``attn_mask``), ``forward(q, k, v[,
    mask])``; a ``context=`` keyword is also called with a second sequence.
    Its masks are handed over in the first layout — ``(L, S)``,
    ``(B, 1, L, S)``, ``(B, L, S)``, key padding ``(B, S)`` — and encoding —
    bool either way, or additive float — under which no output depends on a
    blocked token. Without a mask argument it must be causal or
    bidirectional (anything between is ``future-leak``). In ``eval()`` it
    must be deterministic, keep the examples of a batch apart, be
    permutation equivariant (a causal one: give a prefix its own outputs),
    leak nothing from later tokens under a causal mask (checked by
    gradient), leave real tokens unchanged by padding, give a query with no
    allowed key zero weights, return weights whose rows sum to 1, and —
    where its softmax or ``F.scaled_dot_product_attention`` call can be seen
    — scale by 1/sqrt(head width), softmax over the keys, split and merge
    the heads per token and keep the heads independent. The report's first
    note says what was found ("called as forward(x); causal built in; no
    mask argument").

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
        call_limit: seconds one call of the reader's code may take.

    Returns:
        A ``Report``, root causes first, each with the symptoms it explains.

    Raises:
        UsageError: (a ``ValueError``) a class that is not an ``nn.Module``,
            a factory that cannot be called as ``factory(d_model,
            num_heads)`` or does not return a module, a forward that no
            calling convention fits, a call that does not return within
            ``call_limit`` seconds, or an unknown option or device.
    """
    device = _check_options(mask_convention, device)
    _check_module_signature(factory, d_model, num_heads)
    name = name or getattr(factory, "__name__", "module")
    printed = _OUTPUT.lines
    try:
        return _check(factory, name, mask_convention, seq_first, device, d_model,
                      num_heads, call_limit, printed)  # fmt: skip
    except _Timeout as error:
        raise UsageError(str(error)) from None


ENCODINGS = {
    "auto": ["allow", "block", "float"],
    "allow": ["allow", "float"],
    "block": ["block", "float"],
}


def _build(factory, name, d_model, num_heads, device, limit):
    """``factory(d_model, num_heads)`` in ``eval()`` on ``device``."""
    call = f"{name}({d_model}, {num_heads})"
    with torch.random.fork_rng(devices=_devices()):
        torch.manual_seed(0)
        try:
            with _guarded(call, limit):
                model = factory(d_model, num_heads)
        except Exception as error:
            raise UsageError(f"{call} raised {_describe_error(error)}") from None
    if not isinstance(model, nn.Module):
        raise UsageError(
            f"{call} returned a {type(model).__name__}, not an nn.Module; check a "
            "function without --module (check_function)"
        )
    return model.to(device).eval()


def _check(factory, name, mask_convention, seq_first, device, d_model, num_heads,
           limit, printed) -> Report:  # fmt: skip
    model = _build(factory, name, d_model, num_heads, device, limit)
    probe = _Probe(
        model, d_model, num_heads, seq_first, device, name=name, limit=limit
    )
    facts = {"crash": [], "notes": [], "checks": list(CHECKS)}
    error, traced = _plain_facts(probe, facts)
    shape = f"x {shape_str(probe.x.shape)} (B, L, D), {num_heads} heads"
    if error is not None:
        finding = Finding("shape", f"{probe.call.describe()} {error} on {shape}")
        notes = ["the other checks need an output"]
        return Report(name, [finding], None, CHECKS[:2], notes)
    _sites_facts(probe, facts, *traced)
    if probe.call.context or probe.call.inputs == 3:
        _cross_facts(probe, facts)
    explicit = mask_convention != "auto"
    convention = None
    if probe.call.mask is not None:
        probe.masks, probe.runs = _find_masks(probe, ENCODINGS[mask_convention])
        convention = probe.masks.encoding
        snapshot = {
            k: list(v) if isinstance(v, list) else v for k, v in facts.items()
        }
        found = _causal_facts(
            probe, facts, convention, explicit or probe.masks.found
        )
        if found != convention:  # under auto: the code means the other convention
            facts, convention = snapshot, found
            _causal_facts(probe, facts, convention, True)
        _padding_facts(probe, facts, convention)
        _fully_masked_facts(probe, facts, convention)
    else:
        facts["checks"] = [c for c in facts["checks"] if "mask" not in c]
    findings, checks = _resolve(facts), facts["checks"]
    notes = [_how_called(probe, facts, convention)] + facts["notes"]
    if _OUTPUT.lines > printed:
        notes.append(
            f"it printed {_OUTPUT.lines - printed} lines while it was checked "
            "(captured, not shown)"
        )
    return Report(
        target=name,
        findings=findings,
        convention=None if "ignored" in facts else convention,
        checks=checks,
        notes=notes,
        decided_by=f"checked on {shape}, by gradients and by its attention",
    )


def _how_called(probe, facts, convention) -> str:
    """'called as forward(x); causal built in; no mask argument', or with
    the masks it was found to take."""
    call = probe.call
    kind = "causal built in" if probe.causal else "bidirectional"
    if call.mask is None and "leak" in facts and not probe.causal:
        kind = "neither causal nor bidirectional"
    parts = [f"called as {call.describe()}", kind]
    if call.context or call.inputs == 3:
        word = f"{call.context}=" if call.inputs == 1 else "k and v"
        parts.append(f"cross-attention through {word}")
    if call.mask is None:
        parts.append("no mask argument")
    elif probe.masks.found and "ignored" not in facts:
        masks = probe.masks
        masks.encoding = convention
        parts.append(f"{masks.describe()} (found from behaviour)")
    elif "ignored" not in facts:
        meaning = {"allow": "may attend", "block": "blocked"}.get(convention)
        parts.append(
            f"no mask layout was respected; checked with bool masks, True = "
            f"{meaning}"
        )
    return "; ".join(parts)
