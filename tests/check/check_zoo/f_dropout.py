"""F.dropout defaults to training=True: the weights are dropped at every call."""

import math

import torch
import torch.nn.functional as F

EXPECTED = {"dropout-in-eval"}


def attention(q, k, v, mask=None, dropout_p=0.1):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return F.dropout(weights, p=dropout_p) @ v
