"""Check grouped-query attention ``attention(q, k, v, mask=None)`` and name
the mistake: python -m attention_src.check my_gqa.py:attention --gqa

``q`` is ``(B, H, L, Dh)`` and ``k``, ``v`` are ``(B, G, S, Dh)`` with ``G``
dividing ``H``; query head ``h`` must read key/value head ``h // (H / G)``,
as ``F.scaled_dot_product_attention(..., enable_gqa=True)`` does.

Two questions, asked apart so that one mistake does not hide the other:

1. With ``G = H`` the function is ordinary multi-head attention: the
   function check (``check_function``) runs on it unchanged, and names the
   mistakes of the attention itself (scale, softmax, mask, ...).
2. With ``G < H`` (``H = 6``, ``G = 2`` and ``G = 3``), its output is compared
   with its own output for the key/value heads repeated by hand, once in
   place (``repeat_interleave``: right) and once as a tile (``repeat``: head
   ``h`` reads ``h % G``). Comparing the function with itself, the mapping
   is named even when the attention is wrong too.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from ...validate import shape_str
from ..findings import Finding, Report
from ..function import check_function
from ..lang import current, tr, use
from ..loader import (
    UsageError,
    accepts_is_causal,
    check_function_signature,
    check_options,
)
from ..running import Timeout, call_quietly

__all__ = ["check_gqa"]

B, H, L, S, DH = 2, 6, 5, 7, 8
TOL = 1e-4


def _as_multi_head(fn, with_causal: bool):
    """``fn`` seen as plain attention on ``(..., L, Dk)``: inputs lifted to
    4-D with ``G = H``, and values wider or narrower than the keys cut into
    pieces of the keys' width (zero-padded), as a GQA function needs
    ``Dk == Dv``."""

    def run(q, k, v, mask=None, **kwargs):
        rank = q.dim()
        while q.dim() < 4:
            q, k, v = q[None], k[None], v[None]
        dk, dv = k.size(-1), v.size(-1)
        pieces, weights = [], None
        for start in range(0, dv, dk):
            part = v[..., start : start + dk]
            part = F.pad(part, (0, dk - part.size(-1)))  # (B, H, S, Dk)
            args = (q, k, part) if mask is None else (q, k, part, mask)
            result = fn(*args, **kwargs)
            if isinstance(result, (tuple, list)) and result:
                result, weights = result[0], result[1] if len(result) > 1 else None
            pieces.append(result)
        out = torch.cat(pieces, dim=-1)[..., :dv]  # (B, H, L, Dv)
        out = out.reshape(out.shape[4 - rank :]) if rank < 4 else out
        return out if weights is None else (out, weights)

    if with_causal:

        def attention(q, k, v, mask=None, is_causal=False):
            return run(q, k, v, mask, is_causal=is_causal)

    else:

        def attention(q, k, v, mask=None):
            return run(q, k, v, mask)

    return attention


def _out(result):
    if isinstance(result, (tuple, list)) and result:
        result = result[0]
    return result if isinstance(result, torch.Tensor) else None


def _grouping(fn, device, limit=None) -> tuple[list[Finding], list[str], list[str]]:
    """The mapping findings, the inputs used, and notes."""
    g = torch.Generator(device=device).manual_seed(1)
    findings, checks, notes = [], [], []
    for G in (2, 3):
        n = H // G
        q = torch.randn(B, H, L, DH, generator=g, device=device)
        k = torch.randn(B, G, S, DH, generator=g, device=device)
        v = torch.randn(B, G, S, DH, generator=g, device=device)
        mask = torch.rand(B, H, L, S, generator=g, device=device) < 0.7
        mask[..., 0] = True
        for m in (None, mask):
            shapes = f"q {shape_str(q.shape)}, k, v {shape_str(k.shape)}"
            shapes += "" if m is None else f", mask {shape_str(m.shape)}"
            checks.append(shapes)
            extra = [] if m is None else [m]
            got, error = call_quietly(
                fn,
                [q, k, v, *extra],
                neutralize=True,
                what="attention",
                limit=limit,
            )
            got = _out(got)
            if error or got is None or got.shape != q.shape:
                got = shape_str(getattr(got, "shape", ()))
                message = (
                    tr("{shapes}: {error}", shapes=shapes, error=error)
                    if error
                    else tr("{shapes}: returns {got}", shapes=shapes, got=got)
                )
                findings.append(Finding("shape", message))
                return findings, checks, notes
            in_place = [k.repeat_interleave(n, 1), v.repeat_interleave(n, 1)]
            tile = [k.repeat(1, n, 1, 1), v.repeat(1, n, 1, 1)]
            right = call_quietly(fn, [q, *in_place, *extra], limit=limit)[0]
            tiled = call_quietly(fn, [q, *tile, *extra], limit=limit)[0]
            if _same(got, _out(right)):
                if m is None:
                    notes.append(_gap_note(got, q, k, v, G))
                continue
            if _same(got, _out(tiled)):
                findings.append(
                    Finding(
                        "gqa-kv-head",
                        tr(
                            "with H = {H} query heads and G = {G} key/value "
                            "heads ({shapes}), head h reads key/value head "
                            "h % {G}: heads 0..{last} read {tiled}, not {right}",
                            H=H,
                            G=G,
                            shapes=shapes,
                            last=H - 1,
                            tiled=[h % G for h in range(H)],
                            right=[h // n for h in range(H)],
                        ),
                    )
                )
            else:
                findings.append(
                    Finding(
                        "unexplained",
                        tr(
                            "{shapes}: the output equals the function's own "
                            "output for neither k.repeat_interleave(H // G, 1) "
                            "nor k.repeat(1, H // G, 1, 1)",
                            shapes=shapes,
                        ),
                    )
                )
            return findings, checks, notes
    return findings, checks, notes


def _gap_note(got, q, k, v, G) -> str:
    """How far ``got`` is from SDPA with ``enable_gqa=True``: a gap within the
    tolerance is rounding, whose digits differ from one CPU to another, so
    only the bound is given."""
    ref = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    gap = float((got - ref).abs().max())
    if gap <= TOL:
        return tr(
            "G = {G}, no mask: equals F.scaled_dot_product_attention(..., "
            "enable_gqa=True) within {tol:g}",
            G=G,
            tol=TOL,
        )
    return tr(
        "G = {G}, no mask: differs from F.scaled_dot_product_attention(..., "
        "enable_gqa=True) by {gap:.2g}",
        G=G,
        gap=gap,
    )


def _same(a, b) -> bool:
    if a is None or b is None or a.shape != b.shape:
        return False
    return bool(torch.allclose(a, b, atol=TOL, rtol=TOL, equal_nan=True))


def check_gqa(
    fn: Callable,
    *,
    mask_convention: str = "auto",
    device: torch.device | str | None = None,
    name: str | None = None,
    call_limit: float | None = None,
    lang: str = "en",
) -> Report:
    """Check grouped-query attention ``fn(q, k, v, mask=None)``.

    ``q`` ``(B, H, L, Dh)``, ``k`` and ``v`` ``(B, G, S, Dh)``; the reference
    is ``F.scaled_dot_product_attention(q, k, v, mask, enable_gqa=True)``.
    The findings are those of ``check_function`` (run with ``G = H``) and
    ``gqa-kv-head`` (query head ``h`` reading key/value head ``h % G``).
    Arguments (``lang`` too) and errors as ``check_function``.
    """
    with use(lang):
        return _check_gqa(fn, mask_convention, device, name, call_limit)


def _check_gqa(fn, mask_convention, device, name, call_limit) -> Report:
    device = check_options(mask_convention, device)
    if not callable(fn):
        raise TypeError(
            tr("fn must be callable, got {type}", type=type(fn).__name__)
        )
    check_function_signature(fn)
    label = name or getattr(fn, "__name__", "attention")
    plain = _as_multi_head(fn, accepts_is_causal(fn))
    report = check_function(
        plain, mask_convention=mask_convention, device=device, name=label,
        lang=current(),
        **({} if call_limit is None else {"call_limit": call_limit}),
    )  # fmt: skip
    try:
        findings, checks, notes = _grouping(fn, device, call_limit)
    except Timeout as timeout:
        raise UsageError(str(timeout)) from None
    report.findings += findings
    report.checks += [tr("grouped: {check}", check=c) for c in checks]
    report.notes += notes
    report.decided_by = tr(
        "G = H: {how}; G < H: compared with its own output for key/value heads "
        "repeated in place and tiled",
        how=report.decided_by,
    )
    return report
