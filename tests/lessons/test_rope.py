"""attention_src.rope: equal to transformers' Llama rotary embedding (same base,
positions and offsets) and to an independent complex-number rotation; scores that
depend only on the distance; lengths kept; and the input checks."""

from __future__ import annotations

import os

import pytest
import torch

from attention_src.rope import (
    RotaryEmbedding,
    apply_rope,
    rope_angles,
    rope_rotate,
    rotate_half,
    rotate_pairs,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
llama = pytest.importorskip("transformers.models.llama.modeling_llama")
LlamaConfig = pytest.importorskip("transformers").LlamaConfig

DTYPES = [torch.float32, torch.float64]


def _reference(x, positions, base):
    """transformers: LlamaRotaryEmbedding's cos/sin, then apply_rotary_pos_emb."""
    Dh = x.size(-1)
    config = LlamaConfig(hidden_size=Dh * 2, num_attention_heads=2, head_dim=Dh, rope_theta=base)
    rotary = llama.LlamaRotaryEmbedding(config).to(x.device)
    cos, sin = rotary(x, positions[None])  # (1, L, Dh) each
    rotated, _ = llama.apply_rotary_pos_emb(x, x, cos, sin)
    return rotated


def _complex_rotation(x, positions, base):
    """An independent construction: pair i is the complex number x_i + i x_{i+Dh/2},
    multiplied by exp(i * position * base^(-2i/Dh)), in float64."""
    Dh = x.size(-1)
    x64 = x.to(torch.float64)
    z = torch.complex(x64[..., : Dh // 2], x64[..., Dh // 2 :])  # (..., L, Dh/2)
    freq = base ** (-torch.arange(0, Dh, 2, dtype=torch.float64, device=x.device) / Dh)
    angle = positions.to(torch.float64)[:, None] * freq  # (L, Dh/2)
    z = z * torch.polar(torch.ones_like(angle), angle)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("shape", "base", "start"),
    [((2, 3, 7, 16), 10000.0, 0), ((1, 9, 5, 64), 100000.0, 0), ((2, 2, 4, 8), 500.0, 37)],
)
def test_apply_rope_equals_transformers_llama(device, randn, dtype, shape, base, start):
    x = randn(*shape, dtype=dtype)
    positions = torch.arange(start, start + shape[2], device=device)
    ours = apply_rope(x, positions, base=base)
    # transformers computes the angles in float32, whatever the dtype of x
    torch.testing.assert_close(ours, _reference(x, positions, base), atol=2e-5, rtol=1e-5)
    exact = dict(atol=1e-12, rtol=1e-12) if dtype == torch.float64 else {}
    torch.testing.assert_close(ours, _complex_rotation(x, positions, base), **exact)


def test_offset_is_the_position_of_the_first_row(device, randn):
    """Cached decoding: rotating the last rows with offset = the number before them
    gives the rows of rotating the whole sequence."""
    x = randn(2, 3, 10, 16, dtype=torch.float64)
    full = apply_rope(x)
    for cached in (0, 1, 6, 9):
        torch.testing.assert_close(apply_rope(x[:, :, cached:], offset=cached), full[:, :, cached:])
    arbitrary = torch.tensor([3, 0, 12, 7], device=device)
    torch.testing.assert_close(
        apply_rope(x[:, :, :4], arbitrary), _complex_rotation(x[:, :, :4], arbitrary, 1e4)
    )


@pytest.mark.parametrize("base", [10000.0, 100000.0])
def test_scores_depend_only_on_the_distance(device, randn, base):
    q, k = randn(1, 1, 1, 32, dtype=torch.float64), randn(1, 1, 1, 32, dtype=torch.float64)

    def score(p, j):
        qp = apply_rope(q, torch.tensor([p], device=device), base=base)
        kj = apply_rope(k, torch.tensor([j], device=device), base=base)
        return (qp * kj).sum().item()

    same = [score(p, p + 5) for p in (0, 3, 100, 2000)]
    assert max(same) - min(same) < 1e-9
    assert abs(score(5, 0) - score(0, 5)) > 1e-3  # the sign of the distance matters
    assert abs(score(0, 0) - (q * k).sum().item()) < 1e-12  # distance 0: no rotation


def test_rotation_keeps_lengths_and_rotate_half(device, randn):
    x = randn(2, 2, 6, 8, dtype=torch.float64)
    torch.testing.assert_close(apply_rope(x, offset=3).norm(dim=-1), x.norm(dim=-1))
    a, b = x[..., :4], x[..., 4:]
    torch.testing.assert_close(rotate_half(x), torch.cat([-b, a], dim=-1))
    torch.testing.assert_close(rotate_half(rotate_half(x)), -x)  # 90 degrees twice


def test_rope_angles_layout_and_dtype(device):
    positions = torch.arange(4, device=device)
    cos, sin = rope_angles(positions, 8, base=100.0, dtype=torch.float64)
    assert cos.shape == sin.shape == (4, 8) and cos.dtype == torch.float64
    torch.testing.assert_close(cos[:, :4], cos[:, 4:])  # frequencies repeated twice
    torch.testing.assert_close(cos[0], torch.ones(8, dtype=torch.float64, device=device))
    expected = torch.tensor(
        [3 * 100.0 ** (-i / 8) for i in range(0, 8, 2)], dtype=torch.float64, device=device
    ).sin()
    torch.testing.assert_close(sin[3, :4], expected)
    assert rope_angles(positions, 8)[0].dtype == torch.float32


def test_rotary_embedding_gives_the_angles_a_model_hands_its_layers(device, randn):
    """A model computes (cos, sin) once with its RotaryEmbedding; every layer rotates with
    rope_rotate, which is apply_rope at those positions."""
    x = randn(2, 3, 5, 16, dtype=torch.float64)
    rope = RotaryEmbedding(16, base=1e5)
    assert len(list(rope.parameters())) == 0 and len(list(rope.buffers())) == 0
    positions = torch.arange(2, 7, device=device)
    cos, sin = rope(positions, dtype=torch.float64)
    expected = rope_angles(positions, 16, 1e5, dtype=torch.float64)
    assert torch.equal(cos, expected[0]) and torch.equal(sin, expected[1])
    torch.testing.assert_close(rope_rotate(x, cos, sin), apply_rope(x, positions, base=1e5))
    torch.testing.assert_close(rope_rotate(x, cos, sin), apply_rope(x, offset=2, base=1e5))
    assert rope(positions)[0].dtype == torch.float32  # rope_angles' default
    with pytest.raises(ValueError, match=r"cos must be \(L, Dh\) = \(5, 16\) .* got \(5, 8\)"):
        rope_rotate(x, *RotaryEmbedding(8)(positions, dtype=torch.float64))
    with pytest.raises(TypeError, match="x and cos must have the same dtype"):
        rope_rotate(x, cos.float(), sin.float())
    with pytest.raises(TypeError, match=r"sin must be a torch\.Tensor"):
        rope_rotate(x, cos, 0.5)


def test_errors(device, randn):
    x = randn(1, 2, 4, 6)
    with pytest.raises(ValueError, match="head_dim must be even"):
        apply_rope(randn(1, 2, 4, 5))
    with pytest.raises(ValueError, match=r"must be 4-D \(B, H, L, Dh\)"):
        apply_rope(randn(2, 4, 6))
    with pytest.raises(ValueError, match="positions has 3 entries, but x has L = 4"):
        apply_rope(x, torch.arange(3, device=device))
    with pytest.raises(TypeError, match="integer positions"):
        apply_rope(x, torch.arange(4, device=device).float())
    with pytest.raises(ValueError, match=r"positions must be 1-D \(L,\)"):
        apply_rope(x, torch.arange(4, device=device)[None])
    with pytest.raises(ValueError, match="either positions or offset"):
        apply_rope(x, torch.arange(4, device=device), offset=2)
    with pytest.raises(ValueError, match="offset must be an int >= 0"):
        apply_rope(x, offset=-1)
    with pytest.raises(TypeError, match=r"offset must be an int >= 0, got 1\.5"):
        apply_rope(x, offset=1.5)
    with pytest.raises(ValueError, match="base must be a number > 1"):
        apply_rope(x, base=1.0)
    with pytest.raises(TypeError, match="base must be a number > 1, got '1e4'"):
        RotaryEmbedding(8, "1e4")
    with pytest.raises(TypeError, match="floating-point"):
        apply_rope(x.long())
    with pytest.raises(ValueError, match="head_dim must be even"):
        RotaryEmbedding(7)


# ------------------------------------------------ the interleaved layout (DeepSeek's)


def _complex_rotation_interleaved(x, positions, base):
    """Pair i is the complex number x_{2i} + i x_{2i+1}, turned by the same angle as in
    the rotate-half layout, in float64: an independent construction."""
    Dh = x.size(-1)
    x64 = x.to(torch.float64)
    z = torch.complex(x64[..., 0::2], x64[..., 1::2])  # (..., L, Dh/2)
    freq = base ** (-torch.arange(0, Dh, 2, dtype=torch.float64, device=x.device) / Dh)
    angle = positions.to(torch.float64)[:, None] * freq  # (L, Dh/2)
    z = z * torch.polar(torch.ones_like(angle), angle)
    return torch.stack([z.real, z.imag], dim=-1).flatten(-2).to(x.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("shape", "base", "start"), [((2, 3, 7, 16), 1e4, 0), ((1, 2, 5, 8), 500.0, 37)]
)
def test_interleaved_equals_the_complex_rotation_and_transformers_deepseek(
    device, randn, dtype, shape, base, start
):
    """DeepSeek's layout: neighbours pair up. transformers' DeepSeek-V3 rotation takes the
    pairs interleaved and writes them out de-interleaved (evens, then odds): the same
    rotation followed by a fixed reordering, which a dot product of two such vectors
    does not see."""
    deepseek = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
    x = randn(*shape, dtype=dtype)
    positions = torch.arange(start, start + shape[2], device=device)
    ours = apply_rope(x, positions, base=base, interleaved=True)
    exact = dict(atol=1e-12, rtol=1e-12) if dtype == torch.float64 else {}
    torch.testing.assert_close(ours, _complex_rotation_interleaved(x, positions, base), **exact)
    cos, sin = rope_angles(positions, shape[-1], base, dtype=dtype)  # rotate-half layout
    theirs, _ = deepseek.apply_rotary_pos_emb_interleave(x, x, cos[None], sin[None])
    order = torch.cat([torch.arange(0, shape[-1], 2), torch.arange(1, shape[-1], 2)])
    torch.testing.assert_close(ours[..., order.to(device)], theirs, **exact)
    # and it is not the rotate-half layout (positions > 0 turn other features)
    assert (ours - apply_rope(x, positions, base=base)).abs().max() > 1e-3


def test_interleaved_layout_of_angles_and_rotate_pairs(device, randn):
    positions = torch.arange(5, device=device)
    halves = rope_angles(positions, 8, base=100.0, dtype=torch.float64)
    pairs = rope_angles(positions, 8, base=100.0, dtype=torch.float64, interleaved=True)
    for h, p in zip(halves, pairs, strict=True):  # the same angles, laid out in pairs
        torch.testing.assert_close(p[:, 0::2], h[:, :4])
        torch.testing.assert_close(p[:, 1::2], h[:, :4])
    x = randn(2, 3, 8, dtype=torch.float64)
    expected = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    torch.testing.assert_close(rotate_pairs(x), expected)
    assert torch.equal(rotate_pairs(x)[..., :2], torch.stack([-x[..., 1], x[..., 0]], -1))
    torch.testing.assert_close(rotate_pairs(rotate_pairs(x)), -x)  # 90 degrees twice
    # the rotary helper hands the same pair; its layout shows in its repr
    rope = RotaryEmbedding(8, 100.0, interleaved=True)
    assert all(
        torch.equal(a, b) for a, b in zip(rope(positions, dtype=torch.float64), pairs, strict=True)
    )
    assert "interleaved=True" in repr(rope) and "interleaved" not in repr(RotaryEmbedding(8))


def test_interleaved_scores_depend_only_on_the_distance(device, randn):
    q, k = randn(1, 1, 1, 16, dtype=torch.float64), randn(1, 1, 1, 16, dtype=torch.float64)

    def score(p, j):
        qp = apply_rope(q, torch.tensor([p], device=device), interleaved=True)
        kj = apply_rope(k, torch.tensor([j], device=device), interleaved=True)
        return (qp * kj).sum().item()

    same = [score(p, p + 3) for p in (0, 4, 90)]
    assert max(same) - min(same) < 1e-9 and abs(score(3, 0) - score(0, 3)) > 1e-3


def test_interleaved_must_be_a_bool(device, randn):
    x = randn(1, 1, 2, 4)
    with pytest.raises(TypeError, match=r"interleaved must be True .* or False .* got 1"):
        apply_rope(x, interleaved=1)
    with pytest.raises(TypeError, match="interleaved must be True"):
        RotaryEmbedding(4, interleaved="yes")
    cos, sin = rope_angles(torch.arange(2, device=device), 4)
    with pytest.raises(TypeError, match="interleaved must be True"):
        rope_rotate(x, cos, sin, interleaved=None)
