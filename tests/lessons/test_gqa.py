"""attention_src.gqa and the GQA side of attention_src.kv_cache: grouped-query
attention equal to F.scaled_dot_product_attention(enable_gqa=True), to plain
multi-head attention over repeated keys and values, and (the layer) to transformers'
LlamaAttention on the same weights, given the rotation angles of our RotaryEmbedding;
cached decoding with RoPE offsets equal to the full forward, with the mask and angles
decided by the caller as a model decides them; with mask=None and a cache the layer
attends to every key (it never invents a mask); cache bytes per token; and the input
checks."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from attention_src.gqa import GroupedQueryAttention, grouped_query_attention, repeat_kv
from attention_src.kv_cache import KVCache, kv_cache_bytes_per_token
from attention_src.masks import causal_mask
from attention_src.rope import RotaryEmbedding
from attention_src.scaled_dot_product import scaled_dot_product_attention

os.environ.setdefault("HF_HUB_OFFLINE", "1")
llama = pytest.importorskip("transformers.models.llama.modeling_llama")
LlamaConfig = pytest.importorskip("transformers").LlamaConfig

DTYPES = [torch.float32, torch.float64]
# (B, H, G, L, S, Dh): MHA (G = H), GQA, MQA (G = 1)
SHAPES = [(2, 4, 4, 5, 5, 8), (2, 6, 2, 3, 7, 8), (1, 9, 3, 6, 6, 16), (3, 4, 1, 4, 9, 4)]


def _tol(dtype):
    return dict(atol=1e-12, rtol=1e-12) if dtype == torch.float64 else {}


def _masks(kind, B, H, L, S, device, rand_mask):
    if kind == "none":
        return None
    if kind == "causal":
        return causal_mask(L, S, device=device)  # (L, S), bottom-right
    if kind == "per_example":
        mask = rand_mask(B, 1, L, S)
    elif kind == "per_head":
        mask = rand_mask(B, H, L, S)
    else:  # a float mask, added to the scores
        return torch.randn(B, H, L, S, device=device)
    mask[..., -1] = True  # every query keeps one key (SDPA and softmax agree there)
    return mask


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["none", "causal", "per_example", "per_head", "float"])
def test_equals_sdpa_with_enable_gqa(device, randn, rand_mask, dtype, shape, kind):
    B, H, G, L, S, Dh = shape
    q, k, v = (
        randn(B, H, L, Dh, dtype=dtype),
        randn(B, G, S, Dh, dtype=dtype),
        randn(B, G, S, Dh, dtype=dtype),
    )
    mask = _masks(kind, B, H, L, S, device, rand_mask)
    if mask is not None and mask.is_floating_point():
        mask = mask.to(dtype)
    out, weights = grouped_query_attention(q, k, v, mask)
    assert out.shape == (B, H, L, Dh) and weights.shape == (B, H, L, S)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(out, expected, **_tol(dtype))
    # plain multi-head attention over repeated K and V: outputs and weights
    n_rep = H // G
    mha_out, mha_weights = scaled_dot_product_attention(
        q, repeat_kv(k, n_rep), repeat_kv(v, n_rep), mask
    )
    torch.testing.assert_close(out, mha_out, **_tol(dtype))
    torch.testing.assert_close(weights, mha_weights, **_tol(dtype))


def test_scale_is_passed_on(device, randn):
    q, k, v = randn(1, 4, 3, 8), randn(1, 2, 3, 8), randn(1, 2, 3, 8)
    out, _ = grouped_query_attention(q, k, v, scale=0.3)
    expected = F.scaled_dot_product_attention(q, k, v, scale=0.3, enable_gqa=True)
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("n_rep", [1, 2, 3])
def test_repeat_kv_equals_transformers_and_repeat_interleave(randn, n_rep):
    x = randn(2, 3, 5, 4)
    out = repeat_kv(x, n_rep)
    assert torch.equal(out, llama.repeat_kv(x, n_rep))
    assert torch.equal(out, x.repeat_interleave(n_rep, dim=1))
    for h in range(3 * n_rep):  # head h uses key/value head h // n_rep
        assert torch.equal(out[:, h], x[:, h // n_rep])


def _llama_attention(ours: GroupedQueryAttention, base: float):
    config = LlamaConfig(
        hidden_size=ours.d_model,
        num_attention_heads=ours.num_heads,
        num_key_value_heads=ours.num_kv_heads,
        head_dim=ours.head_dim,
        rope_theta=base,
        attention_dropout=0.0,
    )
    config._attn_implementation = "eager"
    ref = llama.LlamaAttention(config, layer_idx=0)
    ref.load_state_dict(ours.state_dict())  # the same names: q_proj, ..., o_proj
    rotary = llama.LlamaRotaryEmbedding(config)
    p = next(ours.parameters())
    return ref.to(device=p.device, dtype=p.dtype).eval(), rotary.to(p.device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("H", "G"), [(4, 4), (6, 2), (4, 1)])
def test_layer_equals_llama_attention(device, randn, dtype, H, G):
    B, L, D, base = 2, 7, 48, 1e5
    ours = GroupedQueryAttention(D, H, G).to(device, dtype).eval()
    ref, rotary = _llama_attention(ours, base)
    x = randn(B, L, D, dtype=dtype)
    mask = causal_mask(L, device=device)
    additive = torch.zeros(L, L, device=device, dtype=dtype).masked_fill(~mask, float("-inf"))
    positions = torch.arange(L, device=device)
    rope = RotaryEmbedding(D // H, base)(positions, dtype=dtype)  # as the model computes it
    with torch.no_grad():
        out, weights = ours(x, mask, rope=rope)
        cos, sin = rotary(x, positions[None])
        ref_out, ref_weights = ref(x, (cos, sin), additive[None, None])
    # transformers computes the rotation angles in float32
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float64 else dict(atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(out, ref_out, **tol)
    torch.testing.assert_close(weights, ref_weights, **tol)


@pytest.mark.parametrize(
    ("H", "G", "chunks"), [(4, 2, [5, 1, 1, 3]), (6, 1, [1, 1, 1]), (4, 4, [3, 4])]
)
def test_cached_decoding_equals_the_full_forward(device, randn, H, G, chunks):
    """RoPE at offset positions and the bottom-right causal mask, both decided by the
    caller as a model decides them: feeding the tokens in chunks through a cache gives
    the rows of one causal forward over all of them."""
    D, L = 48, sum(chunks)
    f64 = torch.float64
    layer = GroupedQueryAttention(D, H, G).to(device, f64).eval()
    rotary = RotaryEmbedding(D // H, 1e4)
    x = randn(2, L, D, dtype=f64)

    def angles(start, n):  # the rotation angles of positions start .. start + n - 1
        return rotary(torch.arange(start, start + n, device=device), dtype=f64)

    with torch.no_grad():
        full, _ = layer(x, causal_mask(L, device=device), rope=angles(0, L))
        cache, pieces, start = KVCache(2), [], 0
        for n in chunks:
            mask = causal_mask(n, start + n, device=device) if n > 1 else None
            out, weights = layer(
                x[:, start : start + n], mask, rope=angles(start, n), cache=cache, layer=1
            )
            assert weights.shape == (2, H, n, start + n)
            pieces.append(out)
            start += n
    torch.testing.assert_close(torch.cat(pieces, dim=1), full)
    assert cache.layer_length(1) == L and cache.layer_length(0) == 0
    assert cache.keys[1].shape == (2, G, L, D // H)  # G key/value heads are stored
    # the negative control: the same chunks without the offset give other outputs
    with torch.no_grad():
        cache = KVCache(1)
        n = chunks[0]
        first_mask = causal_mask(n, device=device) if n > 1 else None
        layer(x[:, :n], first_mask, rope=angles(0, n), cache=cache)
        wrong, _ = layer(x[:, n : n + 1], rope=angles(0, 1), cache=cache)  # position 0
    assert (wrong - full[:, n : n + 1]).abs().max() > 1e-6


def test_with_a_cache_and_no_mask_every_key_is_attended(device, randn):
    """mask=None means no mask, with a cache too: the layer never invents a causal one.
    Three new queries after two cached keys attend to all five keys, as
    grouped_query_attention does without a mask."""
    layer = GroupedQueryAttention(16, 4, 2).to(device).eval()
    x = randn(1, 5, 16)
    with torch.no_grad():
        cache = KVCache(1)
        layer(x[:, :2], cache=cache)
        out, weights = layer(x[:, 2:], cache=cache)  # no mask
        q = layer.q_proj(x[:, 2:]).view(1, 3, 4, 4).transpose(1, 2)  # (1, H, 3, Dh)
        k = layer.k_proj(x).view(1, 5, 2, 4).transpose(1, 2)  # (1, G, 5, Dh)
        v = layer.v_proj(x).view(1, 5, 2, 4).transpose(1, 2)  # (1, G, 5, Dh)
        unmasked, expected_weights = grouped_query_attention(q, k, v)
        causal, _ = grouped_query_attention(q, k, v, causal_mask(3, 5, device=device))
    assert weights.shape == (1, 4, 3, 5) and (weights > 0).all()  # the future is seen
    torch.testing.assert_close(weights, expected_weights)
    torch.testing.assert_close(out, layer.o_proj(unmasked.transpose(1, 2).flatten(2)))
    assert not torch.allclose(unmasked, causal)  # so an invented mask would show


def test_without_rope_the_layer_is_order_blind(device, randn):
    layer = GroupedQueryAttention(16, 4, 2).to(device).eval()
    x = randn(1, 5, 16)
    perm = torch.tensor([3, 0, 4, 1, 2], device=device)
    torch.testing.assert_close(layer(x[:, perm])[0], layer(x)[0][:, perm])
    rope = RotaryEmbedding(4, 1e4)(torch.arange(5, device=device))  # (cos, sin), (5, 4) each
    assert (layer(x[:, perm], rope=rope)[0] - layer(x, rope=rope)[0][:, perm]).abs().max() > 1e-4


def test_projection_sizes_and_head_dim():
    layer = GroupedQueryAttention(576, 9, 3)
    assert layer.q_proj.weight.shape == (576, 576)
    assert layer.k_proj.weight.shape == layer.v_proj.weight.shape == (192, 576)
    assert layer.o_proj.weight.shape == (576, 576) and layer.q_proj.bias is None
    wide = GroupedQueryAttention(32, 4, 2, head_dim=16)
    assert wide.q_proj.weight.shape == (64, 32) and wide.o_proj.weight.shape == (32, 64)


def test_cache_bytes_per_token(device, randn):
    # SmolLM2-135M: 30 layers, D = 576, 9 query heads sharing 3 key/value heads
    mha = kv_cache_bytes_per_token(30, 576, 2)
    gqa = kv_cache_bytes_per_token(30, 576, 2, num_heads=9, num_kv_heads=3)
    assert gqa * 3 == mha and gqa == 2 * 30 * 3 * 64 * 2
    assert kv_cache_bytes_per_token(30, 576, 2, num_heads=9, num_kv_heads=9) == mha
    # and the bytes a cache holds after a forward
    layers = [GroupedQueryAttention(48, 6, 2).to(device) for _ in range(3)]
    cache, x = KVCache(3), randn(2, 5, 48)
    with torch.no_grad():
        for i, layer in enumerate(layers):
            layer(x, cache=cache, layer=i)
    held = sum(t.numel() * t.element_size() for t in cache.keys + cache.values)
    assert held == 2 * 5 * kv_cache_bytes_per_token(3, 48, 4, num_heads=6, num_kv_heads=2)


def test_cache_bytes_per_token_with_head_dim(device, randn):
    # Gemma 2 2B's sizes: D = 2304, 8 query heads of width 256 (not 2304 / 8),
    # 4 key/value heads, 26 layers
    gemma = kv_cache_bytes_per_token(26, 2304, 2, num_heads=8, num_kv_heads=4, head_dim=256)
    assert gemma == 2 * 26 * 4 * 256 * 2
    default = kv_cache_bytes_per_token(30, 576, 2, num_heads=9, num_kv_heads=3)
    assert default == kv_cache_bytes_per_token(
        30, 576, 2, num_heads=9, num_kv_heads=3, head_dim=576 // 9
    )
    # the bytes a cache of GroupedQueryAttention(head_dim=...) holds
    layers = [GroupedQueryAttention(48, 6, 2, head_dim=12).to(device) for _ in range(2)]
    cache, x = KVCache(2), randn(2, 5, 48)
    with torch.no_grad():
        for i, layer in enumerate(layers):
            layer(x, cache=cache, layer=i)
    held = sum(t.numel() * t.element_size() for t in cache.keys + cache.values)
    per_token = kv_cache_bytes_per_token(2, 48, 4, num_heads=6, num_kv_heads=2, head_dim=12)
    assert held == 2 * 5 * per_token
    assert per_token != kv_cache_bytes_per_token(2, 48, 4, num_heads=6, num_kv_heads=2)
    # head_dim lifts the need for d_model to be a multiple of num_heads
    assert kv_cache_bytes_per_token(1, 50, 1, num_heads=4, num_kv_heads=2, head_dim=8) == 2 * 2 * 8


def test_cache_bytes_per_token_head_dim_errors():
    with pytest.raises(ValueError, match="head_dim only with them"):
        kv_cache_bytes_per_token(2, 16, 4, head_dim=4)
    with pytest.raises(ValueError, match="pass num_heads and num_kv_heads together"):
        kv_cache_bytes_per_token(2, 16, 4, num_heads=4, head_dim=4)
    with pytest.raises(ValueError, match="head_dim must be positive, got 0"):
        kv_cache_bytes_per_token(2, 16, 4, num_heads=4, num_kv_heads=2, head_dim=0)
    with pytest.raises(TypeError, match=r"head_dim must be an int, got float 4\.5"):
        kv_cache_bytes_per_token(2, 16, 4, num_heads=4, num_kv_heads=2, head_dim=4.5)
    with pytest.raises(TypeError, match="head_dim must be an int, got bool"):
        kv_cache_bytes_per_token(2, 16, 4, num_heads=4, num_kv_heads=2, head_dim=True)
    with pytest.raises(ValueError, match="num_heads must be positive"):
        kv_cache_bytes_per_token(2, 16, 4, num_heads=0, num_kv_heads=2, head_dim=4)
    with pytest.raises(ValueError, match="must be divisible by num_kv_heads"):
        kv_cache_bytes_per_token(2, 16, 4, num_heads=4, num_kv_heads=3, head_dim=4)
    with pytest.raises(ValueError, match=r"d_model \(18\) must be divisible"):
        kv_cache_bytes_per_token(2, 18, 4, num_heads=4, num_kv_heads=2)


def test_errors(device, randn):
    q, k, v = randn(1, 4, 3, 8), randn(1, 3, 3, 8), randn(1, 3, 3, 8)
    with pytest.raises(ValueError, match=r"H = 4 must be a multiple of .* G = 3"):
        grouped_query_attention(q, k, v)
    with pytest.raises(ValueError, match="k and v must have the same shape"):
        grouped_query_attention(q, randn(1, 2, 3, 8), randn(1, 2, 4, 8))
    with pytest.raises(ValueError, match="same batch B and head width Dh"):
        grouped_query_attention(q, randn(1, 2, 3, 4), randn(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"must be 4-D \(B, G, S, Dh\)"):
        grouped_query_attention(q, randn(2, 3, 8), randn(2, 3, 8))
    with pytest.raises(ValueError, match="ambiguous"):
        grouped_query_attention(
            q, k[:, :2], v[:, :2], torch.ones(1, 3, 3, dtype=torch.bool, device=device)
        )
    with pytest.raises(ValueError, match="does not broadcast"):
        grouped_query_attention(
            q, k[:, :2], v[:, :2], torch.ones(3, 4, dtype=torch.bool, device=device)
        )
    with pytest.raises(
        ValueError, match=r"num_heads \(6\) must be divisible by num_kv_heads \(4\)"
    ):
        GroupedQueryAttention(24, 6, 4)
    with pytest.raises(ValueError, match="or pass head_dim"):
        GroupedQueryAttention(25, 5 * 2, 2)
    with pytest.raises(ValueError, match="head_dim must be even for RoPE, got 3"):
        RotaryEmbedding(GroupedQueryAttention(12, 4, 2).head_dim)
    layer = GroupedQueryAttention(16, 4, 2).to(device)
    with pytest.raises(ValueError, match=r"expected d_model=16"):
        layer(randn(1, 3, 8))
    with pytest.raises(TypeError, match=r"rope must be the pair \(cos, sin\)"):
        layer(randn(1, 3, 16), rope=randn(3, 4))
    wrong_length = RotaryEmbedding(4)(torch.arange(5, device=device))
    with pytest.raises(ValueError, match=r"cos must be \(L, Dh\) = \(3, 4\)"):
        layer(randn(1, 3, 16), rope=wrong_length)
    with pytest.raises(TypeError, match="cache must be a KVCache, got list"):
        layer(randn(1, 3, 16), cache=[])
    with pytest.raises(ValueError, match="pass num_heads and num_kv_heads together"):
        kv_cache_bytes_per_token(2, 16, 4, num_kv_heads=2)
    with pytest.raises(ValueError, match="must be divisible by num_kv_heads"):
        kv_cache_bytes_per_token(2, 16, 4, num_heads=4, num_kv_heads=3)
    cache = KVCache(2)
    with pytest.raises(ValueError, match=r"layer must be in \[0, 2\)"):
        cache.append(2, k, v)
    cache.append(0, k, v)
    with pytest.raises(ValueError, match=r"does not fit the cache of layer 0"):
        cache.append(0, randn(1, 2, 1, 8), randn(1, 2, 1, 8))
    with pytest.raises(TypeError, match="layer must be an int, got str"):
        cache.layer_length("0")
