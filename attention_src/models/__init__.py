"""Real pretrained models run by the lessons' own modules: MiniLM (an encoder, read
from safetensors) and SmolLM2 (a decoder, read from its GGUF file).

Loaders, not lessons. Importing this package imports none of the libraries that
read the files (safetensors, tokenizers, gguf, transformers): each loader imports
them when it is called.
"""

from .minilm import load_minilm
from .smollm2 import load_smollm2

__all__ = ["load_minilm", "load_smollm2"]
