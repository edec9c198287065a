"""attention_src.kv_cache: cached decoding equals full recomputation (tokens and
logits), the bottom-right causal alignment, absolute positions, the projection
counts, the memory formula, and input checks."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attention_src import causal_mask
from attention_src.decoder import DecoderOnlyLM
from attention_src.kv_cache import (
    KVCache,
    cached_attention,
    count_kv_projections,
    forward_with_cache,
    kv_cache_bytes_per_token,
)
from attention_src.multi_head import split_heads

from helpers import D_MODEL as D
from helpers import HEADS as H
from helpers import LAYERS as N_LAYERS
from helpers import random_tokens, tiny_decoder

V, MAX_LEN = 13, 24  # the tiny decoder's vocabulary and longest sequence


def _model(device, seed=0, **kwargs) -> DecoderOnlyLM:
    torch.manual_seed(seed)
    return tiny_decoder(device, V, MAX_LEN, **kwargs)


def _tokens(B, L, device, gen) -> torch.Tensor:
    return random_tokens(V, B, L, device, gen)


# --------------------------------------------------------------------------- equality


@pytest.mark.parametrize(
    ("seed", "B", "L0", "new"), [(0, 1, 1, 10), (1, 1, 5, 8), (2, 3, 4, 12), (3, 2, 16, 8)]
)
def test_cached_generation_equals_recomputation(device, gen, seed, B, L0, new):
    model = _model(device, seed)
    prompt = _tokens(B, L0, device, gen)
    with_cache = model.generate(prompt, new, use_cache=True)
    without = model.generate(prompt, new, use_cache=False)
    assert with_cache.shape == (B, L0 + new)
    assert torch.equal(with_cache, without)
    assert torch.equal(model.generate(prompt, new), with_cache)  # the default uses the cache


def test_cached_logits_match_the_full_forward(device, gen):
    model = _model(device)
    tokens = _tokens(2, 10, device, gen)
    full, _ = model(tokens)  # (2, 10, V)
    cache = KVCache(N_LAYERS)
    chunks = [forward_with_cache(model, tokens[:, :4], cache)]  # the prompt, one chunk
    chunks += [forward_with_cache(model, tokens[:, 4:7], cache)]  # a chunk of three
    chunks += [forward_with_cache(model, tokens[:, t : t + 1], cache) for t in range(7, 10)]
    torch.testing.assert_close(torch.cat(chunks, dim=1), full)
    assert cache.length == 10
    for k, v in zip(cache.keys, cache.values, strict=True):
        assert k.shape == v.shape == (2, H, 10, D // H)


def test_positions_are_absolute(device, gen):
    """Feeding the new token at position 0 (a classic bug) changes the logits."""
    model = _model(device)
    tokens = _tokens(1, 6, device, gen)
    full, _ = model(tokens)
    cache = KVCache(N_LAYERS)
    forward_with_cache(model, tokens[:, :5], cache)
    right = forward_with_cache(model, tokens[:, 5:], cache)
    torch.testing.assert_close(right[:, 0], full[:, 5])
    # the same step with position 0: rebuild the cache and shift positions by hand
    cache = KVCache(N_LAYERS)
    forward_with_cache(model, tokens[:, :5], cache)
    x = model.token_embedding(tokens[:, 5:]) + model.position_embedding.weight[:1]
    for layer, block in enumerate(model.blocks):
        x = x + cached_attention(block.self_attn, block.norm1(x), cache, layer)
        x = x + block.ff(block.norm2(x))
    wrong = model.head(model.final_norm(x))
    assert not torch.allclose(wrong[:, 0], full[:, 5])


def test_top_left_is_causal_is_wrong_and_bottom_right_is_right(device, randn):
    q, k, v = randn(1, 2, 3, 4), randn(1, 2, 7, 4), randn(1, 2, 7, 4)  # 3 new queries, 7 keys
    full_q = torch.cat([randn(1, 2, 4, 4), q], dim=2)  # queries for all 7 positions
    reference = F.scaled_dot_product_attention(full_q, k, v, is_causal=True)[:, :, -3:]
    right = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(3, 7, device=device))
    torch.testing.assert_close(right, reference)
    top_left = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert not torch.allclose(top_left, reference)
    one = F.scaled_dot_product_attention(q[:, :, -1:], k, v)  # a single newest query: no mask
    torch.testing.assert_close(one, reference[:, :, -1:])
    first_key_only = F.scaled_dot_product_attention(q[:, :, -1:], k, v, is_causal=True)
    torch.testing.assert_close(first_key_only, v[:, :, :1])  # sees key 0 alone


def test_cached_attention_equals_mha_on_the_whole_sequence(device, randn):
    model = _model(device)
    attn = model.blocks[0].self_attn
    x = randn(2, 6, D)
    full, _ = attn(x, mask=causal_mask(6, device=device))
    cache = KVCache(1)
    first = cached_attention(attn, x[:, :4], cache, 0)
    rest = [cached_attention(attn, x[:, t : t + 1], cache, 0) for t in (4, 5)]
    torch.testing.assert_close(torch.cat([first, *rest], dim=1), full)
    torch.testing.assert_close(cache.keys[0], split_heads(attn.k_proj(x), H))


# --------------------------------------------------------------------------- counts, memory


def test_projection_counts(device, gen):
    model = _model(device)
    B, L0, new = 2, 5, 4
    prompt = _tokens(B, L0, device, gen)
    without = count_kv_projections(model, prompt, new, use_cache=False)
    with_cache = count_kv_projections(model, prompt, new, use_cache=True)
    assert without == [B * N_LAYERS * (L0 + i) for i in range(new)]
    assert with_cache == [B * N_LAYERS * L0] + [B * N_LAYERS] * (new - 1)


def test_bytes_per_token():
    assert kv_cache_bytes_per_token(4, 256, 4) == 2 * 4 * 256 * 4
    with pytest.raises(ValueError, match="d_model"):
        kv_cache_bytes_per_token(4, 0, 4)


# --------------------------------------------------------------------------- behaviour, errors


def test_zero_new_tokens_and_no_gradients(device, gen):
    model = _model(device)
    prompt = _tokens(2, 3, device, gen)
    assert torch.equal(model.generate(prompt, 0, use_cache=True), prompt)
    assert not model.generate(prompt, 3, use_cache=True).requires_grad


def test_max_len_is_respected(device, gen):
    model = _model(device)
    message = rf"prompt length 20 \+ max_new_tokens 5 = 25 exceeds max_len={MAX_LEN}"
    with pytest.raises(ValueError, match=message):
        model.generate(_tokens(1, 20, device, gen), 5, use_cache=True)
    out = model.generate(_tokens(1, 20, device, gen), 4, use_cache=True)  # exactly max_len
    assert out.shape == (1, MAX_LEN)


def test_use_cache_must_be_bool(device, gen):
    model = _model(device)
    with pytest.raises(TypeError, match="use_cache must be a bool"):
        model.generate(_tokens(1, 2, device, gen), 2, use_cache=1)


def test_non_causal_model_recomputes(device, gen):
    model = _model(device, causal=False)
    prompt = _tokens(2, 4, device, gen)
    assert torch.equal(
        model.generate(prompt, 5, use_cache=True), model.generate(prompt, 5, use_cache=False)
    )


def test_kv_cache_rejects_bad_layers():
    with pytest.raises(ValueError, match="num_layers"):
        KVCache(0)
