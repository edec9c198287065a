"""Tests of attention_src.LESSON_MODULE (CHAPTER_TITLE).

(The template of a module's tests: copy it to
``tests/lessons/test_LESSON_MODULE.py``.)
Every public function against PyTorch's own where one exists, on every device
(the ``device`` and ``randn`` fixtures of tests/conftest.py), and every error
message it can raise, pinned with ``pytest.raises(..., match=...)``.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attention_src import dot_product_scores

# (..., L, Dk), (..., S, Dk)
SHAPES = [((3, 4), (5, 4)), ((2, 2, 3, 8), (2, 2, 6, 8))]


@pytest.mark.parametrize(("shape_q", "shape_k"), SHAPES)
def test_softmax_of_the_scores_is_pytorchs_attention(randn, shape_q, shape_k):
    query, key = randn(*shape_q), randn(*shape_k)
    value = randn(*shape_k[:-1], 5)
    weights = torch.softmax(dot_product_scores(query, key), dim=-1)  # (..., L, S)
    expected = F.scaled_dot_product_attention(query, key, value)
    torch.testing.assert_close(weights @ value, expected)


def test_scores_are_scaled_dot_products(randn):
    query, key = randn(3, 16), randn(4, 16)
    scores = dot_product_scores(query, key)  # (L, S)
    assert scores.shape == (3, 4)
    torch.testing.assert_close(scores[1, 2], query[1] @ key[2] / math.sqrt(16))


def test_errors_name_the_argument(randn):
    with pytest.raises(TypeError, match=r"query must be a floating-point tensor"):
        dot_product_scores(torch.ones(3, 4, dtype=torch.long), randn(5, 4))
    with pytest.raises(ValueError, match=r"key must have at least 2 dimensions"):
        dot_product_scores(randn(3, 4), randn(4))
    same_width = r"same width Dk, got query \(3, 4\) and key \(5, 6\)"
    with pytest.raises(ValueError, match=same_width):
        dot_product_scores(randn(3, 4), randn(5, 6))
