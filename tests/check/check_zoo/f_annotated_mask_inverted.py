"""Published, with one bug added: The Annotated Transformer's attention function with
masked_fill(mask == 0, -1e9) turned into masked_fill(mask, -1e9), so it blocks what the mask
allows; checked with --mask-convention allow (the convention of its own masks).

Source: harvardnlp/annotated-transformer, commit 0a91a254735c07532e23733dce8a693e504f3a08,
the_annotated_transformer.py, function attention; MIT licence, (c) Harvard NLP. Kept as
published except the line marked BUG.
"""

# ruff: noqa
# fmt: off
import math

import torch

EXPECTED = {"mask-inverted", "fully-masked-uniform"}  # the -1e9 fill is as published
OPTIONS = {"mask_convention": "allow"}


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)  # BUG: was mask == 0
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn
