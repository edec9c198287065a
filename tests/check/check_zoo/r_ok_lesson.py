"""Correct: the lesson's own apply_rope, for (B, H, L, Dh)."""

from attention_src.rope import apply_rope

EXPECTED: set[str] = set()


def rope(x, positions):
    return apply_rope(x, positions)
