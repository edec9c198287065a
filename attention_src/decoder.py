"""A decoder-only (GPT-style) language model: causal self-attention blocks that
predict every next token of a sequence in one forward pass, and greedy generation.

The copy task the causal-attention chapter trains it on is an experiment:
``attention_src.experiments.copy_task``.
"""

from __future__ import annotations

import torch
from torch import nn

from .checks import (
    check_positive_int,
    check_probability,
    check_token_ids,
)
from .feed_forward import FeedForward
from .kv_cache import generate_with_cache
from .masks import causal_mask
from .multi_head import MultiHeadAttention

__all__ = ["DecoderBlock", "DecoderOnlyLM"]


# --8<-- [start:decoder_block]
class DecoderBlock(nn.Module):
    """One pre-norm block; returns ``(output (B, L, D), weights (B, H, L, L))``.

    Pre-norm: each sub-layer reads a normalised copy of ``x`` and adds its
    result back, ``x + self_attn(norm1(x))`` then ``x + ff(norm2(x))``. With
    ``mask = causal_mask(L)`` position ``t`` sees positions ``0 .. t`` only.
    """

    def __init__(
        self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0
    ):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout=dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None):
        attn, weights = self.self_attn(self.norm1(x), mask=mask)
        x = x + attn  # (B, L, D); weights: (B, H, L, L)
        x = x + self.ff(self.norm2(x))  # (B, L, D)
        return x, weights


# --8<-- [end:decoder_block]


# --8<-- [start:decoder_lm]
class DecoderOnlyLM(nn.Module):
    """Ids ``(B, L)`` -> ``(logits (B, L, V), [weights (B, H, L, L) per layer])``.

    Token embedding plus a *learned* position embedding (one trained vector per
    position ``0 .. max_len - 1``), ``num_layers`` pre-norm decoder blocks whose
    self-attention uses ``causal_mask``, a final LayerNorm and a linear head.
    ``logits[:, t]`` scores the token that comes *after* position ``t``, and
    depends on ``tokens[:, : t + 1]`` only.

    Args:
        vocab_size: V, the number of token ids.
        d_model: D.
        num_heads: H; must divide ``d_model``.
        num_layers: how many decoder blocks.
        d_ff: hidden width of each feed-forward network.
        max_len: the longest sequence the position table covers.
        dropout: dropout in attention and feed-forward, during training.
        causal: ``False`` drops the mask, so every position also sees the
            future. Only for demonstrating the leak; a language model must be
            causal.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_heads: int,
        num_layers: int,
        d_ff: int,
        max_len: int,
        *,
        dropout: float = 0.0,
        causal: bool = True,
    ):
        super().__init__()
        self._check_settings(vocab_size, num_layers, max_len, dropout)
        self.vocab_size, self.max_len, self.causal = vocab_size, max_len, causal
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList()
        for _ in range(num_layers):
            self.blocks.append(DecoderBlock(d_model, num_heads, d_ff, dropout))
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor):
        self._check_tokens(tokens)
        L = tokens.size(1)
        positions = torch.arange(L, device=tokens.device)  # (L,)
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        mask = causal_mask(L, device=tokens.device) if self.causal else None
        # x: (B, L, D); mask: (L, L), True = may attend, broadcast over B and H
        all_weights = []
        for block in self.blocks:
            x, weights = block(x, mask)  # weights: (B, H, L, L)
            all_weights.append(weights)
        logits = self.head(self.final_norm(x))  # (B, L, V)
        return logits, all_weights

    @torch.no_grad()
    def generate(
        self, prompt: torch.Tensor, max_new_tokens: int, use_cache: bool = True
    ) -> torch.Tensor:
        """Greedy decoding: append the most likely next token ``max_new_tokens``
        times.

        ``prompt`` is ``(B, L0)`` token ids; returns ``(B, L0 + max_new_tokens)``.
        Call ``model.eval()`` first if the model has dropout. With
        ``use_cache=True`` each step reuses the keys and values of earlier
        positions (``attention_src.kv_cache``); with ``use_cache=False`` every
        step runs the model on the whole prefix again. Both write the same
        tokens. A non-causal model (``causal=False``) always recomputes: its
        earlier positions change when a token is added, so there is nothing to
        reuse.
        """
        self._check_generate(prompt, max_new_tokens)
        if not isinstance(use_cache, bool):
            raise TypeError(
                f"use_cache must be a bool, got {type(use_cache).__name__}"
            )
        if use_cache and self.causal:
            return generate_with_cache(self, prompt, max_new_tokens)
        tokens = prompt
        for _ in range(max_new_tokens):
            logits, _ = self(tokens)  # (B, L, V): a prediction at every position
            last = logits[:, -1]  # (B, V): only the last position's is new
            next_token = last.argmax(dim=-1, keepdim=True)  # (B, 1)
            tokens = torch.cat([tokens, next_token], dim=1)  # (B, L + 1)
        return tokens

    # --8<-- [end:decoder_lm]

    @staticmethod
    def _check_settings(vocab_size, num_layers, max_len, dropout) -> None:
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_layers", num_layers),
            ("max_len", max_len),
        ):
            check_positive_int(name, value)
        check_probability("dropout", dropout)

    def _check_generate(self, prompt, max_new_tokens) -> None:
        self._check_tokens(prompt, name="prompt")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
            raise TypeError(
                "max_new_tokens must be an int, got "
                f"{type(max_new_tokens).__name__}"
            )
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        total = prompt.size(1) + max_new_tokens
        if total > self.max_len:
            raise ValueError(
                f"prompt length {prompt.size(1)} + max_new_tokens {max_new_tokens} "
                f"= {total} exceeds max_len={self.max_len}"
            )

    def _check_tokens(self, tokens, name: str = "tokens") -> None:
        check_token_ids(name, tokens, self.vocab_size, max_len=self.max_len)
