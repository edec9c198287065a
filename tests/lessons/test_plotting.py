"""attention_src.plotting: figures built without pyplot, labelled, reproducible as SVG."""

from __future__ import annotations

import matplotlib
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


# --------------------------------------------------------------------------- blocked cells


def _hatched_cells(ax):
    """The (row, column) cells covered by the hatched "blocked" rectangles of ``ax``."""
    cells = set()
    for patch in ax.patches:
        if not patch.get_hatch():
            continue
        assert patch.get_gid() == "blocked"
        x0, y0 = patch.get_x() + 0.5, patch.get_y() + 0.5
        assert patch.get_height() == 1.0 and float(y0).is_integer() and float(x0).is_integer()
        for j in range(int(x0), int(x0 + patch.get_width())):
            assert (int(y0), j) not in cells  # no cell drawn twice
            cells.add((int(y0), j))
    return cells


def _blocked_cells(allowed):
    return {(i, j) for i, j in (~allowed).nonzero().tolist()}


def _legend_texts(fig):
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_plot_attention_hatches_exactly_the_blocked_cells(device, gen, rand_mask):
    allowed = rand_mask(5, 7)
    allowed[:, 0] = True  # every row may attend somewhere
    scores = torch.randn(5, 7, generator=gen, device=device)
    w = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
    fig = plot_attention(w, mask=allowed)
    ax = fig.axes[0]
    assert _hatched_cells(ax) == _blocked_cells(allowed.cpu())
    assert len(_blocked_cells(allowed.cpu())) > 0  # the comparison can fail
    # the blocked patches are grey, not the colour map's white for a weight of 0
    face = ax.patches[0].get_facecolor()[:3]
    zero = matplotlib.colormaps["Blues"](0.0)[:3]
    assert max(face) - min(face) < 0.01  # grey
    assert np.abs(np.subtract(face, zero)).max() > 0.15
    assert any("blocked" in t for t in _legend_texts(fig))
    # the weights are still drawn underneath, unchanged
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), w.cpu().numpy())


def test_plot_attention_without_a_mask_hatches_nothing(device, gen):
    w = torch.tril(torch.ones(4, 4, device=device))
    w = w / w.sum(dim=-1, keepdim=True)  # causal-looking weights, but no mask given
    fig = plot_attention(w)
    assert _hatched_cells(fig.axes[0]) == set()
    assert _legend_texts(fig) == []


def test_plot_attention_does_not_annotate_blocked_cells(device):
    allowed = torch.ones(3, 3, dtype=torch.bool, device=device).tril()
    w = torch.tensor([[1, 0, 0], [0.25, 0.75, 0], [0.2, 0.3, 0.5]], device=device)
    ax = plot_attention(w, mask=allowed, annotate=True).axes[0]
    assert sorted(t.get_text() for t in ax.texts) == sorted(f"{v:.2f}" for v in w[allowed].tolist())


def test_grid_hatches_the_blocked_cells_of_every_map(device, gen, rand_mask):
    causal = torch.ones(4, 4, dtype=torch.bool, device=device).tril()
    w = _weights(device, gen, 2, 3, 4, 4)
    fig = plot_attention_grid(w, mask=causal)  # one (L, S) mask for every map
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == 6
    for ax in maps:
        assert _hatched_cells(ax) == _blocked_cells(causal.cpu())
    assert any("blocked" in t for t in _legend_texts(fig))
    # a mask per map: each map gets its own
    per_map = rand_mask(2, 3, 4, 4)
    maps = [ax for ax in plot_attention_grid(w, mask=per_map).axes if ax.images]
    for idx, ax in enumerate(maps):
        r, c = divmod(idx, 3)
        assert _hatched_cells(ax) == _blocked_cells(per_map[r, c].cpu())
    # (C, L, S) weights with a (C, L, S) mask
    single_row = plot_attention_grid(w[0], mask=per_map[0])
    maps = [ax for ax in single_row.axes if ax.images]
    assert [_hatched_cells(ax) for ax in maps] == [
        _blocked_cells(per_map[0, c].cpu()) for c in range(3)
    ]


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (1, 3, 5)])
def test_plot_attention_mask_shape_mismatch(device, gen, shape):
    mask = torch.ones(shape, dtype=torch.bool, device=device)
    with pytest.raises(ValueError, match=r"mask has shape .*, the weights have \(3, 4\)"):
        plot_attention(_weights(device, gen, 3, 4), mask=mask)


def test_grid_mask_shape_mismatch(device, gen):
    mask = torch.ones(2, 4, 4, dtype=torch.bool, device=device)
    with pytest.raises(
        ValueError, match=r"mask has shape \(2, 4, 4\), the weights have \(2, 3, 4, 4\)"
    ):
        plot_attention_grid(_weights(device, gen, 2, 3, 4, 4), mask=mask)


def test_mask_must_be_bool(device, gen):
    additive = torch.zeros(3, 3, device=device).masked_fill(
        ~torch.ones(3, 3, dtype=torch.bool, device=device).tril(), float("-inf")
    )
    with pytest.raises(TypeError, match="mask must be bool"):
        plot_attention(_weights(device, gen, 3, 3), mask=additive)
    with pytest.raises(TypeError, match="mask must be bool"):
        plot_attention(_weights(device, gen, 3, 3), mask=np.zeros((3, 3)))


# --------------------------------------------------------------------------- sizes for the column


@pytest.mark.parametrize(("C", "L"), [(1, 4), (3, 8), (4, 8), (8, 4)])
def test_grid_fits_the_column(device, gen, C, L):
    fig = plot_attention_grid(_weights(device, gen, 2, C, L, L), cell_size=2.5)
    width, _ = fig.get_size_inches()
    assert width <= 7.4 + 1e-9
    # a small grid keeps the asked-for cell size
    assert width == pytest.approx(min(0.8 + 2.5 * C, 7.4))


@pytest.mark.parametrize("S", [3, 8, 16, 32])
def test_plot_attention_default_size_fits_the_column(device, gen, S):
    width, _ = plot_attention(_weights(device, gen, 4, S)).get_size_inches()
    assert width <= 7.4 + 1e-9
