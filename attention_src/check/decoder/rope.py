"""Check a rotary position embedding ``rope(x, positions)`` and name the
mistake: python -m attention_src.check my_rope.py:rope --rope

RoPE is linear in ``x`` at each position, so one call on the unit vectors
reads off the matrix ``R_p`` it applies at every position ``p``. From those
matrices the checker reads, without knowing the code:

- the pairs: which feature turns with which. Both layouts are correct:
  ``(i, i + Dh/2)`` ("rotate half": GPT-NeoX, transformers' Llama) and
  ``(2i, 2i + 1)`` (interleaved: the RoFormer paper, Meta's Llama);
- the angle of every feature at every position, hence which positions were
  used (the ones given, or ``0 .. L-1`` whatever was given) and which
  features share an angle (the angles of one layout on the pairs of the
  other turn the two features of a pair by different angles);
- the frequencies ``w_i``, and the base they follow, ``w_i = b ** (-2i/Dh)``.

A last call on random ``(B, H, L, Dh)`` inputs checks that the explanation
reproduces the output.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ...validate import shape_str
from ..findings import Finding, Report
from ..lang import tr, use
from ..loader import UsageError, binds, check_options, signature
from ..running import Timeout, call_quietly
from .rotation import (
    TOL,
    angles_of,
    explain_angles,
    fit_base,
    layout_of,
    reference_rope,
)

__all__ = ["check_rope", "PAIRINGS"]

DH, L = 16, 7
POSITIONS = (3, 1, 0, 9, 40, 2, 17)  # not 0 .. L-1; position 1 is at row 1 only


def _fmt(b: float) -> str:
    """``b`` to 3 significant digits: 499999.7 -> '500000'."""
    return (
        f"{round(b, 2 - math.floor(math.log10(b))):.0f}" if b >= 100 else f"{b:.3g}"
    )


def _call(fn, x, positions, limit=None):
    """``(output, None)`` or ``(None, 'what went wrong')``."""
    what = f"rope(x {shape_str(x.shape)}, positions)"
    out, error = call_quietly(
        fn, [x.clone(), positions.clone()], what=what, limit=limit
    )
    if error is not None:
        return None, tr("raises {error}", error=error)
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        out = out[0]
    if not isinstance(out, torch.Tensor):
        return None, tr(
            "returned {type}, expected a tensor", type=type(out).__name__
        )
    if out.shape != x.shape:
        return None, tr(
            "returned shape {got} for x {shape}",
            got=shape_str(out.shape),
            shape=shape_str(x.shape),
        )
    if out.dtype != x.dtype or out.device != x.device:
        return None, tr(
            "returned {dtype} on {device} for x {x_dtype} on {x_device}",
            dtype=out.dtype,
            device=out.device,
            x_dtype=x.dtype,
            x_device=x.device,
        )
    return out.detach(), None


def check_rope(
    fn: Callable,
    *,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    name: str | None = None,
    call_limit: float | None = None,
    lang: str = "en",
) -> Report:
    """Check ``fn(x, positions)``, rotary position embedding, against RoPE.

    ``x`` is ``(..., L, Dh)`` (the checker passes 4-D ``(B, H, L, Dh)``)
    and ``positions`` an integer ``(L,)``, not ``0 .. L-1``. Either pairing
    layout is correct; the report says which it found. Findings:
    ``rope-exponent``, ``rope-base``, ``rope-positions-ignored``,
    ``rope-layout-mix``, ``shape`` and ``unexplained``.

    Args:
        fn: the function; it is called, so it must be code you trust.
        base: the base the frequencies should follow (10000 in the paper).
        device: where to run; cuda if available, else cpu.
        name: what to call ``fn`` in the report.
        call_limit: seconds one call may take (default 10).
        lang: the language of the report, ``"en"`` or ``"zh"``.

    Raises:
        TypeError: ``fn`` is not callable.
        UsageError: (a ``ValueError``) ``fn`` cannot take ``(x, positions)``,
            or a bad ``base`` or device.
    """
    with use(lang):
        return _check_rope(fn, base, device, name, call_limit)


def _check_rope(fn, base, device, name, call_limit) -> Report:
    device = check_options("auto", device)
    if not callable(fn):
        raise TypeError(
            tr("fn must be callable, got {type}", type=type(fn).__name__)
        )
    if isinstance(base, bool) or not isinstance(base, (int, float)) or base <= 1:
        raise UsageError(tr("base must be a number > 1, got {base!r}", base=base))
    sig = signature(fn)
    label = name or getattr(fn, "__name__", "rope")
    if sig is not None and not binds(sig, 1, 2):
        raise UsageError(
            tr(
                "{label}{sig} cannot be called as {label}(x, positions)",
                label=label,
                sig=sig,
            )
        )
    positions = torch.tensor(POSITIONS, device=device)
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(2, 3, L, DH, generator=g, device=device)
    checks = [
        tr(
            "x {shape}, positions {positions}",
            shape=shape_str(x.shape),
            positions=list(POSITIONS),
        )
    ]
    basis = torch.eye(DH, device=device)[:, None, None, :].expand(DH, 1, L, DH)
    checks.append(
        tr(
            "x {shape}: every unit vector at every row",
            shape=shape_str(basis.shape),
        )
    )
    try:
        rows, error = _call(fn, basis.contiguous(), positions, call_limit)
        out, error2 = _call(fn, x, positions, call_limit)
    except Timeout as timeout:
        raise UsageError(str(timeout)) from None
    report = Report(label, [], None, checks)
    if error or error2:
        report.findings.append(Finding("shape", f"{label} {error or error2}"))
        return report
    mats = rows[:, 0].permute(1, 2, 0)  # (L, out feature, in feature)
    found = _diagnose(mats, positions, base, DH)
    if isinstance(found, Finding):
        report.findings.append(found)
        return report
    pairs, angle_layout, freq, used, fitted = found
    if angle_layout == pairs:  # a true rotation: check it reproduces x
        expected = reference_rope(
            x, positions if used == "given" else torch.arange(L, device=device),
            base=fitted or base, layout=pairs,
        )  # fmt: skip
        if fitted and not _matches(out, expected):
            report.findings.append(
                Finding(
                    "unexplained",
                    tr(
                        "each unit vector turns as RoPE does, but the output "
                        "for x {shape} is not the sum of those turns (it mixes "
                        "positions, heads or examples)",
                        shape=shape_str(x.shape),
                    ),
                )
            )
            return report
    report.notes.append(tr("pairs found: {layout}", layout=tr(PAIRINGS[pairs])))
    report.findings += _findings(pairs, angle_layout, freq, used, fitted, base)
    report.decided_by = tr(
        "the rotation {label} applies at each of {L} positions, read from its "
        "output for the {n} unit vectors",
        label=label,
        L=L,
        n=DH,
    )
    return report


PAIRINGS = {
    "half": "(i, i + Dh/2), rotate-half (GPT-NeoX, transformers' Llama)",
    "interleaved": "(2i, 2i + 1), interleaved (RoFormer, Meta's Llama)",
}


_PAIRS = {"half": "(i, i + Dh/2)", "interleaved": "(2i, 2i + 1)"}


def _matches(a, b) -> bool:
    return bool(torch.allclose(a, b, atol=TOL, rtol=TOL))


def _diagnose(mats, positions, base, dh):
    pairs = layout_of(mats)
    if pairs is None:
        return Finding(
            "unexplained",
            tr(
                "the output is not a rotation of pairs of features (i, i + Dh/2) "
                "or (2i, 2i + 1) of x"
            ),
        )
    angles, norms = angles_of(mats, pairs)
    if (norms - 1).abs().max() > 10 * TOL:
        return Finding(
            "unexplained",
            tr(
                "pairs {pairs} found, but the lengths of x change (a rotation "
                "keeps them): cos and sin of different angles, or a scale",
                pairs=pairs,
            ),
        )
    explained = explain_angles(angles, positions, dh)
    if explained is None:
        return Finding(
            "unexplained",
            tr(
                "the angles are not position x frequency, for the positions "
                "given nor for 0 .. L-1"
            ),
        )
    angle_layout, freq, used = explained
    return pairs, angle_layout, freq, used, fit_base(freq, dh)


def _findings(pairs, angle_layout, freq, used, fitted, base) -> list[Finding]:
    findings = []
    if used == "ignored":
        findings.append(
            Finding(
                "rope-positions-ignored",
                tr(
                    "given positions {positions}, row i turns by the angle of "
                    "position i: the positions 0 .. L-1 are used instead",
                    positions=list(POSITIONS),
                ),
            )
        )
    if angle_layout != pairs:
        findings.append(
            Finding(
                "rope-layout-mix",
                tr(
                    "the features turn in pairs {pairs}, but by the angles of "
                    "the {layout} layout: the two features of a pair turn by "
                    "different angles",
                    pairs=_PAIRS[pairs],
                    layout=angle_layout,
                ),
            )
        )
    if fitted is None and (freq[1:] < 0).all():
        findings.append(
            Finding(
                "unexplained",
                tr(
                    "the pairs turn the other way (by -p theta_i): "
                    "(a cos + b sin, b cos - a sin) instead of "
                    "(a cos - b sin, b cos + a sin)"
                ),
            )
        )
    elif fitted is None:
        shown = ", ".join(f"{float(f):.3g}" for f in freq[:4])
        findings.append(
            Finding(
                "unexplained",
                tr(
                    "the frequencies ({shown}, ...) do not follow "
                    "b ** (-2i / Dh) for any base b",
                    shown=shown,
                ),
            )
        )
    elif abs(math.log(fitted / base)) > 1e-3:
        ratio = math.log(fitted) / math.log(base)
        if abs(ratio - 0.5) < 1e-3 or abs(ratio - 2) < 1e-3:
            wrong = "i/Dh" if ratio < 1 else "4i/Dh"
            findings.append(
                Finding(
                    "rope-exponent",
                    tr(
                        "the frequencies are base ** (-{wrong}), not base ** "
                        "(-2i/Dh) (as if the base were {fitted} instead of "
                        "{base})",
                        wrong=wrong,
                        fitted=_fmt(fitted),
                        base=_fmt(base),
                    ),
                )
            )
        else:
            findings.append(
                Finding(
                    "rope-base",
                    tr(
                        "the frequencies follow base ** (-2i/Dh) with base "
                        "{fitted}, not {base}",
                        fitted=_fmt(fitted),
                        base=_fmt(base),
                    ),
                )
            )
    return findings
