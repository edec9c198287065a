"""Correct: this project's lesson implementation, which returns (output, weights)."""

from attention_src import scaled_dot_product_attention as attention

EXPECTED: set[str] = set()
__all__ = ["attention"]
