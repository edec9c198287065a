"""Drawing attention maps. Rows are queries (who attends), columns are keys
(what is attended to); each row of weights sums to 1.

Both functions return a ``matplotlib.figure.Figure`` built without pyplot, so
nothing is shown and no global figure state leaks between calls.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib
import numpy as np
import torch
from matplotlib.figure import Figure

__all__ = ["plot_attention", "plot_attention_grid", "figure_to_svg"]

QUERY_AXIS = "query (attending)"
KEY_AXIS = "key (attended to)"


def _as_array(weights, ndim: int, name: str = "weights"):
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().to("cpu", torch.float32).numpy()
    if getattr(weights, "ndim", None) != ndim:
        shape = getattr(weights, "shape", None)
        raise ValueError(
            f"{name} must be {ndim}-D, got shape {tuple(shape) if shape else shape}"
        )
    return weights


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
        figsize: width and height in inches (default: from L and S).
    """
    w = _as_array(weights, 2)
    L, S = w.shape
    if figsize is None:
        figsize = (1.6 + 0.45 * max(S, 4), 1.2 + 0.4 * max(L, 4))
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=1.0)
    _label_axes(ax, L, S, query_labels, key_labels)
    if annotate is None:
        annotate = L * S <= 64
    if annotate:
        cm = matplotlib.colormaps[cmap]
        for i in range(L):
            for j in range(S):
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
        cell_size: inches per map.
        row_names: a name per row, used in the map titles instead of
            ``f"{row_title} {r}"`` (e.g. ``["untrained", "trained"]``).
        col_names: a name per column, instead of ``f"{col_title} {c}"``.
        xlabel: the label under the grid (what a column of a map is).
        ylabel: the label left of the grid (what a row of a map is).
        colorbar_label: the label of the colour bar, for grids of other
            0..1 matrices than attention weights.
    """
    if isinstance(weights, (list, tuple)):
        weights = torch.stack(
            [torch.as_tensor(w).detach().to("cpu", torch.float32) for w in weights]
        )
    if getattr(weights, "ndim", None) == 3:
        weights = weights[None]
    w = _as_array(weights, 4)
    R, C, L, S = w.shape
    for names, n, what in (
        (row_names, R, "row_names"),
        (col_names, C, "col_names"),
    ):
        if names is not None and len(names) != n:
            raise ValueError(f"{what} has {len(names)} entries, the grid has {n}")
    fig = Figure(
        figsize=(0.8 + cell_size * C, 0.5 + cell_size * R), layout="constrained"
    )
    axes = fig.subplots(R, C, squeeze=False, sharex=True, sharey=True)
    image = None
    for r in range(R):
        for c in range(C):
            ax = axes[r][c]
            image = ax.imshow(w[r, c], cmap=cmap, vmin=0.0, vmax=1.0)
            _label_axes(ax, L, S, query_labels, key_labels, show_titles=False)
            row = row_names[r] if row_names is not None else f"{row_title} {r}"
            col = col_names[c] if col_names is not None else f"{col_title} {c}"
            ax.set_title(f"{row} · {col}" if R > 1 else col, fontsize=9)
    fig.supxlabel(xlabel, fontsize=10)
    fig.supylabel(ylabel, fontsize=10)
    fig.colorbar(image, ax=axes, label=colorbar_label, shrink=0.8)
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
