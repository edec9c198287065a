"""Published, correct, and not written for this checker: transformers'
WhisperAttention (eager attention), built through a factory.

Source: transformers 5.24.0 (PyPI), transformers/models/whisper/modeling_whisper.py, class
WhisperAttention; Apache-2.0 licence, (c) the HuggingFace team. Used as installed; the factory
``build`` is added.
"""

from transformers import WhisperConfig
from transformers.models.whisper.modeling_whisper import WhisperAttention

EXPECTED: set[str] = set()
TARGET = "build"


def build(d_model, num_heads):
    return WhisperAttention(d_model, num_heads, config=WhisperConfig(attn_implementation="eager"))
