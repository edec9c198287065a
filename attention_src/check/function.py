"""Check a function ``attention(q, k, v, mask=None)`` against
``F.scaled_dot_product_attention``, and name the mistake by matching known
wrong variants of the computation (see ``variants``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ..checks import shape_str
from ..masks import causal_mask, padding_mask
from .explain import _residual, _root_findings, _weight_findings
from .findings import Finding, Report
from .lang import join, tr, use
from .loader import (
    UsageError,
    _accepts_is_causal,
    _check_function_signature,
    _check_options,
)
from .running import _OUTPUT, CALL_LIMIT_S, _call_quietly, _Timeout
from .variants import (
    _all_combos,
    _Combo,
    _fit_scale,
    _matches,
    _predict,
    _relevant,
)

__all__ = ["check_function"]

B, H, L, S, DK, DV = 2, 3, 5, 7, 8, 6  # all different: a mix-up cannot fit
TOL = {torch.float32: 1e-4, torch.float16: 2e-2}


@dataclass
class _Case:
    """One input: tensors, the intended mask (True = may attend) and what
    the function returned for it."""

    name: str
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    allow: torch.Tensor | None = None
    is_causal: bool = False
    optional: bool = False  # a rank the function need not support
    out: torch.Tensor | None = None
    ones: torch.Tensor | None = None  # the output for v = 1: the row sums
    weights: torch.Tensor | None = None
    error: str | None = None
    cache: dict = field(default_factory=dict)

    @property
    def tol(self) -> float:
        return TOL[self.q.dtype]

    def describe(self) -> str:
        tensors = zip("qkv", (self.q, self.k, self.v), strict=True)
        parts = [f"{name} {shape_str(t.shape)}" for name, t in tensors]
        if self.allow is not None:
            mask = shape_str(self.allow.shape)
            parts.append(tr("{name} mask {shape}", name=tr(self.name), shape=mask))
        if self.is_causal:
            parts.append("is_causal=True")
        if self.q.dtype != torch.float32:
            parts.append(str(self.q.dtype).removeprefix("torch."))
        return join(parts)

    def _key(self, combo: _Combo, scale: float | None) -> tuple:
        key = _relevant(combo, masked=self.allow is not None, causal=self.is_causal)
        return (*key, scale if combo.scale == "fit" else None)

    def prediction(self, combo: _Combo, scale: float | None = None):
        """The variant's output for this input, or the error it raises."""
        key = self._key(combo, scale)
        if key not in self.cache:
            try:
                self.cache[key] = _predict(
                    combo,
                    self.q,
                    self.k,
                    self.v,
                    self.allow,
                    self.is_causal,
                    scale=1.0 if scale is None else scale,
                )
            except (RuntimeError, IndexError) as error:
                self.cache[key] = error
        return self.cache[key]

    def status(self, combo: _Combo, scale: float | None = None) -> str:
        """'match', 'crash' (both raise) or 'miss'; cached."""
        key = ("status", *self._key(combo, scale), combo.fill)
        if key not in self.cache:
            self.cache[key] = self._status(combo, scale)
        return self.cache[key]

    def _status(self, combo: _Combo, scale: float | None) -> str:
        predicted = self.prediction(combo, scale)
        raised = isinstance(predicted, Exception)
        if self.error is not None:
            half = self.q.dtype == torch.float16
            overflow = half and "overflow" in self.error
            if raised or (overflow and combo.fill == "uniform"):
                return "crash"
            return "miss"
        if raised or not _same_kind(self.out, self.q):
            return "miss"
        if combo.scale == "fit" and scale is None:
            return "miss"
        return "match" if _matches(self.out, predicted, self.tol) else "miss"


def _same_kind(out: torch.Tensor, q: torch.Tensor) -> bool:
    """Whether ``out`` has ``q``'s dtype and device (else it cannot be
    compared with a prediction, and is a ``shape`` finding)."""
    return out.dtype == q.dtype and out.device == q.device


def _half_supported(device: torch.device) -> bool:
    """Whether float16 attention runs on ``device``."""
    try:
        x = torch.ones(1, 2, 2, dtype=torch.float16, device=device)
        torch.nn.functional.scaled_dot_product_attention(x, x, x)
        return bool(torch.isfinite(x @ x).all())
    except RuntimeError:
        return False


