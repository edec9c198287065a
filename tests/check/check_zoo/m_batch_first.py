"""nn.MultiheadAttention with its default batch_first=False, fed batch-first input: it reads
the batch as the sequence, so the examples attend to each other (and the masks no longer
fit, which is a symptom of the same mistake)."""

from torch import nn

EXPECTED = {"batch-mixing"}


class MyMultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, num_heads)  # batch_first=False

    def forward(self, x, mask=None):
        blocked = None if mask is None else ~mask
        out, _ = self.mha(x, x, x, attn_mask=blocked, need_weights=False)
        return out
