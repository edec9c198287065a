"""Never returns: the loop waits for a condition that never comes, and swallows every
Exception on the way. The time limit per call stops it, and the message names the call."""

import torch.nn.functional as F

EXPECTED_ERROR = r"attention\(q \(2, 3, 5, 8\), k .*\) did not return within 1 s"
ARGS = ["--call-limit", "1"]


def attention(q, k, v, mask=None):
    done = False
    while not done:
        try:
            done = q.sum() != q.sum()  # never True
        except Exception:
            pass
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
