"""Check a multi-head attention module ``MyMultiHead(d_model, num_heads)`` by
behaviour: its weights cannot be matched to PyTorch's by name, so the checks
are properties any correct implementation has, measured by gradients where a
dependence is the question, plus what its attention sites show (see
``sites``). One mistake breaks several properties; ``resolve`` reports the
root cause and lists the rest under it; ``masking`` has the checks with
masks."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..checks import shape_str
from .findings import Finding, Report
from .lang import join, tagged, tr, use
from .loader import UsageError, _check_module_signature, _check_options
from .masking import (
    _causal_facts,
    _fully_masked_facts,
    _padding_facts,
    _weights_sum,
)
from .probe import LAYOUTS, B, L, _find_masks, _Probe
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
from .site_facts import _nonzero, _sites_facts

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


def _inverted_fact(probe, facts, dep, blank) -> bool:
    """A causal triangle built in and read the wrong way round: each output
    depends on its own token and the later ones only, and the last query,
    which has no later key, sees no key at all — NaN (a ``-inf`` fill) or
    uniform over every token (a finite fill). Found from what the outputs
    depend on, whatever the fill."""
    eye = torch.eye(L, dtype=torch.bool, device=dep.device)
    later = torch.ones(L, L, dtype=torch.bool, device=dep.device).triu(1)
    # a query with one allowed key gives that key's value, whatever the
    # query: its own token may or may not show
    if (dep & ~(later | eye))[:-1].any() or (later & ~dep)[:-1].any():
        return False
    if blank is not None and blank[:, -1].all() and not blank[:, :-1].any():
        how = tr("it is NaN")
    elif dep[-1].all() and (blank is None or not blank.any()):
        how = tr("it depends on every token")
    else:
        return False
    facts["inverted"] = tr(
        "with no mask argument, each output depends on its own token and the "
        "later ones only, and output {i}, which has no later token, sees no "
        "key ({how}): the built-in causal triangle allows the keys it should "
        "block and blocks those it should allow",
        i=L - 1,
        how=how,
    )
    return True


def _perturbed(probe, out) -> tuple[torch.Tensor, bool]:
    """``(dep (L, L), mixed)`` by perturbation, for outputs with NaN in
    them (where gradients are NaN everywhere): output i of example 0 moves
    when its token j is changed; ``mixed``: example 1 moves too."""
    dep = torch.zeros(L, L, dtype=torch.bool, device=probe.device)
    mixed = False
    base = out.detach()
    for j in range(L):
        x = probe.x.clone()
        x[0, j] += 1.0
        moved, _, error = probe.run(x)
        if error is not None or moved is None:
            continue
        same = torch.isclose(moved, base, rtol=0, atol=1e-6, equal_nan=True)
        changed = ~same.all(dim=-1)  # (B, L)
        dep[:, j] = changed[0]
        mixed = mixed or bool(changed[1].any())
    return dep, mixed


def _pattern_facts(probe, facts, dep, blank=None) -> None:
    """Which tokens each output depends on without a mask: all of them
    (bidirectional), exactly the earlier ones (causal built in), the later
    ones (a built-in triangle inverted), or — with no mask argument to
    explain it — something in between, a leak."""
    tril = torch.ones(L, L, dtype=torch.bool, device=dep.device).tril()
    if probe.call.mask is None and _inverted_fact(probe, facts, dep, blank):
        return
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
        unseen = (~dep & ~tril).nonzero()
        if not len(unseen):  # every later token seen, some earlier one not
            k, m = (~dep).nonzero()[0].tolist()
            facts["leak"] = tr(
                "with no mask argument, output {i} depends on the later token "
                "{j}, but output {k} not on the earlier token {m}: neither "
                "causal nor bidirectional",
                i=i,
                j=j,
                k=k,
                m=m,
            )
            return
        k, m = unseen[0].tolist()
        facts["leak"] = tr(
            "with no mask argument, output {i} depends on the later token {j}, "
            "but output {k} not on the later token {m}: neither causal nor "
            "bidirectional",
            i=i,
            j=j,
            k=k,
            m=m,
        )
    elif torch.equal(dep, torch.eye(L, dtype=torch.bool, device=dep.device)):
        facts["isolated"] = tr("without a mask, no token sees another token")
    else:
        i, j = (~dep).nonzero()[0].tolist()
        facts["isolated"] = tr(
            "without a mask, output {i} ignores token {j}", i=i, j=j
        )


def _cross_facts(probe, facts) -> None:
    """With a second sequence (``context=``, or k and v apart from q) of
    another length S: the output keeps x's shape, depends on the context,
    and each output on its own query token only."""
    g = torch.Generator(device=probe.device).manual_seed(1)
    context = torch.randn(B, L + 2, probe.D, generator=g, device=probe.device)
    context.requires_grad_(True)
    x = probe.leaf()
    out, _, error = probe.run(x, context=context)
    shape = tr("a context {shape} (B, S, D)", shape=shape_str(context.shape))
    if error is not None:  # built for self-attention only, as it may be
        facts["notes"].append(
            tr(
                "cross-attention was not checked: it {error} with {shape}",
                error=error,
                shape=shape,
            )
        )
        return
    facts["checks"].append("with a context, each output uses its own query only")
    dep = probe.token_matrix(out, x)
    eye = torch.eye(L, dtype=torch.bool, device=probe.device)
    if dep is not None and not torch.equal(dep | eye, eye):
        i, j = (dep & ~eye).nonzero()[0].tolist()
        facts["cross"] = tr(
            "with {shape}, output {i} depends on query token {j}",
            shape=shape,
            i=i,
            j=j,
        )
    used = probe.dependence(out, context, 1)
    if used is not None and not _nonzero(used):
        facts["cross"] = tr(
            "with {shape}, the output does not depend on it", shape=shape
        )


def _plain_facts(probe, facts) -> tuple:
    """Determinism, shapes, batch, dependence pattern, equivariance."""
    out0, _, error = probe.run(probe.x, neutralize=False)
    if error is not None:
        return error, None
    out1, _, _ = probe.run(probe.x, seed=1, neutralize=False)
    same = out1 is not None and torch.allclose(
        out0, out1, rtol=0, atol=0, equal_nan=True
    )  # NaN where NaN is the same output
    if out1 is not None and not same:
        gap = float((out0 - out1).detach().abs().nan_to_num(0).max())
        facts["dropout"] = tr(
            "in eval(), two forward passes on the same x {shape} differ by up to "
            "{gap:.3g}; the other checks ran with dropout switched off",
            shape=shape_str(probe.x.shape),
            gap=gap,
        )
    x = probe.leaf()
    recorder = _Recorder(neutralize=True)
    out, w, error = probe.run(x, recorder=recorder)
    if error is not None:
        return error, None
    blank = out.detach().isnan().any(dim=-1)  # (B, L): outputs that are NaN
    if blank.any():  # gradients through a NaN are NaN: perturb the tokens
        dep, mixed = _perturbed(probe, out)
    else:
        dep_batch = probe.dependence(out[0], x, 0)
        mixed = dep_batch is not None and _nonzero(dep_batch) != [0]
        dep = probe.token_matrix(out, x)
        blank = None
    if mixed:
        facts["batch"] = tr("the output of sequence 0 depends on sequence 1")
    if dep is not None and not dep.all():
        _pattern_facts(probe, facts, dep, blank)
    issue = _weights_sum(w)
    if issue:
        facts["weights-sum"] = tr(
            "without a mask the weights' {issue}", issue=issue
        )
    if "leak" in facts or "inverted" in facts:  # a mask of its own
        return None, (x, out, recorder)
    if probe.causal:
        n = 3  # a causal module gives a prefix the outputs it gives it inside
        short, _, _ = probe.run(probe.x[:, :n])
        if short is not None and not torch.allclose(short, out[:, :n], atol=1e-5):
            facts["equivariance"] = tr(
                "the first {n} tokens run alone give other outputs than the "
                "same tokens at the start of the whole sequence",
                n=n,
            )
        return None, (x, out, recorder)
    perm = torch.tensor([3, 0, 4, 1, 2], device=probe.device)
    moved, _, _ = probe.run(probe.x[:, perm])
    if moved is not None and not torch.allclose(moved, out[:, perm], atol=1e-5):
        facts["equivariance"] = tr(
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
    lang: str = "en",
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
        lang: the language of the report, ``"en"`` or ``"zh"``.

    Returns:
        A ``Report``, root causes first, each with the symptoms it explains.

    Raises:
        UsageError: (a ``ValueError``) a class that is not an ``nn.Module``,
            a factory that cannot be called as ``factory(d_model,
            num_heads)`` or does not return a module, a forward that no
            calling convention fits, a call that does not return within
            ``call_limit`` seconds, or an unknown option or device.
    """
    with use(lang):
        device = _check_options(mask_convention, device)
        _check_module_signature(factory, d_model, num_heads)
        name = name or getattr(factory, "__name__", "module")
        printed = _OUTPUT.lines
        try:
            return _check(factory, name, mask_convention, seq_first, device,
                          d_model, num_heads, call_limit, printed)  # fmt: skip
        except _Timeout as error:
            raise UsageError(str(error)) from None


