"""The offline attention explorer: tokens and attention weights become a
``<figure>`` that ``docs/assets/javascripts/attention-explorer.js`` turns into an
interactive view (hover, tap or focus a token; choose layer and head; a grid of
every head's thumbnail for the selected token).

The data travel inside the page as JSON (no ``fetch``: the page works from
``file://``). Without JavaScript the figure shows ``fallback_fig``, a static
picture with alt text, instead.

Weights are stored as integers, ``round(weight * SCALE)``; the script divides
them back, so what the page shows is the build's weight to ``1 / SCALE``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

import numpy as np

from site_tools.outputs.figures import ALT_SLOT, svg_img

__all__ = ["SCALE", "explorer_data", "explorer_html"]

SCALE = 10_000  # weights are embedded as round(w * SCALE)


def explorer_data(tokens: Sequence[str], weights) -> dict:
    """The JSON the script reads: ``{"tokens", "layers", "heads", "scale",
    "weights"}``, with ``weights[l][h][i][j]`` = ``round(w * SCALE)`` for
    query ``i`` and key ``j``.

    Args:
        tokens: the ``L`` token strings.
        weights: ``(layers, heads, L, L)`` attention weights (tensor or array),
            each row summing to 1.
    """
    tokens = [str(t) for t in tokens]
    if hasattr(weights, "detach"):
        weights = weights.detach().to("cpu").double().numpy()
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 4 or w.shape[2] != w.shape[3]:
        raise ValueError(f"weights must be (layers, heads, L, L), got shape {tuple(w.shape)}")
    if w.shape[2] != len(tokens):
        raise ValueError(
            f"weights are for L = {w.shape[2]} tokens, but {len(tokens)} tokens were given"
        )
    if not np.isfinite(w).all() or (w < 0).any() or (w > 1).any():
        raise ValueError("weights must be finite and in [0, 1]")
    ints = np.rint(w * SCALE).astype(np.int64)
    return {
        "tokens": tokens,
        "layers": int(w.shape[0]),
        "heads": int(w.shape[1]),
        "scale": SCALE,
        "weights": ints.tolist(),
    }


def explorer_html(
    tokens: Sequence[str],
    weights,
    *,
    id: str,
    fallback_fig=None,
    layer: int = 0,
    head: int = 0,
    token: int = 0,
) -> str:
    """``<figure>`` with the explorer's data and a static fallback.

    Args:
        tokens: the ``L`` token strings.
        weights: ``(layers, heads, L, L)``.
        id: the figure's id, starting ``fig-``. Its caption and the alt text of
            the fallback come from the Markdown after the block, as for any
            figure (``site_tools.engine.captions.attach_text``).
        fallback_fig: a matplotlib figure shown when JavaScript is off.
        layer, head, token: what the explorer shows first (0-based).
    """
    if not id.startswith("fig-"):
        raise ValueError(f"a figure id starts with 'fig-', got {id!r}")
    data = explorer_data(tokens, weights)
    for name, value, size in (
        ("layer", layer, data["layers"]),
        ("head", head, data["heads"]),
        ("token", token, len(data["tokens"])),
    ):
        if not 0 <= value < size:
            raise ValueError(f"{name} must be in 0..{size - 1}, got {value}")
    data["start"] = {"layer": layer, "head": head, "token": token}
    # "</" cannot end the script element early once written as "<\/"
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    parts = [
        f'<figure class="attention-explorer" id="{html.escape(id)}">',
        f'<script type="application/json" class="ae-data">{payload}</script>',
        '<div class="ae-fallback">',
    ]
    parts.append(svg_img(fallback_fig) if fallback_fig is not None else ALT_SLOT)
    parts += ["</div>", "</figure>"]
    return "".join(parts)
