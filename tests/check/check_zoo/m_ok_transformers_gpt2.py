"""Correct, and not written for this checker: the attention layer of transformers' GPT-2
(eager attention), built through a factory from a config. It takes an additive float
attention_mask (the model builds the causal mask and hands it to every layer) and an
encoder_hidden_states keyword that raises unless the layer was built for cross-attention:
the checker finds the first and notes the second, without a false alarm."""

from transformers import GPT2Config
from transformers.models.gpt2.modeling_gpt2 import GPT2Attention

EXPECTED: set[str] = set()
TARGET = "build"
CONVENTION = "float"
NOTE = "called as forward(x, attention_mask=mask); bidirectional"


def build(d_model, num_heads):
    config = GPT2Config(n_embd=d_model, n_head=num_heads, attn_implementation="eager")
    return GPT2Attention(config, layer_idx=0)
