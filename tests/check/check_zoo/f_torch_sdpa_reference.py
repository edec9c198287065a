"""Published, correct for masks of shape (L, S), raising for batched ones (it fills an (L, S)
bias in place): the reference implementation in PyTorch's documentation of
F.scaled_dot_product_attention: a float bias built from a bool mask (True = may attend) or
added as given, is_causal, scale, enable_gqa; torch.dropout always applied (dropout_p=0.).

Source: PyTorch 2.13.0, torch/nn/functional.py, the docstring of scaled_dot_product_attention;
BSD-3-Clause licence, (c) the PyTorch contributors. Kept as published; ``attention`` is the
factory: it passes the checker's mask as attn_mask.
"""

# ruff: noqa
# fmt: off
import math

import torch

EXPECTED = {"shape"}


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
        is_causal=False, scale=None, enable_gqa=False) -> torch.Tensor:
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        assert attn_mask is None
        temp_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=0)
        attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))

    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias.masked_fill_(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_mask + attn_bias

    if enable_gqa:
        key = key.repeat_interleave(query.size(-3)//key.size(-3), -3)
        value = value.repeat_interleave(query.size(-3)//value.size(-3), -3)

    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight += attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    attn_weight = torch.dropout(attn_weight, dropout_p, train=True)
    return attn_weight @ value


def attention(q, k, v, mask=None):
    return scaled_dot_product_attention(q, k, v, attn_mask=mask)