def _make_cases(device, *, with_causal: bool, with_half: bool) -> list[_Case]:
    """The inputs, chosen so that each mistake changes the output."""
    g = torch.Generator(device=device).manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=g, device=device)

    cases = [
        _Case("4-D", r(B, H, L, DK), r(B, H, S, DK), r(B, H, S, DV)),
        _Case("equal sizes", r(4, 4, 4, 4), r(4, 4, 4, 4), r(4, 4, 4, 4)),
        _Case("3-D", r(B, L, DK), r(B, S, DK), r(B, S, DV), optional=True),
        _Case("2-D", r(L, DK), r(S, DK), r(S, DV), optional=True),
    ]
    q, k, v = r(B, H, L, DK), r(B, H, S, DK), r(B, H, S, DV)
    lengths = torch.tensor([S, 4], device=device)
    pad = padding_mask(lengths, S)  # (B, 1, 1, S)
    cases.append(_Case("padding", q, k, v, pad))
    cases.append(_Case("causal", q, k, v, causal_mask(L, S, device=device)))
    rand = torch.rand(B, H, L, S, generator=g, device=device) < 0.5
    rand[..., 0], rand[..., -1] = True, False  # no row all True or all False
    cases.append(_Case("random", q, k, v, rand))
    real_q = padding_mask(torch.tensor([L, 3], device=device), L)
    both = real_q.transpose(-2, -1) & pad  # (B, 1, L, S)
    cases.append(_Case("fully masked rows", q, k, v, both))
    if with_half:
        half = [t.half() for t in (q, k, v)]
        cases.append(_Case("padding", *half, pad))
    if with_causal:
        qs, ks, vs = r(B, H, L, DK), r(B, H, L, DK), r(B, H, L, DV)
        cases.append(_Case("causal", qs, ks, vs, is_causal=True))
        cases.append(_Case("causal", q, k, v, is_causal=True))
    return cases


def _run(
    fn,
    case: _Case,
    convention: str,
    seed: int,
    neutralize: bool,
    *,
    v=None,
    limit=None,
):
    kwargs = {"is_causal": True} if case.is_causal else {}
    args = [case.q.clone(), case.k.clone(), case.v.clone() if v is None else v]
    if case.allow is not None:
        args.append(case.allow if convention != "block" else ~case.allow)
    name = getattr(fn, "__name__", "the function")  # a name in code: not translated
    what = f"{name}({case.describe()})"
    return _call_quietly(
        fn, args, kwargs, seed=seed, neutralize=neutralize, what=what, limit=limit
    )


def _tensor(result):
    """The output of a call: the result, or the first of a tuple."""
    if isinstance(result, (tuple, list)) and result:
        return result[0]
    return result


def _observe(fn, cases: list[_Case], convention: str, limit=None) -> None:
    """Call ``fn`` on every case (dropout switched off) and store what it
    returned."""
    for case in cases:
        case.out = case.weights = case.error = case.ones = None
        case.cache = {k: v for k, v in case.cache.items() if k[0] != "status"}
        result, error = _run(fn, case, convention, 0, True, limit=limit)
        if error is not None:
            case.error = error
            continue
        if isinstance(result, (tuple, list)) and result:
            out, *rest = result
            if rest and isinstance(rest[0], torch.Tensor):
                case.weights = rest[0].detach()
        else:
            out = result
        if not isinstance(out, torch.Tensor):
            case.error = tr(
                "returned {type}, expected a tensor or (output, weights)",
                type=type(out).__name__,
            )
            continue
        case.out = out.detach()


def _observe_ones(fn, cases, analysis, convention: str, limit) -> None:
    """For each input whose output no variant explains, what ``fn``
    returns when every value is 1: the row sums of its weights, if it is
    attention (see ``explain._normalized_matches``)."""
    for i, case in enumerate(cases):
        if case.out is None or analysis.status(i) != "miss":
            continue
        v = torch.ones_like(case.v)
        ones, _ = _run(fn, case, convention, 0, True, v=v, limit=limit)
        ones = _tensor(ones)
        if isinstance(ones, torch.Tensor) and ones.shape == case.out.shape:
            case.ones = ones.detach() if ones.device == case.out.device else None