# facts of the mistakes that make a mask of the right layout raise
_SHAPE_FACTS = ("batch", "attend-B", "split", "attend-H", "merge", "keyT")

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
            message = tr(
                "{call} raised {error}", call=call, error=_describe_error(error)
            )
            raise UsageError(message) from None
    if not isinstance(model, nn.Module):
        raise UsageError(
            tr(
                "{call} returned a {type}, not an nn.Module; check a function "
                "without --module (check_function)",
                call=call,
                type=type(model).__name__,
            )
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
    shape = tr(
        "x {shape} (B, L, D), {H} heads",
        shape=shape_str(probe.x.shape),
        H=num_heads,
    )
    if error is not None:
        call = probe.call.describe()
        finding = Finding(
            "shape",
            tr("{call} {error} on {shape}", call=call, error=error, shape=shape),
        )
        notes = [tr("the other checks need an output")]
        return Report(name, [finding], None, [tr(c) for c in CHECKS[:2]], notes)
    _sites_facts(probe, facts, *traced)
    if probe.call.context or probe.call.inputs == 3:
        _cross_facts(probe, facts)
    explicit = mask_convention != "auto"
    convention = None
    if probe.call.mask is not None:
        probe.masks, probe.runs = _find_masks(probe, ENCODINGS[mask_convention])
    # a mask argument that raises with every layout offered: a layout of its
    # own, unless a mistake already seen explains the raising (a wrong head
    # split, the batch mixed); checked without masks, never called wrong for
    # refusing the layouts offered
    probe.own_layout = (
        probe.call.mask is not None
        and not probe.runs
        and not any(k in facts for k in _SHAPE_FACTS)
    )
    if probe.own_layout:
        facts["checks"] = [c for c in facts["checks"] if "mask" not in c]
    elif probe.call.mask is not None:
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
    findings, checks = _resolve(facts), [tr(c) for c in facts["checks"]]
    notes = [tagged(lambda: _how_called(probe, facts, convention))] + facts["notes"]
    if _OUTPUT.lines > printed:
        notes.append(
            tr(
                "it printed {n} lines while it was checked (captured, not shown)",
                n=_OUTPUT.lines - printed,
            )
        )
    return Report(
        target=name,
        findings=findings,
        convention=None if "ignored" in facts else convention,
        checks=checks,
        notes=notes,
        decided_by=tr(
            "checked on {shape}, by gradients and by its attention", shape=shape
        ),
    )


def _how_called(probe, facts, convention) -> str:
    """'called as forward(x); causal built in; no mask argument', or with
    the masks it was found to take (in Chinese, with the English after it)."""
    call = probe.call
    kind = tr("causal built in") if probe.causal else tr("bidirectional")
    own = "leak" in facts or "inverted" in facts  # a pattern of its own
    if call.mask is None and own and not probe.causal:
        kind = tr("neither causal nor bidirectional")
    parts = [tr("called as {call}", call=call.describe()), kind]
    if call.context or call.inputs == 3:
        word = f"{call.context}=" if call.inputs == 1 else tr("k and v")
        parts.append(tr("cross-attention through {word}", word=word))
    if call.mask is None:
        parts.append(tr("no mask argument"))
    elif probe.own_layout:
        parts.append(
            tr(
                "its {mask} argument raised with every mask layout offered "
                "({layouts}): a layout of its own, so it was checked without "
                "masks",
                mask=call.mask or "mask",
                layouts=join(tr(LAYOUTS[lay]) for lay in LAYOUTS),
            )
        )
    elif probe.masks.found and "ignored" not in facts:
        masks = probe.masks
        masks.encoding = convention
        parts.append(tr("{masks} (found from behaviour)", masks=masks.describe()))
    elif "ignored" not in facts:
        meaning = {"allow": tr("may attend"), "block": tr("blocked")}.get(
            convention
        )
        parts.append(
            tr(
                "no mask layout was respected; checked with bool masks, True = "
                "{meaning}",
                meaning=meaning,
            )
        )
    return join(parts, "; ")
