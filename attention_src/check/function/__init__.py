"""Check a function ``attention(q, k, v, mask=None)`` against
``F.scaled_dot_product_attention``, and name the mistake by matching known
wrong variants of the computation (see ``variants``)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..findings import Finding, Report
from ..lang import tr, use
from ..loader import (
    UsageError,
    accepts_is_causal,
    blocked_under_auto,
    check_function_signature,
    check_options,
)
from ..running import CALL_LIMIT_S, OUTPUT, Timeout
from .analysis import analyse
from .cases import (
    Case,
    half_supported,
    make_cases,
    observe,
    observe_ones,
    output_tensor,
    run_case,
)
from .explain import residual_findings, root_findings, weight_findings

__all__ = ["check_function"]


def _nondeterministic(fn, case: Case, convention: str, limit) -> Finding | None:
    first, error = run_case(fn, case, convention, 0, False, limit=limit)
    second, _ = run_case(fn, case, convention, 1, False, limit=limit)
    if error is not None:
        return None
    first, second = output_tensor(first), output_tensor(second)
    if not (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor)):
        return None
    if first.device != case.q.device or second.device != case.q.device:
        return None
    if first.shape == second.shape and torch.equal(first, second):
        return None
    gap = float((first.float() - second.float()).abs().nan_to_num(0).max())
    return Finding(
        "dropout-in-eval",
        tr(
            "two calls with the same inputs differ by up to {gap:.3g} ({case}); "
            "the other checks ran with dropout switched off",
            gap=gap,
            case=case.describe(),
        ),
    )


def check_function(
    fn: Callable,
    *,
    mask_convention: str = "auto",
    device: torch.device | str | None = None,
    name: str | None = None,
    call_limit: float = CALL_LIMIT_S,
    lang: str = "en",
) -> Report:
    """Check an attention function against ``F.scaled_dot_product_attention``.

    ``fn(q, k, v, mask=None)`` takes ``(..., L, Dk)``, ``(..., S, Dk)`` and
    ``(..., S, Dv)`` tensors and a bool mask ``(..., L, S)``, and returns the
    output ``(..., L, Dv)`` or ``(output, weights)``; an ``is_causal``
    parameter, if it has one, is checked too (bottom-right, as
    ``causal_mask``). It is called on inputs chosen so that each known
    mistake changes the output (L != S, Dk != Dv, all sizes equal, 2-D to
    4-D, padding, causal and random masks, fully masked rows, float16 where
    the device has it), and a wrong output is named by the known wrong
    variant of the computation that reproduces it.

    Args:
        fn: the function to check. It is called, so it must be code you
            trust.
        mask_convention: what ``True`` means in a mask: ``"allow"`` (may
            attend, as SDPA), ``"block"`` (blocked, as
            ``nn.MultiheadAttention``) or ``"auto"`` (found from behaviour).
        device: where to run; defaults to cuda if available, else cpu.
        name: what to call ``fn`` in the report.
        call_limit: seconds one call of ``fn`` may take.
        lang: the language of the report, ``"en"`` or ``"zh"``.

    Returns:
        A ``Report``: one ``Finding`` per root cause (empty if nothing is
        wrong) and the mask convention used.

    Raises:
        TypeError: ``fn`` is not callable.
        UsageError: (a ``ValueError``) a signature that cannot take
            ``(q, k, v, mask)``, a call that does not return within
            ``call_limit``, or an unknown option or device.
    """
    with use(lang):
        device = check_options(mask_convention, device)
        if not callable(fn):
            raise TypeError(
                tr("fn must be callable, got {type}", type=type(fn).__name__)
            )
        check_function_signature(fn)
        printed = OUTPUT.lines
        try:
            report = _check(fn, mask_convention, device, name, call_limit)
        except Timeout as error:
            raise UsageError(str(error)) from None
        if OUTPUT.lines > printed:
            report.notes.append(
                tr(
                    "it printed {n} lines while it was checked (captured, not "
                    "shown)",
                    n=OUTPUT.lines - printed,
                )
            )
        return report


def _check(fn, mask_convention, device, name, limit) -> Report:
    cases = make_cases(
        device,
        with_causal=accepts_is_causal(fn),
        with_half=half_supported(device),
    )
    explicit = mask_convention != "auto"
    convention = "allow" if mask_convention == "auto" else mask_convention
    notes = []
    dropout = _nondeterministic(fn, cases[0], convention, limit)
    observe(fn, cases, convention, limit)
    analysis = analyse(cases)
    found = convention
    if not explicit:
        if analysis.combo.mask == "inverted":
            convention = found = "block"
            observe(fn, cases, convention, limit)
            analysis = analyse(cases)
        found = None if analysis.combo.mask == "ignored" else convention
        if found is not None:
            meaning = tr("may attend") if found == "allow" else tr("blocked")
            notes.append(
                tr(
                    "mask convention found from behaviour: {found} (True = "
                    "{meaning})",
                    found=found,
                    meaning=meaning,
                )
            )
        if found == "block":
            notes.append(blocked_under_auto())
    if not half_supported(device):
        notes.append(
            tr("float16 was not checked: not supported on {device}", device=device)
        )
    findings = [dropout] if dropout else []
    findings += root_findings(analysis, explicit, convention)
    findings += weight_findings(cases, analysis)
    observe_ones(fn, cases, analysis, convention, limit)
    findings += residual_findings(cases, analysis, notes)
    explained = len(analysis.matched)
    decided = tr(
        "the output equals F.scaled_dot_product_attention on {n} of {total} inputs",
        n=explained,
        total=len(cases),
    )
    if analysis.combo.deviations():
        decided = tr(
            "the output equals attention with {variant} on {n} of {total} inputs",
            variant=analysis.combo.describe(),
            n=explained,
            total=len(cases),
        )
    return Report(
        target=name or getattr(fn, "__name__", "function"),
        findings=findings,
        convention=found,
        checks=[case.describe() for case in cases],
        notes=notes,
        decided_by=decided,
    )
