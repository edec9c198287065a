"""Check a multi-head attention module ``MyMultiHead(d_model, num_heads)`` by
behaviour: its weights cannot be matched to PyTorch's by name, so the checks
are properties any correct implementation has, measured by gradients where a
dependence is the question, plus what its attention computations show.

The parts: ``calling`` (how forward is called), ``masks`` (which masks it
takes), ``probe`` (running it, measuring by gradient), ``behaviour`` (what
its outputs depend on without masks), ``masking`` (the checks with masks),
``trace`` and ``trace_facts`` (its attention computations, found in a
recorded forward pass, and what they show); ``facts`` holds what is observed,
and ``resolve`` turns it into findings: one mistake breaks several
properties, so the root cause is reported and the rest listed under it."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ...validate import shape_str
from ..findings import Finding, Report
from ..lang import join, tagged, tr, use
from ..loader import (
    UsageError,
    blocked_under_auto,
    check_module_signature,
    check_options,
)
from ..running import (
    CALL_LIMIT_S,
    OUTPUT,
    Timeout,
    describe_error,
    devices,
    guarded,
)
from .behaviour import cross_facts, plain_facts
from .facts import CHECKS, PLAIN, Facts
from .masking import causal_facts, fully_masked_facts, padding_facts
from .masks import LAYOUTS, find_masks
from .probe import Probe
from .resolve import resolve
from .trace_facts import attention_facts

__all__ = ["check_module"]


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
        device = check_options(mask_convention, device)
        check_module_signature(factory, d_model, num_heads)
        name = name or getattr(factory, "__name__", "module")
        printed = OUTPUT.lines
        try:
            return _check(factory, name, mask_convention, seq_first, device,
                          d_model, num_heads, call_limit, printed)  # fmt: skip
        except Timeout as error:
            raise UsageError(str(error)) from None


# facts of the mistakes that make a mask of the right layout raise
_SHAPE_FACTS = ("batch", "attend-B", "split", "attend-H", "merge", "keyT")

# the mask encodings tried, in order, under each --mask-convention
ENCODINGS_TRIED = {
    "auto": ["allow", "block", "float"],
    "allow": ["allow", "float"],
    "block": ["block", "float"],
}


def _build(factory, name, d_model, num_heads, device, limit):
    """``factory(d_model, num_heads)`` in ``eval()`` on ``device``."""
    call = f"{name}({d_model}, {num_heads})"
    with torch.random.fork_rng(devices=devices()):
        torch.manual_seed(0)
        try:
            with guarded(call, limit):
                model = factory(d_model, num_heads)
        except Exception as error:
            message = tr(
                "{call} raised {error}", call=call, error=describe_error(error)
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
    probe = Probe(
        model, d_model, num_heads, seq_first, device, name=name, limit=limit
    )
    facts = Facts()
    error, traced = plain_facts(probe, facts)
    given = shape_str(probe.handed(probe.x).shape)  # x as the module takes it
    if seq_first:
        shape = tr("x {shape} (L, B, D), {H} heads", shape=given, H=num_heads)
    else:
        shape = tr("x {shape} (B, L, D), {H} heads", shape=given, H=num_heads)
    if error is not None:
        call = probe.call.describe()
        finding = Finding(
            "shape",
            tr("{call} {error} on {shape}", call=call, error=error, shape=shape),
        )
        notes = [tr("the other checks need an output")]
        return Report(
            name, [finding], None, [tr(CHECKS[c]) for c in PLAIN[:2]], notes
        )
    attention_facts(probe, facts, *traced)
    if probe.call.context or probe.call.inputs == 3:
        cross_facts(probe, facts)
    explicit = mask_convention != "auto"
    convention = None
    if probe.call.mask is not None:
        probe.masks, probe.runs = find_masks(
            probe, ENCODINGS_TRIED[mask_convention]
        )
    # a mask argument that raises with every layout offered: a layout of its
    # own, unless a mistake already seen explains the raising (a wrong head
    # split, the batch mixed); checked without masks, never called wrong for
    # refusing the layouts offered
    probe.own_layout = (
        probe.call.mask is not None
        and not probe.runs
        and not any(k in facts.seen for k in _SHAPE_FACTS)
    )
    if probe.own_layout:
        facts.drop("causal-mask", "mask-layouts")
    elif probe.call.mask is not None:
        convention = probe.masks.encoding
        snapshot = facts.copy()
        found = causal_facts(
            probe, facts, convention, explicit or probe.masks.found
        )
        if found != convention:  # under auto: the code means the other convention
            facts, convention = snapshot, found
            causal_facts(probe, facts, convention, True)
        padding_facts(probe, facts, convention)
        fully_masked_facts(probe, facts, convention)
    else:
        facts.drop("causal-mask", "mask-layouts")
    findings, checks = resolve(facts), facts.sentences()
    notes = [tagged(lambda: _how_called(probe, facts, convention)), *facts.notes]
    if not explicit and convention == "block" and "ignored" not in facts.seen:
        notes.insert(1, blocked_under_auto())
    if OUTPUT.lines > printed:
        notes.append(
            tr(
                "it printed {n} lines while it was checked (captured, not shown)",
                n=OUTPUT.lines - printed,
            )
        )
    return Report(
        target=name,
        findings=findings,
        convention=None if "ignored" in facts.seen else convention,
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
    own = "leak" in facts.seen or "inverted" in facts.seen  # a pattern of its own
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
    elif probe.masks.found and "ignored" not in facts.seen:
        masks = probe.masks
        masks.encoding = convention
        parts.append(tr("{masks} (found from behaviour)", masks=masks.describe()))
    elif "ignored" not in facts.seen:
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
