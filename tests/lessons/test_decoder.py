"""attention_src.decoder: the decoder-only LM (shapes, causality, generation, training),
its block against nn.TransformerEncoderLayer with a causal mask, CausalLM.generate (the
plain loop of the causal-attention chapter) against greedy_decode (the full loop of the
KV-cache chapter: its two limits, max_new_tokens and the end token). (The copy task and
its training: tests/lessons/test_copy_task.py.)"""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

from attention_src import MultiHeadAttention, causal_mask
from attention_src.decoder import (
    CausalBlock,
    CausalLM,
    DecoderBlock,
    DecoderOnlyLM,
    greedy_decode,
)

from .helpers import D_FF, D_MODEL, random_tokens, tiny_decoder
from .helpers import HEADS as H
from .helpers import LAYERS as N_LAYERS

V, MAX_LEN = 11, 12  # the tiny decoder's vocabulary and longest sequence


def _model(device, **kwargs) -> DecoderOnlyLM:
    return tiny_decoder(device, V, MAX_LEN, **kwargs)


def _tokens(B, L, device, gen) -> torch.Tensor:
    return random_tokens(V, B, L, device, gen)


# --------------------------------------------------------------------------- forward


@pytest.mark.parametrize(("B", "L"), [(1, 1), (2, 5), (3, MAX_LEN)])
def test_forward_shapes_and_weights(device, gen, B, L):
    model = _model(device)
    logits, weights = model(_tokens(B, L, device, gen))
    assert logits.shape == (B, L, V)
    assert len(weights) == N_LAYERS
    for w in weights:
        assert w.shape == (B, H, L, L)
        torch.testing.assert_close(w.sum(dim=-1), torch.ones(B, H, L, device=device))
        assert torch.all(w.triu(diagonal=1) == 0), "a query attended to a later key"


def test_future_tokens_do_not_change_past_logits(device, gen):
    model = _model(device)
    tokens = _tokens(2, 10, device, gen)
    t = 6
    changed = tokens.clone()
    changed[:, t + 1 :] = (changed[:, t + 1 :] + 1 + _tokens(2, 3, device, gen)) % V
    assert not torch.equal(changed, tokens)
    before, _ = model(tokens)
    after, _ = model(changed)
    torch.testing.assert_close(after[:, : t + 1], before[:, : t + 1])
    assert not torch.allclose(after[:, t + 1 :], before[:, t + 1 :])


def test_without_the_mask_the_future_leaks(device, gen):
    model = _model(device, causal=False)
    tokens = _tokens(2, 10, device, gen)
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % V
    before, weights = model(tokens)
    after, _ = model(changed)
    assert not torch.allclose(after[:, 0], before[:, 0])  # position 0 saw the last token
    assert (weights[0].triu(diagonal=1) > 0).any()


def test_full_pass_equals_running_each_prefix(device, gen):
    model = _model(device)
    tokens = _tokens(3, 8, device, gen)
    full, _ = model(tokens)
    one_by_one = torch.stack([model(tokens[:, : t + 1])[0][:, -1] for t in range(8)], dim=1)
    torch.testing.assert_close(one_by_one, full)


def test_batch_items_are_independent(device, gen):
    model = _model(device)
    tokens = _tokens(3, 7, device, gen)
    together, _ = model(tokens)
    alone, _ = model(tokens[1:2])
    torch.testing.assert_close(together[1:2], alone)


def test_learned_positions_make_order_matter(device, gen):
    model = _model(device)
    tokens = torch.tensor([[1, 2, 3, 4]], device=device)
    a, _ = model(tokens)
    b, _ = model(tokens.flip(1))
    assert not torch.allclose(a[:, -1], b[:, -1])


def test_gradients_reach_every_parameter(device, gen):
    model = _model(device).train()
    logits, _ = model(_tokens(2, 6, device, gen))
    logits.square().mean().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        if name.startswith("position_embedding"):
            assert p.grad[:6].abs().sum() > 0 and p.grad[6:].abs().sum() == 0
        else:
            assert p.grad.abs().sum() > 0, name


# --------------------------------------------------------------------------- block vs torch


@pytest.mark.parametrize(("B", "L", "D_", "H_", "d_ff"), [(2, 5, 8, 2, 16), (1, 7, 12, 3, 8)])
def test_block_matches_torch_prenorm_layer_with_causal_mask(randn, device, B, L, D_, H_, d_ff):
    layer = nn.TransformerEncoderLayer(
        D_, H_, d_ff, dropout=0.0, batch_first=True, norm_first=True
    ).to(device)
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if name.endswith("bias"):
                p.normal_(0.0, 0.3)
            elif "norm" in name:
                p.uniform_(0.5, 1.5)
    layer.eval()
    block = DecoderBlock(D_, H_, d_ff).to(device).eval()
    block.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
    block.ff.linear1.load_state_dict(layer.linear1.state_dict())
    block.ff.linear2.load_state_dict(layer.linear2.state_dict())
    block.norm1.load_state_dict(layer.norm1.state_dict())
    block.norm2.load_state_dict(layer.norm2.state_dict())
    x = randn(B, L, D_)
    mask = causal_mask(L, device=device)
    ours, weights = block(x, mask)
    theirs = layer(x, src_mask=~mask)  # torch: True = may NOT attend
    torch.testing.assert_close(ours, theirs)
    assert weights.shape == (B, H_, L, L)


