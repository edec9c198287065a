"""Correct, and chatty: it prints pages of debugging output at import and on every call. The
checker captures it (the report notes how many lines), and shows none of it."""

import torch.nn.functional as F

EXPECTED: set[str] = set()
NOTE = "lines while it was checked (captured, not shown)"

for i in range(200):
    print(f"loading attention ... step {i}")


def attention(q, k, v, mask=None):
    for row in q.flatten(0, -2)[:50]:
        print("q row:", row.tolist())
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
