"""attention_src.latent_attention: MultiHeadLatentAttention equals transformers'
DeepseekV3Attention with the same weights (causal, positions from 0 and from an offset,
with and without our cache); the cache holds only the normalised latents and the rotated
shared keys; the absorbed way equals the plain one; and the input checks."""

from __future__ import annotations

import os

import pytest
import torch

from attention_src.kv_cache import KVCache
from attention_src.latent_attention import (
    MultiHeadLatentAttention,
    latent_attention,
    latent_cache_bytes_per_token,
)
from attention_src.masks import causal_mask
from attention_src.rope import RotaryEmbedding

os.environ.setdefault("HF_HUB_OFFLINE", "1")
deepseek = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
DeepseekV3Config = pytest.importorskip("transformers").DeepseekV3Config

SIZES = dict(kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6, q_lora_rank=12)
D, H, BASE = 32, 4, 500.0


def _reference(device, *, q_lora_rank=12, bias=False):
    """A tiny DeepSeek-V3 attention layer with random weights (norms included), its
    rotary embedding and config; eager attention, no rope scaling, interleaved."""
    config = DeepseekV3Config(
        hidden_size=D,
        num_attention_heads=H,
        num_key_value_heads=H,
        **{**SIZES, "q_lora_rank": q_lora_rank},
        attention_bias=bias,
        rope_parameters={"rope_type": "default", "rope_theta": BASE},
        rope_interleave=True,
        attention_dropout=0.0,
        rms_norm_eps=1e-3,  # the attention's own norms keep their default, 1e-6
    )
    config._attn_implementation = "eager"
    gen = torch.Generator().manual_seed(7)
    layer = deepseek.DeepseekV3Attention(config, layer_idx=0)
    with torch.no_grad():
        for p in layer.parameters():  # norms away from 1, biases away from 0
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3 + (p.dim() == 1) * 1.0)
    rotary = deepseek.DeepseekV3RotaryEmbedding(config)
    return layer.to(device).eval(), rotary.to(device), config


def _run_reference(layer, rotary, x, positions):
    """The reference on ``x`` at ``positions``, causal within ``x``."""
    L = x.size(1)
    allowed = causal_mask(L, device=x.device)
    additive = torch.zeros(L, L, device=x.device).masked_fill(~allowed, float("-inf"))
    cos, sin = rotary(x, positions[None])  # (1, L, Dr) each
    with torch.no_grad():
        return layer(x, (cos, sin), additive[None, None])


@pytest.mark.parametrize("start", [0, 9])
@pytest.mark.parametrize(("q_lora_rank", "bias"), [(12, False), (None, False), (12, True)])
def test_equals_deepseek_v3_attention(device, randn, start, q_lora_rank, bias):
    layer, rotary, config = _reference(device, q_lora_rank=q_lora_rank, bias=bias)
    ours = MultiHeadLatentAttention.from_transformers(layer, config).eval()
    B, L = 2, 7
    x = randn(B, L, D)
    positions = torch.arange(start, start + L, device=device)
    ref_out, ref_weights = _run_reference(layer, rotary, x, positions)
    rope = RotaryEmbedding(4, BASE, interleaved=True)(positions)  # the model's helper
    with torch.no_grad():
        out, weights = ours(x, causal_mask(L, device=device), rope=rope)
        standalone, _ = ours(x, causal_mask(L, device=device), positions=positions)
    tol = dict(atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out, ref_out, **tol)
    torch.testing.assert_close(weights, ref_weights, **tol)
    torch.testing.assert_close(standalone, out, atol=0, rtol=0)  # the same helper
    # the negative control: angles in the rotate-half layout give other outputs
    halves = RotaryEmbedding(4, BASE)(positions)
    with torch.no_grad():
        wrong, _ = ours(x, causal_mask(L, device=device), rope=halves)
    assert (wrong - ref_out).abs().max() > 1e-4


