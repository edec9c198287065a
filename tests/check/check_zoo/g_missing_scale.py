"""Right grouping, but the scores are not scaled: found by the function check, which the
grouped check runs with G = H."""

import torch

EXPECTED = {"missing-scale"}


def attention(q, k, v, mask=None):
    n_rep = q.size(1) // k.size(1)
    k, v = k.repeat_interleave(n_rep, 1), v.repeat_interleave(n_rep, 1)
    scores = q @ k.transpose(-2, -1)  # BUG: no / math.sqrt(Dh)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v