# --------------------------------------------------------------------------- generate


def test_generate_length_prompt_and_greedy_choice(device, gen):
    model = _model(device)
    prompt = _tokens(2, 3, device, gen)
    out = model.generate(prompt, 5)
    assert out.shape == (2, 8)
    assert out.dtype == torch.long
    assert torch.equal(out[:, :3], prompt)
    logits, _ = model(out[:, :-1])  # causal: one pass re-derives every greedy step
    assert torch.equal(logits[:, 2:].argmax(dim=-1), out[:, 3:])


def test_generate_is_deterministic_and_zero_steps_returns_prompt(device, gen):
    model = _model(device)
    prompt = _tokens(3, 4, device, gen)
    assert torch.equal(model.generate(prompt, 6), model.generate(prompt, 6))
    assert torch.equal(model.generate(prompt, 0), prompt)


def test_generate_does_not_track_gradients(device, gen):
    model = _model(device)
    out = model.generate(_tokens(1, 2, device, gen), 3)
    assert not out.requires_grad


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_decode_stops_at_max_new_tokens(device, gen, use_cache):
    model = _model(device)
    assert model.eos_token_id is None  # the copy-task model has no end token
    prompt = _tokens(2, 3, device, gen)
    longer = greedy_decode(model, prompt, 7, use_cache=use_cache)
    for n in (1, 4, 6):
        out = greedy_decode(model, prompt, n, use_cache=use_cache)
        assert out.shape == (2, 3 + n)  # exactly n new tokens, not one more
        assert torch.equal(out, longer[:, : 3 + n])  # the same steps, cut at n
    assert torch.equal(model.generate(prompt, 7, use_cache=use_cache), longer)


def _first(row: torch.Tensor, token: int) -> int:
    """Index of the first ``token`` in ``row`` (its length if there is none)."""
    hits = (row == token).nonzero()
    return int(hits[0]) if len(hits) else row.numel()


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_decode_stops_at_the_end_token(device, gen, use_cache):
    model = _model(device)
    prompt = _tokens(2, 3, device, gen)
    free = greedy_decode(model, prompt, 8, use_cache=use_cache)[:, 3:]  # (2, 8)
    eos = int(free[0, 2])  # sequence 0 writes it by step 2
    out = greedy_decode(model, prompt, 8, use_cache=use_cache, eos_token_id=eos)
    new = out[:, 3:]
    stops = [_first(row, eos) for row in free]  # where each sequence ends
    assert stops[0] <= 2
    assert new.size(1) == min(8, max(stops) + 1)  # stopped when both had ended
    for row, free_row, stop in zip(new, free, stops, strict=True):
        assert torch.equal(row[: stop + 1], free_row[: stop + 1])  # same tokens, then
        assert (row[stop:] == eos).all()  # only the end token
    alone = greedy_decode(model, prompt[:1], 8, use_cache=use_cache, eos_token_id=eos)
    assert alone.shape == (1, 3 + stops[0] + 1)  # one sequence: ends at its end token
    # the model's own end token is the default
    model.eos_token_id = eos
    assert torch.equal(model.generate(prompt[:1], 8, use_cache=use_cache), alone)
    assert torch.equal(greedy_decode(model, prompt[:1], 8, use_cache=use_cache), alone)


# --------------------------------------------------------------------------- errors


def test_sequence_longer_than_max_len_raises(device, gen):
    model = _model(device)
    with pytest.raises(ValueError, match=r"length 13.*max_len=12"):
        model(_tokens(1, MAX_LEN + 1, device, gen))
    message = r"prompt length 10 \+ max_new_tokens 3 = 13 exceeds max_len=12"
    with pytest.raises(ValueError, match=message):
        model.generate(_tokens(1, 10, device, gen), 3)


def test_bad_tokens_raise(device):
    model = _model(device)
    with pytest.raises(TypeError, match="tokens must be integer token ids"):
        model(torch.zeros(1, 3, device=device))
    with pytest.raises(ValueError, match=r"tokens must be 2-D \(B, L\), got 1-D"):
        model(torch.zeros(3, dtype=torch.long, device=device))
    with pytest.raises(ValueError, match=r"ids must be in \[0, 11\), got values from 0 to 11"):
        model(torch.tensor([[0, 11]], device=device))
    with pytest.raises(ValueError, match="at least one token"):
        model(torch.zeros(1, 0, dtype=torch.long, device=device))
    with pytest.raises(TypeError, match=r"tokens must be a torch\.Tensor"):
        model([[1, 2]])


