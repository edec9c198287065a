"""Correct: forward(x, key_padding_mask=None), a key padding mask (B, S) with True = padding,
handed to nn.MultiheadAttention(batch_first=True) as it wants it. Such a mask cannot say
"causal", so only padding is checked with it."""

from torch import nn

EXPECTED: set[str] = set()
CONVENTION = "block"
NOTE = "masks (B, S) key padding, bool, True = blocked"


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, num_heads, batch_first=True)

    def forward(self, x, key_padding_mask=None):
        out, _ = self.mha(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)
        return out