@pytest.mark.parametrize(("start", "chunks"), [(0, [4, 1, 1, 2]), (5, [1, 3, 1])])
def test_cached_decoding_equals_deepseek_v3(device, randn, start, chunks):
    """Chunks through our cache, at their positions, with the bottom-right causal mask,
    give the rows of the reference's one causal forward. The cache holds per token the
    normalised latent and the rotated shared key, nothing else."""
    layer, rotary, config = _reference(device)
    ours = MultiHeadLatentAttention.from_transformers(layer, config).eval()
    L = sum(chunks)
    x = randn(2, L, D)
    positions = torch.arange(start, start + L, device=device)
    ref_out, _ = _run_reference(layer, rotary, x, positions)
    cache, pieces, done = KVCache(2), [], 0
    with torch.no_grad():
        for n in chunks:
            mask = causal_mask(n, done + n, device=device) if n > 1 else None
            at = positions[done : done + n]
            out, weights = ours(x[:, done : done + n], mask, positions=at, cache=cache, layer=1)
            assert weights.shape == (2, H, n, done + n)
            pieces.append(out)
            done += n
    torch.testing.assert_close(torch.cat(pieces, dim=1), ref_out, atol=1e-5, rtol=1e-5)
    assert cache.layer_length(0) == 0
    latent, k_rope = cache.layers[1]
    assert latent.shape == (2, 1, L, 16) and k_rope.shape == (2, 1, L, 4)
    # what the reference computes before its attention: the same latents, and the same
    # rotated key up to the order it writes a pair's features in (evens, then odds)
    Dc = config.kv_lora_rank
    with torch.no_grad():
        compressed = layer.kv_a_proj_with_mqa(x)  # (B, L, Dc + Dr)
        ref_latent = layer.kv_a_layernorm(compressed[..., :Dc])
        cos, sin = rotary(x, positions[None])
        k = compressed[:, None, :, Dc:]
        ref_k, _ = deepseek.apply_rotary_pos_emb_interleave(k, k, cos, sin)
    torch.testing.assert_close(latent[:, 0], ref_latent)
    torch.testing.assert_close(k_rope[..., [0, 2, 1, 3]], ref_k)
    per_token = sum(t[0, 0, 0].numel() for t in cache.layers[1])
    assert per_token == config.kv_lora_rank + config.qk_rope_head_dim


@pytest.mark.parametrize(
    ("dtype", "tol"), [(torch.float32, 1e-5), (torch.float64, 1e-10)], ids=["f32", "f64"]
)
@pytest.mark.parametrize("q_lora_rank", [12, None])
def test_absorbed_equals_plain(device, randn, dtype, tol, q_lora_rank):
    """Folding the key up-projection into the query and applying the value
    up-projection after the weighted sum changes only the order of the products:
    prefill and decode steps, masked and not."""
    sizes = {**SIZES, "q_lora_rank": q_lora_rank}
    mla = MultiHeadLatentAttention(D, H, rope_base=BASE, bias=True, **sizes).to(device, dtype)
    x = randn(2, 9, D, dtype=dtype)
    plain_cache, absorbed_cache = KVCache(1), KVCache(1)
    rotary = RotaryEmbedding(4, BASE, interleaved=True)
    done = 0
    with torch.no_grad():
        for n in (5, 1, 1, 2):
            mask = causal_mask(n, done + n, device=device) if n > 1 else None
            step = dict(rope=rotary(torch.arange(done, done + n, device=device), dtype=dtype))
            chunk = x[:, done : done + n]
            plain, w_plain = mla(chunk, mask, cache=plain_cache, **step)
            absorbed, w_absorbed = mla(chunk, mask, cache=absorbed_cache, absorb=True, **step)
            torch.testing.assert_close(absorbed, plain, atol=tol, rtol=tol)
            torch.testing.assert_close(w_absorbed, w_plain, atol=tol, rtol=tol)
            done += n
        # with a padding-style float mask too
        bias = torch.zeros(2, 1, 1, 9, device=device, dtype=dtype)
        bias[1, ..., 6:] = float("-inf")
        positions = torch.arange(9, device=device)
        plain, _ = mla(x, bias, positions=positions)
        absorbed, _ = mla(x, bias, positions=positions, absorb=True)
    torch.testing.assert_close(absorbed, plain, atol=tol, rtol=tol)
    assert (plain[1] - mla(x, positions=positions)[0][1]).abs().max() > 1e-3  # it masks


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_latent_attention_equals_attention_over_rebuilt_keys_and_values(device, randn, dtype):
    """The function on its own: both ways equal SDPA over the keys [k_up c, k_rope] and
    values v_up c built by hand, head by head, with the default scale 1/sqrt(Dn + Dr)."""
    Bn, Hn, L, S, Dn, Dr, Dc, Dv = 2, 3, 4, 6, 5, 4, 7, 3
    q_nope, q_rope = randn(Bn, Hn, L, Dn, dtype=dtype), randn(Bn, Hn, L, Dr, dtype=dtype)
    latent, k_rope = randn(Bn, 1, S, Dc, dtype=dtype), randn(Bn, 1, S, Dr, dtype=dtype)
    k_up, v_up = randn(Hn, Dn, Dc, dtype=dtype), randn(Hn, Dv, Dc, dtype=dtype)
    mask = causal_mask(L, S, device=device)
    keys, values = [], []
    for h in range(Hn):
        keys.append(torch.cat([latent[:, 0] @ k_up[h].T, k_rope[:, 0]], dim=-1))  # (B, S, .)
        values.append(latent[:, 0] @ v_up[h].T)  # (B, S, Dv)
    q = torch.cat([q_nope, q_rope], dim=-1)
    expected = torch.nn.functional.scaled_dot_product_attention(
        q, torch.stack(keys, 1), torch.stack(values, 1), attn_mask=mask
    )
    tol = dict(atol=1e-10, rtol=1e-10) if dtype == torch.float64 else {}
    for absorb in (False, True):
        out, weights = latent_attention(
            q_nope, q_rope, latent, k_rope, k_up, v_up, mask, absorb=absorb
        )
        assert out.shape == (Bn, Hn, L, Dv) and weights.shape == (Bn, Hn, L, S)
        torch.testing.assert_close(out, expected, **tol)
    half, _ = latent_attention(q_nope, q_rope, latent, k_rope, k_up, v_up, mask, scale=0.5)
    assert (half - expected).abs().max() > 1e-3  # the scale is passed on


def test_latent_attention_errors(device, randn):
    q_nope, q_rope = randn(2, 3, 4, 5), randn(2, 3, 4, 4)
    latent, k_rope = randn(2, 1, 6, 7), randn(2, 1, 6, 4)
    k_up, v_up = randn(3, 5, 7), randn(3, 2, 7)
    args = [q_nope, q_rope, latent, k_rope, k_up, v_up]

    def call(**changed):
        names = ["q_nope", "q_rope", "latent", "k_rope", "k_up", "v_up"]
        given = [changed.pop(n, a) for n, a in zip(names, args, strict=True)]
        return latent_attention(*given, **changed)

    with pytest.raises(
        ValueError, match=r"k_up must be \(H, Dn, Dc\) = \(3, 5, 7\) .* got \(3, 5, 6\)"
    ):
        call(k_up=randn(3, 5, 6))
    with pytest.raises(ValueError, match=r"latent must be \(B, 1, S, Dc\) = \(2, 1, 6, 7\)"):
        call(latent=randn(2, 3, 6, 7))
    with pytest.raises(ValueError, match=r"k_rope must be \(B, 1, S, Dr\) = \(2, 1, 6, 4\)"):
        call(k_rope=randn(2, 1, 5, 4))
    with pytest.raises(ValueError, match=r"q_rope must be \(B, H, L, Dr\) = \(2, 3, 4, 4\)"):
        call(q_rope=randn(2, 3, 5, 4))
    with pytest.raises(ValueError, match=r"v_up must be 3-D \(H, Dv, Dc\), got 2-D"):
        call(v_up=randn(2, 7))
    with pytest.raises(TypeError, match="q_nope and k_up must have the same dtype"):
        call(k_up=k_up.double())
    with pytest.raises(TypeError, match="latent must be a floating-point tensor"):
        call(latent=latent.long())
    with pytest.raises(ValueError, match="is ambiguous"):
        call(mask=torch.ones(2, 4, 6, dtype=torch.bool, device=device))
    with pytest.raises(ValueError, match=r"does not broadcast .* = \(2, 3, 4, 6\)"):
        call(mask=torch.ones(4, 5, dtype=torch.bool, device=device))


def test_only_distances_count_and_order_is_seen(device, randn):
    """Moving every token by the same number of positions changes nothing (only
    distances count); without the rotary part the layer would not see order at all,
    and it does."""
    mla = MultiHeadLatentAttention(D, H, rope_base=BASE, **SIZES).to(device).eval()
    x = randn(1, 6, D)
    mask = causal_mask(6, device=device)
    with torch.no_grad():
        at0, _ = mla(x, mask, positions=torch.arange(6, device=device))
        at40, _ = mla(x, mask, positions=torch.arange(40, 46, device=device))
        perm = torch.tensor([2, 0, 1, 5, 3, 4], device=device)
        swapped, _ = mla(x[:, perm], positions=torch.arange(6, device=device))
        unmasked, _ = mla(x, positions=torch.arange(6, device=device))
    torch.testing.assert_close(at40, at0, atol=2e-5, rtol=1e-4)
    assert (swapped - unmasked[:, perm]).abs().max() > 1e-4  # order is seen


def test_sizes_of_the_projections_and_what_the_cache_holds(device, randn):
    mla = MultiHeadLatentAttention(D, H, **SIZES)
    assert mla.q_down.weight.shape == (12, D) and mla.q_up.weight.shape == (H * 12, 12)
    assert mla.kv_down.weight.shape == (16, D) and mla.k_rope_proj.weight.shape == (4, D)
    assert mla.k_up.shape == (H, 8, 16) and mla.v_up.shape == (H, 6, 16)
    assert mla.o_proj.weight.shape == (D, H * 6)
    direct = MultiHeadLatentAttention(D, H, **{**SIZES, "q_lora_rank": None})
    assert direct.q_proj.weight.shape == (H * 12, D) and not hasattr(direct, "q_down")
    assert "kv_lora_rank=16" in repr(mla)


def test_cache_bytes_per_token(device, randn):
    """What a cache holds after a forward through three layers: per token and layer
    the latent and the rotary key, whatever the number of heads."""
    for num_heads in (1, 4, 8):
        layers = [MultiHeadLatentAttention(D, num_heads, **SIZES).to(device) for _ in range(3)]
        cache, x = KVCache(3), randn(2, 5, D)
        with torch.no_grad():
            for i, layer in enumerate(layers):
                layer(x, positions=torch.arange(5, device=device), cache=cache, layer=i)
        held = sum(t.numel() * t.element_size() for stored in cache.layers for t in stored)
        assert held == 2 * 5 * latent_cache_bytes_per_token(3, 16, 4, x.element_size())
    with pytest.raises(ValueError, match="kv_lora_rank must be positive, got 0"):
        latent_cache_bytes_per_token(3, 0, 4, 2)
    with pytest.raises(TypeError, match="bytes_per_element must be an int"):
        latent_cache_bytes_per_token(3, 16, 4, 2.0)


