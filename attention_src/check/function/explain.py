"""Turning the variant that explains a function's outputs into findings:
one per mistake, with the inputs it was seen on, and the errors it explains
as symptoms; inputs that no variant explains become ``shape`` or
``unexplained`` findings."""

from __future__ import annotations

import math

import torch

from ...validate import shape_str
from ..findings import Finding
from ..lang import tr
from .variants import KEY_TRANSPOSES, Combo, matches

__all__ = ["root_findings", "weight_findings", "residual_findings"]


def _scale_detail(cases, scales) -> str:
    i = min(scales)
    s, d = scales[i], cases[i].q.size(-1)
    x = 1.0 / s**2
    hint = ""
    if math.isclose(s, 1.0, rel_tol=1e-3):
        hint = tr(" (no scale)")
    elif math.isclose(x, d * d, rel_tol=1e-2):
        hint = tr(" (1/Dk instead of 1/sqrt(Dk))")
    elif math.isclose(s, math.sqrt(d), rel_tol=1e-2):
        hint = tr(" (multiplied by sqrt(Dk) instead of divided)")
    elif math.isclose(x, cases[i].v.size(-1), rel_tol=1e-2):
        hint = tr(" (the value width Dv instead of Dk)")
    return tr(
        "the scores are multiplied by {s:.4g} = 1/sqrt({x:.4g}){hint}, where "
        "F.scaled_dot_product_attention uses 1/sqrt({d}) = {right:.4g}",
        s=s,
        x=x,
        hint=hint,
        d=d,
        right=1 / math.sqrt(d),
    )


def _what(axis: str, combo: Combo, cases, scales, convention) -> tuple[str, str]:
    """(finding id, what is wrong) for one deviating axis; ``convention`` is
    the one the masks were given in."""
    value = getattr(combo, axis)
    if axis == "kt":
        how = tr(KEY_TRANSPOSES[value])
        return "wrong-transpose", tr("the key is transposed as {how}", how=how)
    if axis == "scale":
        if value == "none":
            return "missing-scale", tr(
                "the scores q·kᵀ are not scaled by 1/sqrt(Dk)"
            )
        return "wrong-scale", _scale_detail(cases, scales)
    if axis == "dim":
        if value == -2:
            over = tr("the queries")
        else:
            over = tr("dim 1 (the heads of 4-D input)")
        return "softmax-dim", tr(
            "the softmax runs over dim={dim}, {over}", dim=value, over=over
        )
    if axis == "mask":
        return {
            "inverted": (
                "mask-inverted",
                tr("the code treats True as may attend")
                if convention == "block"
                else tr("the code treats True as blocked"),
            ),
            "ignored": ("mask-ignored", tr("the mask does not change the output")),
            "after": (
                "weights-not-normalized",
                tr(
                    "the mask is applied after the softmax, so the rows of the "
                    "weights no longer sum to 1"
                ),
            ),
        }[value]
    if axis == "fill":
        if value == "nan":
            return "nan-fully-masked", tr("a fully masked row gets NaN")
        return "fully-masked-uniform", tr(
            "a fully masked row gets uniform weights (a finite fill such as "
            "-1e9), where F.scaled_dot_product_attention gives zeros"
        )
    if value == "top-left":
        return "causal-top-left", tr("is_causal=True builds a top-left triangle")
    return "mask-ignored", tr("is_causal=True does not change the output")


def _seen_on(cases, indices) -> str:
    first = cases[indices[0]].describe()
    more = len(indices) - 1
    return tr("seen on {first}", first=first) + _more(more)


def _more(n: int) -> str:
    return tr(" and {n} more inputs", n=n) if n else ""


def _grouped(errors: dict[str, list[str]]) -> list[str]:
    """One line per distinct error: where it was raised, and how often."""
    return [
        tr(
            "raises {error} on {where}{more}",
            error=error,
            where=where[0],
            more=_more(len(where) - 1),
        )
        for error, where in errors.items()
    ]


def _explains_crash(case, combo, fixed, axis) -> bool:
    """Whether the error ``case`` raised goes away when ``axis`` is fixed."""
    if not isinstance(case.prediction(combo), Exception):
        return axis == "fill"  # -1e9 overflowing float16: the fill alone
    return not isinstance(case.prediction(fixed), Exception)


def root_findings(analysis, convention_explicit, convention) -> list[Finding]:
    cases, combo, findings = analysis.cases, analysis.combo, []
    for axis in combo.deviations():
        if axis == "mask" and combo.mask == "inverted" and not convention_explicit:
            continue  # under auto this is the convention, not a mistake
        fid, what = _what(axis, combo, cases, analysis.scales, convention)
        fixed = combo.fixed(axis)
        shown, crashes = [], {}
        for i, case in enumerate(cases):
            status = analysis.status(i)
            if status == "match" and analysis.status(i, fixed) != "match":
                shown.append(i)
            elif status == "crash" and _explains_crash(case, combo, fixed, axis):
                crashes.setdefault(case.error, []).append(case.describe())
        if shown:
            message = tr("{what}, {seen}", what=what, seen=_seen_on(cases, shown))
            findings.append(Finding(fid, message, _grouped(crashes)))
    return findings


