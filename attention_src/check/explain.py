"""Turning the variant that explains a function's outputs into findings:
one per mistake, with the inputs it was seen on, and the errors it explains
as symptoms; inputs that no variant explains become ``shape`` or
``unexplained`` findings."""

from __future__ import annotations

import math

import torch

from ..checks import shape_str
from .findings import Finding
from .variants import KEY_TRANSPOSES, _Combo, _matches

__all__ = []  # internal: see attention_src.check


def _scale_detail(cases, scales) -> str:
    i = min(scales)
    s, d = scales[i], cases[i].q.size(-1)
    x = 1.0 / s**2
    hint = ""
    if math.isclose(s, 1.0, rel_tol=1e-3):
        hint = " (no scale)"
    elif math.isclose(x, d * d, rel_tol=1e-2):
        hint = " (1/Dk instead of 1/sqrt(Dk))"
    elif math.isclose(s, math.sqrt(d), rel_tol=1e-2):
        hint = " (multiplied by sqrt(Dk) instead of divided)"
    elif math.isclose(x, cases[i].v.size(-1), rel_tol=1e-2):
        hint = " (the value width Dv instead of Dk)"
    return (
        f"the scores are multiplied by {s:.4g} = 1/sqrt({x:.4g}){hint}, "
        f"where F.scaled_dot_product_attention uses 1/sqrt({d}) = "
        f"{1 / math.sqrt(d):.4g}"
    )


def _what(axis: str, combo: _Combo, cases, scales) -> tuple[str, str]:
    """(finding id, what is wrong) for one deviating axis."""
    value = getattr(combo, axis)
    if axis == "kt":
        how = KEY_TRANSPOSES[value]
        return "wrong-transpose", f"the key is transposed as {how}"
    if axis == "scale":
        if value == "none":
            return "missing-scale", "the scores q·kᵀ are not scaled by 1/sqrt(Dk)"
        return "wrong-scale", _scale_detail(cases, scales)
    if axis == "dim":
        over = "the queries" if value == -2 else "dim 1 (the heads of 4-D input)"
        return "softmax-dim", f"the softmax runs over dim={value}, {over}"
    if axis == "mask":
        return {
            "inverted": ("mask-inverted", "the code treats True as blocked"),
            "ignored": ("mask-ignored", "the mask does not change the output"),
            "after": (
                "weights-not-normalized",
                "the mask is applied after the softmax, so the rows of the "
                "weights no longer sum to 1",
            ),
        }[value]
    if axis == "fill":
        if value == "nan":
            return "nan-fully-masked", "a fully masked row gets NaN"
        return (
            "fully-masked-uniform",
            "a fully masked row gets uniform weights (a finite fill such as "
            "-1e9), where F.scaled_dot_product_attention gives zeros",
        )
    if value == "top-left":
        return "causal-top-left", "is_causal=True builds a top-left triangle"
    return "mask-ignored", "is_causal=True does not change the output"


def _seen_on(cases, indices) -> str:
    first = cases[indices[0]].describe()
    more = len(indices) - 1
    return f"seen on {first}" + (f" and {more} more inputs" if more else "")


def _grouped(errors: dict[str, list[str]], verb: str = "raises") -> list[str]:
    """One line per distinct error: where it was raised, and how often."""
    lines = []
    for error, where in errors.items():
        more = f" and {len(where) - 1} more inputs" if len(where) > 1 else ""
        lines.append(f"{verb} {error} on {where[0]}{more}")
    return lines


def _explains_crash(case, combo, fixed, axis) -> bool:
    """Whether the error ``case`` raised goes away when ``axis`` is fixed."""
    if not isinstance(case.prediction(combo), Exception):
        return axis == "fill"  # -1e9 overflowing float16: the fill alone
    return not isinstance(case.prediction(fixed), Exception)


def _root_findings(analysis, convention_explicit) -> list[Finding]:
    cases, combo, findings = analysis.cases, analysis.combo, []
    for axis in combo.deviations():
        if axis == "mask" and combo.mask == "inverted" and not convention_explicit:
            continue  # under auto this is the convention, not a mistake
        fid, what = _what(axis, combo, cases, analysis.scales)
        fixed = combo.fixed(axis)
        shown, crashes = [], {}
        for i, case in enumerate(cases):
            status = analysis.status(i)
            if status == "match" and analysis.status(i, fixed) != "match":
                shown.append(i)
            elif status == "crash" and _explains_crash(case, combo, fixed, axis):
                crashes.setdefault(case.error, []).append(case.describe())
        if shown:
            message = f"{what}, {_seen_on(cases, shown)}"
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
    return _matches(rescaled, case.prediction(_Combo()), case.tol)


def _residual(cases, analysis, notes) -> list[Finding]:
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
                f"{rank}-D inputs were not checked: the function raised on "
                f"{case.describe()}: {case.error}"
            )
    shape_issues, crashes, wrong, unnormalized = [], {}, [], []
    for i, case in enumerate(cases):
        if i in explained or i in unsupported:
            continue
        if case.error is not None:
            crashes.setdefault(case.error, []).append(case.describe())
        elif case.out.shape != _expected_shape(case):
            shape_issues.append(
                f"returns {shape_str(case.out.shape)} for {case.describe()}, "
                f"expected {shape_str(_expected_shape(case))}"
            )
        elif case.out.dtype != case.q.dtype:
            shape_issues.append(f"returns {case.out.dtype} for {case.describe()}")
        elif case.out.device != case.q.device:
            shape_issues.append(
                f"returns a tensor on {case.out.device} for {case.describe()} on "
                f"{case.q.device}"
            )
        elif _normalized_matches(case):
            unnormalized.append(i)
        else:
            reference = case.prediction(_Combo())
            gap = (case.out.float() - reference).abs().nan_to_num(nan=math.inf)
            wrong.append(
                f"differs from F.scaled_dot_product_attention by up to "
                f"{float(gap.max()):.3g} on {case.describe()}"
            )
    findings = []
    if unnormalized:
        case = cases[unnormalized[0]]
        sums = case.ones.float()[case.ones.float().abs() > 0]
        findings.append(
            Finding(
                "weights-not-normalized",
                "the output divided by the output for v = 1 equals "
                "F.scaled_dot_product_attention: the weights have the right "
                f"proportions, but their rows sum to {float(sums.min()):.3g}.."
                f"{float(sums.max()):.3g}, not 1, {_seen_on(cases, unnormalized)}",
            )
        )
    shape_issues = _grouped(crashes) + shape_issues
    if shape_issues:
        message = shape_issues[0] + (
            f" (and {len(shape_issues) - 1} more)" if len(shape_issues) > 1 else ""
        )
        findings.append(Finding("shape", message, shape_issues[1:]))
    if wrong:
        more = [f"and on {len(wrong) - 4} more inputs"] if len(wrong) > 4 else []
        message = f"the output {wrong[0]}, and matches none of the known mistakes"
        findings.append(Finding("unexplained", message, wrong[1:4] + more))
    return findings


def _weight_findings(cases, analysis) -> list[Finding]:
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
                    "the returned weights' rows sum to "
                    f"{float(sums[rows].min()):.3g}..{float(sums[rows].max()):.3g}"
                    f", not 1, seen on {case.describe()}",
                )
            ]
    return []