def test_bad_generate_arguments_raise(device):
    model = _model(device)
    prompt = torch.zeros(1, 2, dtype=torch.long, device=device)
    with pytest.raises(ValueError, match="max_new_tokens must be >= 0, got -1"):
        model.generate(prompt, -1)
    with pytest.raises(TypeError, match="max_new_tokens must be an int, got float"):
        model.generate(prompt, 2.0)
    with pytest.raises(TypeError, match="prompt must be integer token ids"):
        model.generate(prompt.float(), 2)
    with pytest.raises(ValueError, match=r"eos_token_id must be None or a token id in \[0, 11\)"):
        model.generate(prompt, 2, eos_token_id=11)
    with pytest.raises(TypeError, match="eos_token_id must be None or an int token id, got str"):
        greedy_decode(model, prompt, 2, eos_token_id="2")
    with pytest.raises(TypeError, match="use_cache must be a bool"):
        greedy_decode(model, prompt, 2, use_cache=None)
    leaky = _model(device, causal=False)
    with pytest.raises(ValueError, match="a non-causal model cannot read a cache"):
        leaky(prompt, cache=leaky.new_cache())


def test_bad_constructor_arguments_raise():
    with pytest.raises(ValueError, match=r"d_model \(10\) must be divisible by num_heads \(3\)"):
        DecoderOnlyLM(5, 10, 3, 1, 8, 4)
    with pytest.raises(ValueError, match="max_len must be positive, got 0"):
        DecoderOnlyLM(5, 8, 2, 1, 8, 0)
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        DecoderOnlyLM(5.0, 8, 2, 1, 8, 4)


# --------------------------------------------------------------------------- CausalLM


def test_causal_lm_has_no_cache(device, gen):
    """The causal-attention chapter's model knows nothing of the KV cache (a later
    chapter's): no ``new_cache``, no ``cache`` or ``use_cache`` argument; with the same
    weights it computes and writes what ``DecoderOnlyLM`` does."""
    for cls, method in [(CausalLM, "forward"), (CausalLM, "generate"), (CausalBlock, "forward")]:
        params = inspect.signature(getattr(cls, method)).parameters
        assert not {"cache", "use_cache", "layer"} & set(params), (cls, method)
    assert not hasattr(CausalLM, "new_cache")
    cached = _model(device)
    plain = CausalLM(V, D_MODEL, H, N_LAYERS, D_FF, MAX_LEN).to(device).eval()
    plain.load_state_dict(cached.state_dict())  # the same parameter names
    tokens = _tokens(2, 7, device, gen)
    with torch.no_grad():
        torch.testing.assert_close(plain(tokens)[0], cached(tokens)[0])
    prompt = tokens[:, :3]
    assert torch.equal(plain.generate(prompt, 6), cached.generate(prompt, 6))
    with pytest.raises(ValueError, match="CausalLM has no new_cache"):
        greedy_decode(plain, prompt, 2)  # use_cache=True needs a cache


@pytest.mark.parametrize(("B", "L0", "new"), [(1, 1, 9), (3, 4, 7), (2, 5, 0)])
def test_the_plain_loop_writes_what_greedy_decode_writes(device, gen, B, L0, new):
    """The causal-attention chapter's ``CausalLM.generate``, a loop of a few lines
    without a cache, writes the tokens of the full function, ``greedy_decode``, with
    and without its cache (the same weights in a ``DecoderOnlyLM``)."""
    cached = _model(device)
    plain = CausalLM(V, D_MODEL, H, N_LAYERS, D_FF, MAX_LEN).to(device).eval()
    plain.load_state_dict(cached.state_dict())
    prompt = _tokens(B, L0, device, gen)
    loop = plain.generate(prompt, new)
    assert loop.shape == (B, L0 + new) and not loop.requires_grad
    assert torch.equal(loop, greedy_decode(plain, prompt, new, use_cache=False))
    assert torch.equal(loop, greedy_decode(cached, prompt, new, use_cache=True))
    assert torch.equal(loop, greedy_decode(cached, prompt, new, use_cache=False))
    # a mutant loop that appends the first position's choice writes other tokens
    if new:
        wrong = prompt
        for _ in range(new):
            first = plain(wrong)[0][:, 0].argmax(dim=-1)
            wrong = torch.cat([wrong, first[:, None]], dim=1)
        assert not torch.equal(wrong, loop)


def test_the_plain_loop_checks_its_arguments(device):
    """``CausalLM.generate`` refuses what ``greedy_decode`` refuses, with its messages,
    before any step runs."""
    plain = CausalLM(V, D_MODEL, H, N_LAYERS, D_FF, MAX_LEN).to(device).eval()
    prompt = torch.zeros(1, 2, dtype=torch.long, device=device)
    message = r"prompt length 10 \+ max_new_tokens 3 = 13 exceeds max_len=12"
    with pytest.raises(ValueError, match=message):
        plain.generate(torch.zeros(1, 10, dtype=torch.long, device=device), 3)
    with pytest.raises(ValueError, match="max_new_tokens must be >= 0, got -1"):
        plain.generate(prompt, -1)
    with pytest.raises(TypeError, match="max_new_tokens must be an int, got float"):
        plain.generate(prompt, 2.0)
    with pytest.raises(TypeError, match="prompt must be integer token ids"):
        plain.generate(prompt.float(), 2)
