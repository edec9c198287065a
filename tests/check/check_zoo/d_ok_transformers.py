"""Correct: a tiny Llama built by the installed transformers (random weights, nothing
downloaded), decoding with its own Cache object (a DynamicCache). The adapter hands the
Cache back and forth."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

EXPECTED: set[str] = set()

config = LlamaConfig(
    vocab_size=10,
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
torch.manual_seed(0)
model = LlamaForCausalLM(config).eval()


@torch.no_grad()
def decode(tokens, cache):
    out = model(input_ids=tokens, cache=cache, use_cache=True)
    return out.logits, out.cache