@dataclass
class _Analysis:
    """The variant that explains the outputs, and per case how it did."""

    cases: list[_Case]
    combo: _Combo
    scales: dict[int, float] = field(default_factory=dict)  # scale == "fit"

    def status(self, i: int, combo: _Combo | None = None) -> str:
        combo = self.combo if combo is None else combo
        return self.cases[i].status(combo, self.scales.get(i))

    @property
    def matched(self) -> list[int]:
        return [i for i in range(len(self.cases)) if self.status(i) == "match"]


def _best_combo(cases: list[_Case]) -> _Combo:
    """The simplest variant that explains the most outputs."""

    def score(combo):
        statuses = [c.status(combo) for c in cases]
        n_dev = len(combo.deviations())
        return statuses.count("match"), statuses.count("crash"), -n_dev

    best = max(_all_combos(), key=score)  # the first of equals wins
    for axis in best.deviations():  # a deviation needs an output as evidence
        fixed = best.fixed(axis)
        evidence = any(
            c.status(best) == "match" and c.status(fixed) != "match" for c in cases
        )
        if not evidence:
            best = fixed
    return best


def _analyse(cases: list[_Case]) -> _Analysis:
    analysis = _Analysis(cases, _best_combo(cases))
    matched = len(analysis.matched)
    if matched == sum(c.out is not None for c in cases):
        return analysis
    for base in dict.fromkeys([analysis.combo, _Combo()]):  # another scale?
        fitted = _Combo(**{**vars(base), "scale": "fit"})
        scales = {}
        for i, case in enumerate(cases):
            if case.out is not None and _same_kind(case.out, case.q):
                inputs = (case.q, case.k, case.v, case.allow, case.is_causal)
                s = _fit_scale(fitted, case.out, inputs, case.tol)
                if s is None and not scales:
                    break  # a scale would show on every input: not this one
                if s is not None:
                    scales[i] = s
        if len(scales) > matched:
            return _Analysis(cases, fitted, scales)
    return analysis


def _nondeterministic(fn, case: _Case, convention: str, limit) -> Finding | None:
    first, error = _run(fn, case, convention, 0, False, limit=limit)
    second, _ = _run(fn, case, convention, 1, False, limit=limit)
    if error is not None:
        return None
    first, second = _tensor(first), _tensor(second)
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
        device = _check_options(mask_convention, device)
        if not callable(fn):
            raise TypeError(
                tr("fn must be callable, got {type}", type=type(fn).__name__)
            )
        _check_function_signature(fn)
        printed = _OUTPUT.lines
        try:
            report = _check(fn, mask_convention, device, name, call_limit)
        except _Timeout as error:
            raise UsageError(str(error)) from None
        if _OUTPUT.lines > printed:
            report.notes.append(
                tr(
                    "it printed {n} lines while it was checked (captured, not "
                    "shown)",
                    n=_OUTPUT.lines - printed,
                )
            )
        return report


def _check(fn, mask_convention, device, name, limit) -> Report:
    cases = _make_cases(
        device,
        with_causal=_accepts_is_causal(fn),
        with_half=_half_supported(device),
    )
    explicit = mask_convention != "auto"
    convention = "allow" if mask_convention == "auto" else mask_convention
    notes = []
    dropout = _nondeterministic(fn, cases[0], convention, limit)
    _observe(fn, cases, convention, limit)
    analysis = _analyse(cases)
    found = convention
    if not explicit:
        if analysis.combo.mask == "inverted":
            convention = found = "block"
            _observe(fn, cases, convention, limit)
            analysis = _analyse(cases)
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
    if not _half_supported(device):
        notes.append(
            tr("float16 was not checked: not supported on {device}", device=device)
        )
    findings = [dropout] if dropout else []
    findings += _root_findings(analysis, explicit)
    findings += _weight_findings(cases, analysis)
    _observe_ones(fn, cases, analysis, convention, limit)
    findings += _residual(cases, analysis, notes)
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
