"""attention_src.plotting: figures built without pyplot, labelled, reproducible as SVG."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from attention_src import (
    figure_to_svg,
    plot_attention,
    plot_attention_grid,
    scaled_dot_product_attention,
)


def _weights(device, gen, *shape):
    """Rows that sum to 1, like real attention weights."""
    return torch.softmax(torch.randn(*shape, generator=gen, device=device), dim=-1)


def _tick_texts(labels):
    return [t.get_text() for t in labels]


# --------------------------------------------------------------------------- plot_attention


def test_plot_attention_returns_a_labelled_figure(device, gen):
    w = _weights(device, gen, 3, 4)
    queries, keys = ["the", "cat", "sat"], ["<s>", "the", "cat", "sat"]
    fig = plot_attention(w, queries, keys, title="one head")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2  # the heatmap and its colour bar
    ax = fig.axes[0]
    assert _tick_texts(ax.get_xticklabels()) == keys
    assert _tick_texts(ax.get_yticklabels()) == queries
    assert "key" in ax.get_xlabel()
    assert "query" in ax.get_ylabel()
    assert ax.get_title() == "one head"
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), w.cpu().numpy())
    assert ax.images[0].get_clim() == (0.0, 1.0)


def test_plot_attention_default_ticks_are_positions(device, gen):
    fig = plot_attention(_weights(device, gen, 2, 5))
    ax = fig.axes[0]
    assert _tick_texts(ax.get_xticklabels()) == ["0", "1", "2", "3", "4"]
    assert _tick_texts(ax.get_yticklabels()) == ["0", "1"]


def test_plot_attention_annotates_small_maps(device, gen):
    w = _weights(device, gen, 3, 4)
    ax = plot_attention(w).axes[0]
    expected = sorted(f"{v:.2f}" for v in w.flatten().tolist())
    assert sorted(t.get_text() for t in ax.texts) == expected
    assert len(plot_attention(w, annotate=False).axes[0].texts) == 0
    assert len(plot_attention(_weights(device, gen, 9, 9)).axes[0].texts) == 0  # 81 > 64 cells


def test_plot_attention_accepts_weights_that_require_grad(device, gen):
    q = torch.randn(1, 4, 8, generator=gen, device=device, requires_grad=True)
    _, w = scaled_dot_product_attention(q, q, q)
    fig = plot_attention(w[0].to(torch.bfloat16))
    np.testing.assert_allclose(
        np.asarray(fig.axes[0].images[0].get_array()),
        w[0].detach().to(torch.bfloat16).float().cpu().numpy(),
    )


def test_plot_attention_accepts_numpy():
    w = np.full((2, 3), 1 / 3)
    fig = plot_attention(w)
    np.testing.assert_allclose(np.asarray(fig.axes[0].images[0].get_array()), w)


@pytest.mark.parametrize(
    ("queries", "keys", "pattern"),
    [
        (["a", "b"], None, r"query_labels has 2 entries, the weights have 3"),
        (None, ["a", "b", "c"], r"key_labels has 3 entries, the weights have 4"),
    ],
)
def test_plot_attention_label_count_mismatch(device, gen, queries, keys, pattern):
    with pytest.raises(ValueError, match=pattern):
        plot_attention(_weights(device, gen, 3, 4), queries, keys)


def test_plot_attention_wrong_ndim(device, gen):
    with pytest.raises(ValueError, match=r"weights must be 2-D, got shape \(2, 3, 4\)"):
        plot_attention(_weights(device, gen, 2, 3, 4))


# --------------------------------------------------------------------------- plot_attention_grid


@pytest.mark.parametrize(("R", "C"), [(1, 1), (2, 3), (3, 2)])
def test_grid_has_one_axis_per_map_and_a_colour_bar(device, gen, R, C):
    w = _weights(device, gen, R, C, 4, 5)
    fig = plot_attention_grid(w, title="all heads")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == R * C + 1
    images = [ax for ax in fig.axes if ax.images]
    assert len(images) == R * C
    for idx, ax in enumerate(images):
        r, c = divmod(idx, C)
        np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), w[r, c].cpu().numpy())
        expected_title = f"layer {r} · head {c}" if R > 1 else f"head {c}"
        assert ax.get_title() == expected_title
    assert "key" in fig.get_supxlabel()
    assert "query" in fig.get_supylabel()
    assert fig.get_suptitle() == "all heads"


def test_grid_accepts_a_list_of_per_layer_weights(device, gen):
    layers = [_weights(device, gen, 2, 3, 3) for _ in range(4)]  # 4 layers of (H, L, S)
    fig = plot_attention_grid(layers, ["a", "b", "c"], ["a", "b", "c"])
    images = [ax for ax in fig.axes if ax.images]
    assert len(images) == 4 * 2 and len(fig.axes) == 4 * 2 + 1
    np.testing.assert_allclose(
        np.asarray(images[5].images[0].get_array()), layers[2][1].cpu().numpy()
    )
    # shared axes: the bottom row carries the key labels, the left column the query labels
    assert _tick_texts(images[-1].get_xticklabels()) == ["a", "b", "c"]
    assert _tick_texts(images[0].get_yticklabels()) == ["a", "b", "c"]


@pytest.mark.parametrize(("R", "C"), [(1, 3), (2, 2)])
def test_grid_row_and_column_names_replace_the_titles(device, gen, R, C):
    rows, cols = [f"r{i}" for i in range(R)], [f"c{i}" for i in range(C)]
    fig = plot_attention_grid(_weights(device, gen, R, C, 3, 3), row_names=rows, col_names=cols)
    titles = [ax.get_title() for ax in fig.axes if ax.images]
    expected = [f"{r} · {c}" if R > 1 else c for r in rows for c in cols]
    assert titles == expected


def test_grid_axis_and_colour_bar_labels_can_be_changed(device, gen):
    fig = plot_attention_grid(
        _weights(device, gen, 1, 2, 3, 3),
        xlabel="input token",
        ylabel="output position",
        colorbar_label="share of the change",
    )
    assert fig.get_supxlabel() == "input token"
    assert fig.get_supylabel() == "output position"
    colour_bar = next(ax for ax in fig.axes if not ax.images)
    assert colour_bar.get_ylabel() == "share of the change"


@pytest.mark.parametrize("which", ["row_names", "col_names"])
def test_grid_name_count_mismatch(device, gen, which):
    with pytest.raises(ValueError, match=f"{which} has 1 entries, the grid has 2"):
        plot_attention_grid(_weights(device, gen, 2, 2, 3, 3), **{which: ["only one"]})


def test_grid_accepts_a_single_row(device, gen):
    fig = plot_attention_grid(_weights(device, gen, 3, 2, 2))
    assert len([ax for ax in fig.axes if ax.images]) == 3


def test_grid_label_count_mismatch(device, gen):
    with pytest.raises(ValueError, match=r"key_labels has 2 entries, the weights have 5"):
        plot_attention_grid(_weights(device, gen, 2, 2, 4, 5), key_labels=["x", "y"])


def test_grid_wrong_ndim(device, gen):
    with pytest.raises(ValueError, match=r"weights must be 4-D, got shape \(4, 5\)"):
        plot_attention_grid(_weights(device, gen, 4, 5))


# --------------------------------------------------------------------------- no pyplot, SVG


def test_pyplot_is_never_used(device, gen):
    before = plt.get_fignums()
    plot_attention(_weights(device, gen, 3, 3))
    plot_attention_grid(_weights(device, gen, 2, 2, 3, 3))
    figure_to_svg(plot_attention(_weights(device, gen, 2, 2)))
    assert plt.get_fignums() == before


def test_figure_to_svg_is_reproducible(device, gen):
    w = _weights(device, gen, 3, 4)
    first = figure_to_svg(plot_attention(w, ["a", "b", "c"], list("wxyz"), title="t"))
    second = figure_to_svg(plot_attention(w.clone(), ["a", "b", "c"], list("wxyz"), title="t"))
    assert first.lstrip().startswith("<?xml") and "<svg" in first
    assert first == second
    # a different figure gives a different SVG (the comparison can fail)
    other = figure_to_svg(plot_attention(w.flip(0), ["a", "b", "c"], list("wxyz"), title="t"))
    assert other != first


def test_grid_svg_is_reproducible(device, gen):
    w = _weights(device, gen, 2, 2, 3, 3)
    assert figure_to_svg(plot_attention_grid(w)) == figure_to_svg(plot_attention_grid(w.clone()))
