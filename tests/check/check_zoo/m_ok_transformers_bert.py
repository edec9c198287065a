"""Correct, and not written for this checker: the self-attention of transformers' BERT
(eager attention), built through a factory from a config, with its additive float
attention_mask."""

from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertSelfAttention

EXPECTED: set[str] = set()
TARGET = "build"
CONVENTION = "float"


def build(d_model, num_heads):
    config = BertConfig(
        hidden_size=d_model, num_attention_heads=num_heads, attn_implementation="eager"
    )
    return BertSelfAttention(config)
