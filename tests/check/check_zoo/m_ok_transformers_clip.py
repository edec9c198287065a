"""Published, correct, and not written for this checker: transformers'
CLIPAttention (eager attention), built through a factory.

Source: transformers 5.24.0 (PyPI), transformers/models/clip/modeling_clip.py, class
CLIPAttention; Apache-2.0 licence, (c) the HuggingFace team. Used as installed; the factory
``build`` is added.
"""

from transformers import CLIPTextConfig
from transformers.models.clip.modeling_clip import CLIPAttention

EXPECTED: set[str] = set()
TARGET = "build"


def build(d_model, num_heads):
    return CLIPAttention(
        CLIPTextConfig(
            hidden_size=d_model, num_attention_heads=num_heads, attn_implementation="eager"
        )
    )
