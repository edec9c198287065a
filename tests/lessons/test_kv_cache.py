"""attention_src.kv_cache: cached decoding equals full recomputation (tokens and
logits, through the model's own ``forward(tokens, cache=...)``), the bottom-right causal
alignment, absolute positions, a cached layer with ``mask=None`` attending to every key
(no mask invented), the projection counts, the memory formula, the cache as a store of
any per-position tensors, and input checks."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attention_src import causal_mask
from attention_src.decoder import (
    DecoderOnlyLM,
    forward_with_cache,
    generate_with_cache,
    greedy_decode,
)
from attention_src.kv_cache import (
    KVCache,
    cache_start,
    cached_attention,
    count_kv_projections,
    kv_cache_bytes_per_token,
)
from attention_src.multi_head import split_heads
from attention_src.scaled_dot_product import scaled_dot_product_attention

from .helpers import D_MODEL as D
from .helpers import HEADS as H
from .helpers import LAYERS as N_LAYERS
from .helpers import random_tokens, tiny_decoder

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
    cache = model.new_cache()
    chunks = [model(tokens[:, :4], cache=cache)[0]]  # the prompt, one chunk
    chunks += [model(tokens[:, 4:7], cache=cache)[0]]  # a chunk of three
    chunks += [model(tokens[:, t : t + 1], cache=cache)[0] for t in range(7, 10)]
    torch.testing.assert_close(torch.cat(chunks, dim=1), full)
    assert cache.length == 10
    for k, v in zip(cache.keys, cache.values, strict=True):
        assert k.shape == v.shape == (2, H, 10, D // H)


def test_the_earlier_names_are_the_models_own_cached_forward_and_decode(device, gen):
    """forward_with_cache and generate_with_cache keep their names and results."""
    model = _model(device)
    tokens = _tokens(2, 9, device, gen)
    cache = model.new_cache()
    first = forward_with_cache(model, tokens[:, :5], cache)  # (2, 5, V)
    rest = forward_with_cache(model, tokens[:, 5:], cache)  # (2, 4, V)
    torch.testing.assert_close(torch.cat([first, rest], dim=1), model(tokens)[0])
    assert cache.length == 9
    generated = generate_with_cache(model, tokens[:, :3], 6)
    assert generated.shape == (2, 9)
    assert torch.equal(generated, greedy_decode(model, tokens[:, :3], 6, use_cache=False))


def test_positions_are_absolute(device, gen):
    """Feeding the new token at position 0 (a classic bug) changes the logits."""
    model = _model(device)
    tokens = _tokens(1, 6, device, gen)
    full, _ = model(tokens)
    cache = KVCache(N_LAYERS)
    model(tokens[:, :5], cache=cache)
    right, _ = model(tokens[:, 5:], cache=cache)
    torch.testing.assert_close(right[:, 0], full[:, 5])
    # the same step with position 0: rebuild the cache and run the blocks by hand
    cache = KVCache(N_LAYERS)
    model(tokens[:, :5], cache=cache)
    x = model.token_embedding(tokens[:, 5:]) + model.position_embedding.weight[:1]
    for layer, block in enumerate(model.blocks):
        x, _ = block(x, cache=cache, layer=layer)  # one query: no mask needed
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
    full, full_weights = attn(x, mask=causal_mask(6, device=device))
    cache = KVCache(1)
    first, _ = cached_attention(attn, x[:, :4], causal_mask(4, device=device), cache=cache)
    rest = [cached_attention(attn, x[:, t : t + 1], cache=cache)[0] for t in (4, 5)]
    torch.testing.assert_close(torch.cat([first, *rest], dim=1), full)
    torch.testing.assert_close(cache.keys[0], split_heads(attn.k_proj(x), H))
    # a chunk of two after four cached keys, with the bottom-right mask: the last rows
    cache = KVCache(1)
    cached_attention(attn, x[:, :4], causal_mask(4, device=device), cache=cache)
    out, weights = cached_attention(attn, x[:, 4:], causal_mask(2, 6, device=device), cache=cache)
    torch.testing.assert_close(out, full[:, 4:])
    torch.testing.assert_close(weights, full_weights[:, :, 4:])


def test_cached_attention_without_a_mask_attends_to_every_key(device, randn):
    """mask=None means no mask, with a cache too: the layer never invents a causal one."""
    model = _model(device)
    attn = model.blocks[0].self_attn
    x = randn(2, 6, D)
    cache = KVCache(1)
    cached_attention(attn, x[:, :3], cache=cache)
    out, weights = cached_attention(attn, x[:, 3:], cache=cache)  # 3 queries, 6 keys
    assert weights.shape == (2, H, 3, 6)
    assert (weights > 0).all()  # the first new query also weighs the two after it
    q = split_heads(attn.q_proj(x[:, 3:]), H)
    k, v = split_heads(attn.k_proj(x), H), split_heads(attn.v_proj(x), H)
    expected, _ = scaled_dot_product_attention(q, k, v)  # no mask at all
    torch.testing.assert_close(weights, F.softmax(q @ k.transpose(-2, -1) / (D // H) ** 0.5, -1))
    torch.testing.assert_close(out, attn.out_proj(expected.transpose(1, 2).flatten(2)))
    causal, _ = scaled_dot_product_attention(q, k, v, causal_mask(3, 6, device=device))
    assert not torch.allclose(expected, causal)  # so a mask would have shown


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


def test_the_cache_stores_any_per_position_tensors(device, randn):
    """One store for every cached path: (B, G, S, Dh) keys and values, or a single
    (B, S, width) tensor per position (a compressed latent, say), grown along S."""
    cache = KVCache(2)
    k, v = cache.append(0, randn(1, 2, 3, 4), randn(1, 2, 3, 4))
    assert k.shape == v.shape == (1, 2, 3, 4) and cache.layer_length(0) == 3
    assert cache.length == 0  # the last layer has nothing yet
    (latent,) = cache.append(1, randn(1, 3, 8))
    (latent,) = cache.append(1, randn(1, 2, 8))
    assert latent.shape == (1, 5, 8) and cache.length == 5
    assert cache.keys[1] is latent and cache.values[1] is None
    with pytest.raises(ValueError, match="layer 1 holds 1 tensors per position, got 2"):
        cache.append(1, randn(1, 1, 8), randn(1, 1, 8))
    with pytest.raises(ValueError, match="append at least one tensor"):
        cache.append(0)
    with pytest.raises(TypeError, match="append takes tensors, got list as tensor 1"):
        cache.append(0, randn(1, 2, 1, 4), [1.0])
    with pytest.raises(ValueError, match="must have a position dimension"):
        KVCache(1).append(0, randn(4))
    with pytest.raises(TypeError, match="layer must be an int, got float"):
        cache.append(0.0, randn(1, 2, 1, 4), randn(1, 2, 1, 4))


def test_cache_start_and_bad_caches(device, gen):
    model = _model(device)
    tokens = _tokens(1, 5, device, gen)
    cache = model.new_cache()
    assert cache_start(cache, N_LAYERS, 5, MAX_LEN) == 0
    model(tokens, cache=cache)
    assert cache_start(cache, N_LAYERS, 2, MAX_LEN) == 5
    assert cache_start(None, N_LAYERS, 2, MAX_LEN) == 0
    with pytest.raises(TypeError, match="cache must be a KVCache, got dict"):
        model(tokens, cache={})
    with pytest.raises(ValueError, match=r"the cache has 1 layers, the model 2"):
        model(tokens, cache=KVCache(1))
    message = rf"tokens of length 20 after 5 cached positions need 25 .* max_len={MAX_LEN}"
    with pytest.raises(ValueError, match=message):
        model(_tokens(1, 20, device, gen), cache=cache)
    attn = model.blocks[0].self_attn
    with pytest.raises(TypeError, match="attn must be a MultiHeadAttention"):
        cached_attention(model.blocks[0], torch.zeros(1, 1, D, device=device), cache=cache)
    with pytest.raises(ValueError, match=rf"x has 3 features per token, expected d_model={D}"):
        cached_attention(attn, torch.zeros(1, 1, 3, device=device), cache=KVCache(1))
