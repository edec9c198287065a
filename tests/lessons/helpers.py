"""Helpers several test files share: shapes and scenarios of the multi-head comparisons,
parameters made non-trivial, padded lengths, a tiny decoder-only LM, and the causality
check of an attention layer. (Fixtures live in tests/conftest.py; these are plain functions
and constants, imported as ``from .helpers import ...``.)"""

from __future__ import annotations

import torch
from torch import nn

from attention_src import DecoderOnlyLM, causal_mask, padding_mask

# (B, L, S, D, H); S is the context length for cross-attention
MHA_SHAPES = [(2, 5, 7, 8, 2), (1, 4, 4, 12, 3), (3, 6, 2, 16, 4), (2, 3, 9, 6, 1), (4, 1, 5, 8, 8)]
SCENARIOS = ["self", "cross", "padding", "causal", "cross_padding"]


def mha_scenario(randn, device, B: int, L: int, S: int, D: int, scenario: str):
    """The inputs of one comparison with nn.MultiheadAttention in ``scenario``:
    ``(x, context, mask, key_padding_mask, attn_mask)``. ``context`` is None for
    self-attention; ``mask`` is ours (True = may attend), the last two are torch's
    (True = ignore), each None where the scenario has none."""
    x = randn(B, L, D)
    cross = scenario.startswith("cross")
    context = randn(B, S, D) if cross else None
    S_eff = S if cross else L
    mask = key_padding_mask = attn_mask = None
    if scenario.endswith("padding"):
        mask = padding_mask(padded_lengths(B, S_eff, device), S_eff)  # (B, 1, 1, S)
        key_padding_mask = ~mask[:, 0, 0, :]  # (B, S)
    elif scenario == "causal":
        mask = causal_mask(L, device=device)  # (L, L)
        attn_mask = ~mask
    return x, context, mask, key_padding_mask, attn_mask


def run_nn_mha(mha: nn.MultiheadAttention, x, context, key_padding_mask, attn_mask, **kwargs):
    """``mha`` on ``x`` ``(B, L, D)`` attending over ``context`` (``x`` when None), in
    its own layout (``batch_first`` or not); returns ``(out (B, L, D), weights)``."""
    ctx = x if context is None else context
    q, kv = (x, ctx) if mha.batch_first else (x.transpose(0, 1), ctx.transpose(0, 1))
    out, weights = mha(q, kv, kv, key_padding_mask=key_padding_mask, attn_mask=attn_mask, **kwargs)
    return (out if mha.batch_first else out.transpose(0, 1)), weights


def randomize(module: nn.Module, *, bias_std: float = 0.5, norms: bool = False) -> nn.Module:
    """Give the biases non-zero values, N(0, bias_std) (torch initialises them to 0), and
    with ``norms`` the LayerNorm scales values in [0.5, 1.5] (torch starts them at 1), so
    that a bias or norm that is dropped, swapped or misplaced shows up in the outputs."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if norms and "norm" in name and name.endswith("weight"):
                p.uniform_(0.5, 1.5)
            elif name.endswith("bias"):
                p.normal_(0.0, bias_std)
    return module


def padded_lengths(B: int, S: int, device, cut: int = 1) -> torch.Tensor:
    """Every other sequence padded (sequence i loses ``cut + i`` positions), each keeps at
    least one real token."""
    return torch.tensor([max(1, S - cut - i) if i % 2 == 0 else S for i in range(B)], device=device)


# A tiny decoder-only LM: the width, heads, layers and feed-forward size the decoder and
# KV-cache tests share; each file picks its vocabulary and maximum length.
D_MODEL, HEADS, LAYERS, D_FF = 16, 4, 2, 32


def tiny_decoder(device, vocab_size: int, max_len: int, **kwargs) -> DecoderOnlyLM:
    """``DecoderOnlyLM(vocab_size, D_MODEL, HEADS, LAYERS, D_FF, max_len, **kwargs)`` on
    ``device``, in eval mode."""
    model = DecoderOnlyLM(vocab_size, D_MODEL, HEADS, LAYERS, D_FF, max_len, **kwargs)
    return model.to(device).eval()


def random_tokens(vocab_size: int, B: int, L: int, device, gen) -> torch.Tensor:
    """``(B, L)`` token ids in ``[0, vocab_size)`` drawn from ``gen``."""
    return torch.randint(vocab_size, (B, L), generator=gen, device=device)


def assert_ignores_future_tokens(layer: nn.Module, randn, t: int = 2, L: int = 6, D: int = 8):
    """With a causal mask, the outputs at positions 0..t of a self-attention ``layer``
    (called as ``layer(x, mask=...)``, returning ``(out, weights)``) do not change when the
    later tokens do; without the mask they do (the negative control)."""
    x = randn(2, L, D)
    x2 = x.clone()
    x2[:, t + 1 :] = randn(2, L - t - 1, D) * 5
    mask = causal_mask(L, device=x.device)
    torch.testing.assert_close(
        layer(x2, mask=mask)[0][:, : t + 1], layer(x, mask=mask)[0][:, : t + 1]
    )
    assert (layer(x2)[0][:, : t + 1] - layer(x)[0][:, : t + 1]).abs().max() > 1e-3
