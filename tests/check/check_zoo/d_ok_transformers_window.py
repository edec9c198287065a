"""Correct: a tiny Mistral with a sliding window of 4, built by the installed transformers
(random weights, nothing downloaded). Its Cache, made from the config, keeps only what the
window needs."""

import torch
from transformers import DynamicCache, MistralConfig, MistralForCausalLM

EXPECTED: set[str] = set()
OPTIONS = {"window": 4}

config = MistralConfig(
    vocab_size=10,
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    sliding_window=4,
)
torch.manual_seed(0)
model = MistralForCausalLM(config).eval()


@torch.no_grad()
def decode(tokens, cache):
    if cache is None:
        cache = DynamicCache(config=config)
    out = model(input_ids=tokens, cache=cache, use_cache=True)
    return out.logits, out.cache
