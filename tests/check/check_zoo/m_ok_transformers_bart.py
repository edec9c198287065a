"""Published, correct, and not written for this checker: transformers'
BartAttention (eager attention), built through a factory.

Source: transformers 5.24.0 (PyPI), transformers/models/bart/modeling_bart.py, class
BartAttention; Apache-2.0 licence, (c) the HuggingFace team. Used as installed; the factory
``build`` is added.
"""

from transformers import BartConfig
from transformers.models.bart.modeling_bart import BartAttention

EXPECTED: set[str] = set()
TARGET = "build"


def build(d_model, num_heads):
    return BartAttention(d_model, num_heads, config=BartConfig(attn_implementation="eager"))
