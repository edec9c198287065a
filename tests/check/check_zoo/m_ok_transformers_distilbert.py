"""Published, correct, and not written for this checker: the self-attention of transformers'
DistilBERT (eager attention), built through a factory from a config.

Source: transformers 5.24.0 (PyPI), transformers/models/distilbert/modeling_distilbert.py,
class DistilBertSelfAttention; Apache-2.0 licence, (c) the HuggingFace team. Used as
installed; the factory ``build`` is added.
"""

from transformers import DistilBertConfig
from transformers.models.distilbert.modeling_distilbert import DistilBertSelfAttention

EXPECTED: set[str] = set()
TARGET = "build"


def build(d_model, num_heads):
    config = DistilBertConfig(dim=d_model, n_heads=num_heads, attn_implementation="eager")
    return DistilBertSelfAttention(config)
