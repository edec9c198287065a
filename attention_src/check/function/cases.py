"""The inputs of the function check, and calling the function on them: the
sizes are all different, so that an axis mixed up with another cannot fit, and
the masks are chosen so that each known mistake changes the output."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ...masks import causal_mask, padding_mask
from ...validate import shape_str
from ..lang import join, tr
from ..running import call_quietly
from .variants import Combo, matches, predict, relevant_choices

__all__ = [
    "B", "H", "L", "S", "DK", "DV", "TOL", "Case", "same_kind", "half_supported",
    "make_cases", "run_case", "output_tensor", "observe", "observe_ones",
]  # fmt: skip

B, H, L, S, DK, DV = 2, 3, 5, 7, 8, 6  # all different: a mix-up cannot fit
TOL = {torch.float32: 1e-4, torch.float16: 2e-2}


@dataclass
class Case:
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

    def _key(self, combo: Combo, scale: float | None) -> tuple:
        key = relevant_choices(
            combo, masked=self.allow is not None, causal=self.is_causal
        )
        return (*key, scale if combo.scale == "fit" else None)

    def prediction(self, combo: Combo, scale: float | None = None):
        """The variant's output for this input, or the error it raises."""
        key = self._key(combo, scale)
        if key not in self.cache:
            try:
                self.cache[key] = predict(
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

    def status(self, combo: Combo, scale: float | None = None) -> str:
        """'match', 'crash' (both raise) or 'miss'; cached."""
        key = ("status", *self._key(combo, scale), combo.fill)
        if key not in self.cache:
            self.cache[key] = self._status(combo, scale)
        return self.cache[key]

    def _status(self, combo: Combo, scale: float | None) -> str:
        predicted = self.prediction(combo, scale)
        raised = isinstance(predicted, Exception)
        if self.error is not None:
            half = self.q.dtype == torch.float16
            overflow = half and "overflow" in self.error
            if raised or (overflow and combo.fill == "uniform"):
                return "crash"
            return "miss"
        if raised or not same_kind(self.out, self.q):
            return "miss"
        if combo.scale == "fit" and scale is None:
            return "miss"
        return "match" if matches(self.out, predicted, self.tol) else "miss"


def same_kind(out: torch.Tensor, q: torch.Tensor) -> bool:
    """Whether ``out`` has ``q``'s dtype and device (else it cannot be
    compared with a prediction, and is a ``shape`` finding)."""
    return out.dtype == q.dtype and out.device == q.device


def half_supported(device: torch.device) -> bool:
    """Whether float16 attention runs on ``device``."""
    try:
        x = torch.ones(1, 2, 2, dtype=torch.float16, device=device)
        torch.nn.functional.scaled_dot_product_attention(x, x, x)
        return bool(torch.isfinite(x @ x).all())
    except RuntimeError:
        return False


def make_cases(device, *, with_causal: bool, with_half: bool) -> list[Case]:
    """The inputs, chosen so that each mistake changes the output."""
    g = torch.Generator(device=device).manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=g, device=device)

    cases = [
        Case("4-D", r(B, H, L, DK), r(B, H, S, DK), r(B, H, S, DV)),
        Case("equal sizes", r(4, 4, 4, 4), r(4, 4, 4, 4), r(4, 4, 4, 4)),
        Case("3-D", r(B, L, DK), r(B, S, DK), r(B, S, DV), optional=True),
        Case("2-D", r(L, DK), r(S, DK), r(S, DV), optional=True),
    ]
    q, k, v = r(B, H, L, DK), r(B, H, S, DK), r(B, H, S, DV)
    lengths = torch.tensor([S, 4], device=device)
    pad = padding_mask(lengths, S)  # (B, 1, 1, S)
    cases.append(Case("padding", q, k, v, pad))
    cases.append(Case("causal", q, k, v, causal_mask(L, S, device=device)))
    rand = torch.rand(B, H, L, S, generator=g, device=device) < 0.5
    rand[..., 0], rand[..., -1] = True, False  # no row all True or all False
    cases.append(Case("random", q, k, v, rand))
    real_q = padding_mask(torch.tensor([L, 3], device=device), L)
    both = real_q.transpose(-2, -1) & pad  # (B, 1, L, S)
    cases.append(Case("fully masked rows", q, k, v, both))
    if with_half:
        half = [t.half() for t in (q, k, v)]
        cases.append(Case("padding", *half, pad))
    if with_causal:
        qs, ks, vs = r(B, H, L, DK), r(B, H, L, DK), r(B, H, L, DV)
        cases.append(Case("causal", qs, ks, vs, is_causal=True))
        cases.append(Case("causal", q, k, v, is_causal=True))
    return cases


def run_case(
    fn,
    case: Case,
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
    return call_quietly(
        fn, args, kwargs, seed=seed, neutralize=neutralize, what=what, limit=limit
    )


def output_tensor(result):
    """The output of a call: the result, or the first of a tuple."""
    if isinstance(result, (tuple, list)) and result:
        return result[0]
    return result


def observe(fn, cases: list[Case], convention: str, limit=None) -> None:
    """Call ``fn`` on every case (dropout switched off) and store what it
    returned."""
    for case in cases:
        case.out = case.weights = case.error = case.ones = None
        case.cache = {k: v for k, v in case.cache.items() if k[0] != "status"}
        result, error = run_case(fn, case, convention, 0, True, limit=limit)
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


def observe_ones(fn, cases, analysis, convention: str, limit) -> None:
    """For each input whose output no variant explains, what ``fn``
    returns when every value is 1: the row sums of its weights, if it is
    attention (see ``explain._normalized_matches``)."""
    for i, case in enumerate(cases):
        if case.out is None or analysis.status(i) != "miss":
            continue
        v = torch.ones_like(case.v)
        ones, _ = run_case(fn, case, convention, 0, True, v=v, limit=limit)
        ones = output_tensor(ones)
        if isinstance(ones, torch.Tensor) and ones.shape == case.out.shape:
            case.ones = ones.detach() if ones.device == case.out.device else None
