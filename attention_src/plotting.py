"""Drawing attention maps. Rows are queries (who attends), columns are keys
(what is attended to); each row of weights sums to 1.

Both functions return a ``matplotlib.figure.Figure`` built without pyplot, so
nothing is shown and no global figure state leaks between calls.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib
import matplotlib.patches
import numpy as np
import torch
from matplotlib.figure import Figure

__all__ = ["plot_attention", "plot_attention_grid", "figure_to_svg"]

QUERY_AXIS = "query (attending)"
KEY_AXIS = "key (attended to)"

# The width the site's content column shows at 100 % (96 px per inch, about
# 717 px at a 1280 px window): default sizes stay within it.
COLUMN_WIDTH = 7.4
# Blocked cells: a mid grey with dark hatching, never the white of a weight 0.
BLOCKED_FACE = "#c4c4c4"
BLOCKED_HATCH = "#555555"
BLOCKED_LABEL = "blocked"


def _as_array(weights, ndim: int, name: str = "weights"):
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().to("cpu", torch.float32).numpy()
    if getattr(weights, "ndim", None) != ndim:
        shape = getattr(weights, "shape", None)
        raise ValueError(
            f"{name} must be {ndim}-D, got shape {tuple(shape) if shape else shape}"
        )
    return weights


def _as_mask(mask, shape: tuple[int, ...]):
    """``mask`` as a bool array of ``shape``: the same shape, or ``(L, S)``."""
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor):
        if mask.dtype != torch.bool:
            raise TypeError(
                f"mask must be bool (True = may attend), got {mask.dtype}; "
                "an additive float mask can be turned into one with "
                "`mask == 0`"
            )
        mask = mask.detach().to("cpu").numpy()
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"mask must be bool (True = may attend), got {mask.dtype}")
    if mask.shape != shape and mask.shape != shape[-2:]:
        raise ValueError(
            f"mask has shape {mask.shape}, the weights have {shape}; "
            f"give one of shape {shape} or {shape[-2:]}"
        )
    return np.broadcast_to(mask, shape)


def _draw_blocked(ax, allowed) -> None:
    """Grey, hatched rectangles over the cells where ``allowed`` is False.

    One rectangle per run of blocked cells in a row, each labelled
    ``BLOCKED_LABEL`` (its ``gid``), so that a reader (and a test) can tell a
    blocked cell from a weight that is merely tiny.
    """
    for i, row in enumerate(np.asarray(allowed)):
        blocked = np.flatnonzero(~row)
        if blocked.size == 0:
            continue
        # split into runs of consecutive columns
        runs = np.split(blocked, np.flatnonzero(np.diff(blocked) > 1) + 1)
        for run in runs:
            patch = matplotlib.patches.Rectangle(
                (run[0] - 0.5, i - 0.5),
                len(run),
                1.0,
                facecolor=BLOCKED_FACE,
                edgecolor=BLOCKED_HATCH,
                hatch="///",
                linewidth=0.0,
            )
            patch.set_gid(BLOCKED_LABEL)
            ax.add_patch(patch)


def _blocked_legend(fig) -> None:
    swatch = matplotlib.patches.Patch(
        facecolor=BLOCKED_FACE,
        edgecolor=BLOCKED_HATCH,
        hatch="///",
        label=BLOCKED_LABEL + " by the mask",
    )
    fig.legend(
        handles=[swatch], loc="outside lower right", fontsize=9, frameon=False
    )


def _label_axes(
    ax, L: int, S: int, query_labels, key_labels, *, show_titles: bool = True
):
    for labels, n, what in (
        (query_labels, L, "query_labels"),
        (key_labels, S, "key_labels"),
    ):
        if labels is not None and len(labels) != n:
            raise ValueError(
                f"{what} has {len(labels)} entries, the weights have {n}"
            )
    ax.set_xticks(
        range(S),
        key_labels if key_labels is not None else range(S),
        rotation=90 if key_labels is not None and S > 6 else 0,
    )
    ax.set_yticks(range(L), query_labels if query_labels is not None else range(L))
    if show_titles:
        ax.set_xlabel(KEY_AXIS)
        ax.set_ylabel(QUERY_AXIS)


# --8<-- [start:plot_attention]
def plot_attention(
    weights: torch.Tensor | np.ndarray,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    *,
    title: str | None = None,
    annotate: bool | None = None,
    cmap: str = "Blues",
    figsize: tuple[float, float] | None = None,
    mask: torch.Tensor | np.ndarray | None = None,
) -> Figure:
    """One attention map ``(L, S)`` as a heatmap with a colour bar.

    Args:
        weights: ``(L, S)`` tensor or array; row ``i`` = how query ``i``
            spreads its attention over the keys.
        query_labels: tick labels (tokens) for the rows.
        key_labels: tick labels (tokens) for the columns.
        title: figure title.
        annotate: print each weight in its cell (default: when L*S <= 64).
        cmap: a matplotlib colour map; weights are drawn on a 0..1 scale.
        figsize: width and height in inches (default: from L and S, at
            most ``COLUMN_WIDTH`` wide).
        mask: bool ``(L, S)``, True where query ``i`` may attend to key
            ``j``; blocked cells are drawn grey and hatched (with a
            "blocked" legend), so that they differ from a weight of 0.
    """
    w = _as_array(weights, 2)
    L, S = w.shape
    allowed = _as_mask(mask, (L, S))
    if figsize is None:
        cell = min(0.45, (COLUMN_WIDTH - 1.6) / max(S, 4))
        figsize = (1.6 + cell * max(S, 4), 1.2 + 0.9 * cell * max(L, 4))
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=1.0)
    _label_axes(ax, L, S, query_labels, key_labels)
    if allowed is not None:
        _draw_blocked(ax, allowed)
        _blocked_legend(fig)
    if annotate is None:
        annotate = L * S <= 64
    if annotate:
        cm = matplotlib.colormaps[cmap]
        for i in range(L):
            for j in range(S):
                if allowed is not None and not allowed[i, j]:
                    continue
                r, g, b, _ = cm(float(w[i, j]))
                dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
                ax.text(
                    j,
                    i,
                    f"{w[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if dark else "black",
                )
    fig.colorbar(image, ax=ax, label="attention weight", shrink=0.9)
    if title:
        ax.set_title(title)
    return fig


# --8<-- [end:plot_attention]


def plot_attention_grid(
    weights: torch.Tensor | np.ndarray | Sequence[torch.Tensor],
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    *,
    row_title: str = "layer",
    col_title: str = "head",
    title: str | None = None,
    cmap: str = "Blues",
    cell_size: float = 2.2,
    row_names: Sequence[str] | None = None,
    col_names: Sequence[str] | None = None,
    xlabel: str = KEY_AXIS,
    ylabel: str = QUERY_AXIS,
    colorbar_label: str = "attention weight",
    mask: torch.Tensor | np.ndarray | None = None,
    max_width: float = COLUMN_WIDTH,
) -> Figure:
    """A grid of attention maps: rows are layers, columns are heads.

    Args:
        weights: ``(R, C, L, S)``, or ``(C, L, S)`` for a single row, or a
            list of ``(C, L, S)`` tensors (one per layer, e.g. the weights an
            ``Encoder`` returns, indexed at one batch item).
        query_labels: tick labels for the rows of every map.
        key_labels: tick labels for the columns of every map.
        row_title: what a row of the grid is (``"layer"``).
        col_title: what a column of the grid is (``"head"``).
        title: figure title.
        cmap: a matplotlib colour map; weights are drawn on a 0..1 scale.
        cell_size: inches per map (smaller where the grid would be wider
            than ``max_width``).
        row_names: a name per row, used in the map titles instead of
            ``f"{row_title} {r}"`` (e.g. ``["untrained", "trained"]``).
        col_names: a name per column, instead of ``f"{col_title} {c}"``.
        xlabel: the label under the grid (what a column of a map is).
        ylabel: the label left of the grid (what a row of a map is).
        colorbar_label: the label of the colour bar, for grids of other
            0..1 matrices than attention weights.
        mask: bool, True = may attend: ``(L, S)`` for every map, or the
            shape of ``weights``; blocked cells are drawn grey and hatched,
            with a "blocked" legend.
        max_width: the figure's largest width in inches (the site's column,
            ``COLUMN_WIDTH``, by default).
    """
    if isinstance(weights, (list, tuple)):
        weights = torch.stack(
            [torch.as_tensor(w).detach().to("cpu", torch.float32) for w in weights]
        )
    shape = tuple(getattr(weights, "shape", ()))
    if getattr(weights, "ndim", None) == 3:
        weights = weights[None]
    w = _as_array(weights, 4)
    R, C, L, S = w.shape
    allowed = _as_mask(mask, shape)
    if allowed is not None:
        allowed = allowed.reshape(R, C, L, S)
    for names, n, what in (
        (row_names, R, "row_names"),
        (col_names, C, "col_names"),
    ):
        if names is not None and len(names) != n:
            raise ValueError(f"{what} has {len(names)} entries, the grid has {n}")
    cell = min(cell_size, (max_width - 0.8) / C)
    fig = Figure(figsize=(0.8 + cell * C, 0.5 + cell * R), layout="constrained")
    axes = fig.subplots(R, C, squeeze=False, sharex=True, sharey=True)
    image = None
    for r in range(R):
        for c in range(C):
            ax = axes[r][c]
            image = ax.imshow(w[r, c], cmap=cmap, vmin=0.0, vmax=1.0)
            if allowed is not None:
                _draw_blocked(ax, allowed[r, c])
            _label_axes(ax, L, S, query_labels, key_labels, show_titles=False)
            row = row_names[r] if row_names is not None else f"{row_title} {r}"
            col = col_names[c] if col_names is not None else f"{col_title} {c}"
            ax.set_title(f"{row} · {col}" if R > 1 else col, fontsize=9)
    fig.supxlabel(xlabel, fontsize=10)
    fig.supylabel(ylabel, fontsize=10)
    fig.colorbar(image, ax=axes, label=colorbar_label, shrink=0.8)
    if allowed is not None:
        _blocked_legend(fig)
    if title:
        fig.suptitle(title)
    return fig


# --8<-- [start:figure_to_svg]
def figure_to_svg(fig: Figure) -> str:
    """The figure as SVG text, byte-identical from run to run.

    Matplotlib's SVG output embeds a date and random element ids; a fixed
    hash salt and an empty date make two builds produce the same bytes.
    """
    with matplotlib.rc_context(
        {"svg.hashsalt": "attention-from-the-ground-up", "svg.fonttype": "path"}
    ):
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


# --8<-- [end:figure_to_svg]
