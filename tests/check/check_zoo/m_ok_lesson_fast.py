"""Correct: this project's FastMultiHeadAttention, which returns (output, None)."""

from attention_src import FastMultiHeadAttention as MyMultiHead

EXPECTED: set[str] = set()
__all__ = ["MyMultiHead"]