def _expected_shape(case) -> torch.Size:
    batch = torch.broadcast_shapes(case.q.shape[:-2], case.k.shape[:-2])
    return torch.Size((*batch, case.q.size(-2), case.v.size(-1)))


def _normalized_matches(case) -> bool:
    """Whether the output, each row divided by its sum of weights (the
    output for v = 1), is the right one: weights of the right proportions
    that do not sum to 1."""
    if case.ones is None or case.out.dtype != case.q.dtype:
        return False
    if case.out.device != case.q.device:
        return False
    ones, out = case.ones.float(), case.out.float()
    if torch.allclose(ones, torch.ones_like(ones), atol=case.tol):
        return False  # they do sum to 1: something else is wrong
    rescaled = torch.where(ones != 0, out / ones, 0.0)
    return matches(rescaled, case.prediction(Combo()), case.tol)


def residual_findings(cases, analysis, notes) -> list[Finding]:
    """Findings for the inputs that no variant explains."""
    explained = {
        i for i in range(len(cases)) if analysis.status(i) in ("match", "crash")
    }
    unsupported = set()
    for rank in {c.q.dim() for c in cases if c.optional}:
        same = [i for i, c in enumerate(cases) if c.optional and c.q.dim() == rank]
        if all(cases[i].error is not None for i in same) and not (
            set(same) <= explained
        ):
            unsupported |= set(same)
            case = cases[same[0]]
            notes.append(
                tr(
                    "{rank}-D inputs were not checked: the function raised on "
                    "{case}: {error}",
                    rank=rank,
                    case=case.describe(),
                    error=case.error,
                )
            )
    shape_issues, crashes, wrong, unnormalized = [], {}, [], []
    for i, case in enumerate(cases):
        if i in explained or i in unsupported:
            continue
        if case.error is not None:
            crashes.setdefault(case.error, []).append(case.describe())
        elif case.out.shape != _expected_shape(case):
            shape_issues.append(
                tr(
                    "returns {got} for {case}, expected {expected}",
                    got=shape_str(case.out.shape),
                    case=case.describe(),
                    expected=shape_str(_expected_shape(case)),
                )
            )
        elif case.out.dtype != case.q.dtype:
            shape_issues.append(
                tr(
                    "returns {dtype} for {case}",
                    dtype=case.out.dtype,
                    case=case.describe(),
                )
            )
        elif case.out.device != case.q.device:
            shape_issues.append(
                tr(
                    "returns a tensor on {got} for {case} on {device}",
                    got=case.out.device,
                    case=case.describe(),
                    device=case.q.device,
                )
            )
        elif _normalized_matches(case):
            unnormalized.append(i)
        else:
            reference = case.prediction(Combo())
            gap = (case.out.float() - reference).abs().nan_to_num(nan=math.inf)
            wrong.append(
                tr(
                    "differs from F.scaled_dot_product_attention by up to "
                    "{gap:.3g} on {case}",
                    gap=float(gap.max()),
                    case=case.describe(),
                )
            )
    findings = []
    if unnormalized:
        case = cases[unnormalized[0]]
        sums = case.ones.float()[case.ones.float().abs() > 0]
        findings.append(
            Finding(
                "weights-not-normalized",
                tr(
                    "the output divided by the output for v = 1 equals "
                    "F.scaled_dot_product_attention: the weights have the right "
                    "proportions, but their rows sum to {low:.3g}..{high:.3g}, "
                    "not 1, {seen}",
                    low=float(sums.min()),
                    high=float(sums.max()),
                    seen=_seen_on(cases, unnormalized),
                ),
            )
        )
    shape_issues = _grouped(crashes) + shape_issues
    if shape_issues:
        n = len(shape_issues) - 1
        message = shape_issues[0] + (tr(" (and {n} more)", n=n) if n else "")
        findings.append(Finding("shape", message, shape_issues[1:]))
    if wrong:
        more = (
            [tr("and on {n} more inputs", n=len(wrong) - 4)]
            if len(wrong) > 4
            else []
        )
        message = tr(
            "the output {differs}, and matches none of the known mistakes",
            differs=wrong[0],
        )
        findings.append(Finding("unexplained", message, wrong[1:4] + more))
    return findings


def weight_findings(cases, analysis) -> list[Finding]:
    if analysis.combo.mask == "after":
        return []
    for i in analysis.matched:
        case = cases[i]
        w = case.weights
        if w is None or w.shape[-1] != case.k.size(-2):
            continue
        sums = w.float().sum(dim=-1)
        allow = case.allow
        if allow is None:
            rows = torch.ones_like(sums, dtype=torch.bool)
        else:
            rows = allow.any(dim=-1).expand(sums.shape)
        if not torch.allclose(sums[rows], torch.ones_like(sums[rows]), atol=1e-3):
            return [
                Finding(
                    "weights-not-normalized",
                    tr(
                        "the returned weights' rows sum to {low:.3g}..{high:.3g}, "
                        "not 1, seen on {case}",
                        low=float(sums[rows].min()),
                        high=float(sums[rows].max()),
                        case=case.describe(),
                    ),
                )
            ]
    return []
