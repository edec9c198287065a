"""The masks a module takes: the layouts (``(L, S)``, ``(B, 1, L, S)``,
``(B, L, S)``, key padding ``(B, S)``, valid lengths ``(B,)``) and encodings
(bool either way, or float added to the scores) it is handed masks in, found
by which of them it respects: no output depends on a token the mask blocks.
The checks write every mask as bool ``(B, 1, L, S)``, True = may attend;
``encode`` turns it into the module's form."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..lang import join, tr
from .facts import B, L

__all__ = ["LAYOUTS", "MASK_ENCODINGS", "encode", "MaskForm", "band", "find_masks"]

LAYOUTS = {
    "LS": "(L, S)",
    "B1LS": "(B, 1, L, S)",
    "BLS": "(B, L, S)",
    "BS": "(B, S) key padding",
    "lengths": "(B,) valid lengths",
}
MASK_ENCODINGS = {  # how a mask says what it blocks
    "allow": "bool, True = may attend",
    "block": "bool, True = blocked",
    "float": "float, added to the scores (0 or -inf)",
}


def encode(allow: torch.Tensor, layout: str, encoding: str):
    """``allow`` (bool, broadcastable to (B, 1, L, S)) in the module's form,
    or ``None`` where that layout cannot say it."""
    full = allow.expand(B, 1, allow.size(-2), allow.size(-1))
    if layout == "LS":
        if not (full == full[:1]).all():
            return None
        mask = full[0, 0]
    elif layout == "BLS":
        mask = full[:, 0]
    elif layout in ("BS", "lengths"):
        if not (full == full[:, :, :1]).all():
            return None
        mask = full[:, 0, 0]
        if layout == "lengths":  # the first n keys of each example
            n = mask.sum(dim=-1)
            prefix = torch.arange(mask.size(-1), device=mask.device) < n[:, None]
            return n if torch.equal(prefix, mask) else None
    else:
        mask = full
    if encoding == "block":
        return ~mask
    if encoding == "float":
        return torch.zeros(mask.shape, device=mask.device).masked_fill(
            ~mask, float("-inf")
        )
    return mask


@dataclass
class MaskForm:
    """What the module accepts: its encoding and the layouts that gave
    outputs respecting the mask (none: it respected none, see ``found``)."""

    encoding: str
    layouts: list[str] = field(default_factory=list)
    found: bool = False

    def layout(self, uniform: bool, runs=()) -> str | None:
        """The layout to pass a mask in: one of the layouts found, else the
        first that ``runs`` (the layouts the module did not raise on)."""
        order = (
            ["LS", "B1LS", "BLS"] if uniform else ["B1LS", "BLS", "BS", "lengths"]
        )
        if self.found:
            return next((lay for lay in order if lay in self.layouts), None)
        if not (set(runs) & set(order)) and not (uniform and "BS" in runs):
            return order[0]  # it runs with none: the first, to see it raise
        return next((lay for lay in order if lay in runs), None)

    def describe(self) -> str:
        if self.layouts == ["lengths"]:
            return tr("masks as {layout}", layout=tr(LAYOUTS["lengths"]))
        shapes = join(tr(LAYOUTS[lay]) for lay in self.layouts if lay != "lengths")
        encoding = tr(MASK_ENCODINGS[self.encoding])
        return tr("masks {shapes}, {encoding}", shapes=shapes, encoding=encoding)


def band(device) -> torch.Tensor:
    """(B, 1, L, L): example 0 may attend to tokens i-1 and i, example 1 to
    tokens i and i+1 — a mask that tells every layout and encoding apart,
    for causal modules too."""
    i = torch.arange(L, device=device)
    d = i[None, :] - i[:, None]  # j - i
    return torch.stack([(d == -1) | (d == 0), (d == 0) | (d == 1)])[:, None]


def find_masks(probe, encodings: list[str]) -> tuple[MaskForm, list[str]]:
    """The encoding and layouts of masks the module respects (no output
    depends on a blocked token), and the layouts it runs with at all."""
    if probe.call.mask is None:
        return MaskForm(encodings[0]), []
    bands = band(probe.device)
    real = torch.arange(L, device=probe.device) < torch.tensor(
        [[L], [3]], device=probe.device
    )
    pad = real[:, None, None, :]  # (B, 1, 1, L): keys of example 1 end at 3
    tests = {
        "LS": bands[:1],
        "B1LS": bands,
        "BLS": bands,
        "BS": pad,
        "lengths": pad,
    }
    runs, found = [], {}
    for encoding in encodings:
        for layout, allow in tests.items():
            x = probe.leaf()
            out, _, error = probe.run(x, allow, form=(layout, encoding))
            if error is not None:
                continue
            if layout not in runs:
                runs.append(layout)
            dep = probe.token_matrix(out, x, per_example=True)
            eye = torch.eye(L, dtype=torch.bool, device=probe.device)
            allowed = allow.expand(B, 1, L, L)[:, 0] | eye  # a query is its token
            if dep is not None and not (dep & ~allowed).any() and dep.any(-1).all():
                found.setdefault(encoding, []).append(layout)
        if found.get(encoding):
            return MaskForm(encoding, found[encoding], True), runs
    return MaskForm(encodings[0]), runs