def test_from_transformers_errors():
    layer, _, config = _reference("cpu")
    with pytest.raises(TypeError, match="layer must be a transformers DeepseekV3Attention"):
        MultiHeadLatentAttention.from_transformers(torch.nn.Linear(2, 2), config)
    config.rope_interleave = False
    with pytest.raises(ValueError, match="needs rope_interleave=True"):
        MultiHeadLatentAttention.from_transformers(layer, config)
    config.rope_interleave = True
    config.rope_parameters = {"rope_type": "yarn", "rope_theta": BASE, "factor": 4.0}
    with pytest.raises(ValueError, match="without rope scaling, got rope_type='yarn'"):
        MultiHeadLatentAttention.from_transformers(layer, config)


def test_errors(device, randn):
    with pytest.raises(ValueError, match="qk_rope_head_dim must be even, got 5"):
        MultiHeadLatentAttention(D, H, **{**SIZES, "qk_rope_head_dim": 5})
    with pytest.raises(ValueError, match="kv_lora_rank must be positive, got 0"):
        MultiHeadLatentAttention(D, H, **{**SIZES, "kv_lora_rank": 0})
    with pytest.raises(TypeError, match="q_lora_rank must be an int, got float"):
        MultiHeadLatentAttention(D, H, **{**SIZES, "q_lora_rank": 1.5})
    mla = MultiHeadLatentAttention(D, H, **SIZES).to(device)
    x = randn(2, 3, D)
    at = torch.arange(3, device=device)
    with pytest.raises(ValueError, match=r"expected d_model=32 \(x shape \(2, 3, 8\)\)"):
        mla(randn(2, 3, 8), positions=at)
    with pytest.raises(ValueError, match=r"x must be 3-D \(B, L, D\).*unsqueeze"):
        mla(randn(3, D), positions=at)
    with pytest.raises(TypeError, match="x must be a floating-point tensor"):
        mla(x.long(), positions=at)
    with pytest.raises(ValueError, match="pass the positions of the L tokens"):
        mla(x)
    rope = RotaryEmbedding(4, interleaved=True)(at)
    with pytest.raises(ValueError, match=r"either rope=.* or positions, not both"):
        mla(x, rope=rope, positions=at)
    with pytest.raises(TypeError, match=r"rope must be the pair \(cos, sin\)"):
        mla(x, rope=rope[0])
    with pytest.raises(ValueError, match=r"cos must be \(L, Dh\) = \(3, 4\)"):
        mla(x, rope=RotaryEmbedding(4, interleaved=True)(torch.arange(5, device=device)))
    with pytest.raises(ValueError, match=r"positions must be \(L,\) = \(3,\).* got shape \(4\)"):
        mla(x, positions=torch.arange(4, device=device))
    with pytest.raises(TypeError, match="integer positions"):
        mla(x, positions=at.float())
    with pytest.raises(TypeError, match="cache must be a KVCache, got dict"):
        mla(x, positions=at, cache={})
    with pytest.raises(ValueError, match=r"a 3-D mask \(2, 3, 3\) is ambiguous"):
        mla(x, torch.ones(2, 3, 3, dtype=torch.bool, device=device), positions=at)
    with pytest.raises(ValueError, match=r"does not broadcast .* \(B, H, L, S\) = \(2, 4, 3, 3\)"):
        mla(x, causal_mask(3, 5, device=device), positions=at)
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        mla(x, torch.ones(3, 3, dtype=torch.long, device=device), positions=at)
    with pytest.raises(TypeError, match="absorb must be True or False, got 1"):
        mla(x, positions=at, absorb=1)
    # a mask for S = cached + L is checked before the cache grows
    cache = KVCache(1)
    with torch.no_grad():
        mla(x, positions=at, cache=cache)
        with pytest.raises(ValueError, match=r"\(B, H, L, S\) = \(2, 4, 1, 4\)"):
            mla(x[:, :1], causal_mask(1, 3, device=device), positions=at[:1] + 3, cache=cache)
    assert cache.length == 3
    with pytest.raises(ValueError, match=r"layer must be in \[0, 1\), got 2"):
        mla(x, causal_mask(3, device=device), positions=at, cache=cache, layer=2)
