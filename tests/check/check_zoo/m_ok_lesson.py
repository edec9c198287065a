"""Correct: this project's own MultiHeadAttention (forward(x, context=None, mask=None); the
mask goes by keyword)."""

from attention_src import MultiHeadAttention as MyMultiHead

EXPECTED: set[str] = set()
__all__ = ["MyMultiHead"]
