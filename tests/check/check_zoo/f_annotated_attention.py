"""Published, correct except for rows with no allowed key, which its -1e9 fill gives
uniform weights (F.scaled_dot_product_attention gives them zeros): The Annotated Transformer's attention function: masked_fill(mask == 0,
-1e9), and a tuple (output, weights) returned.

Source: harvardnlp/annotated-transformer, commit 0a91a254735c07532e23733dce8a693e504f3a08,
the_annotated_transformer.py, function attention; MIT licence, (c) Harvard NLP. Kept as
published.
"""

# ruff: noqa
# fmt: off
import math

import torch

EXPECTED = {"fully-masked-uniform"}


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn
