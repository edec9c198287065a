"""Published, correct, and not written for this checker: the attention of transformers' ViT
(eager attention), built through a factory from a config; it returns a tuple (output,
weights).

Source: transformers 5.24.0 (PyPI), transformers/models/vit/modeling_vit.py, class
ViTAttention; Apache-2.0 licence, (c) the HuggingFace team. Used as installed; the factory
``build`` is added.
"""

from transformers import ViTConfig
from transformers.models.vit.modeling_vit import ViTAttention

EXPECTED: set[str] = set()
TARGET = "build"


def build(d_model, num_heads):
    config = ViTConfig(
        hidden_size=d_model, num_attention_heads=num_heads, attn_implementation="eager"
    )
    return ViTAttention(config)
