"""A decoder-only (GPT-style) language model: causal self-attention blocks that
predict every next token of a sequence in one forward pass. ``CausalLM.generate``
is greedy decoding at its plainest (the causal-attention chapter): run the whole
sequence, append the last position's most likely token, repeat.
``greedy_decode`` is the full loop of the KV-cache chapter, with a cache and an
end token; ``DecoderOnlyLM.generate`` and SmolLM2's call it.

The copy task the causal-attention chapter trains it on is an experiment:
``attention_src.experiments.copy_task``.
"""

from __future__ import annotations

import torch
from torch import nn

from .feed_forward import FeedForward
from .kv_cache import KVCache, cache_start, cached_attention
from .masks import causal_mask
from .multi_head import MultiHeadAttention
from .validate import (
    check_positive_int,
    check_probability,
    check_token_ids,
)

__all__ = [
    "CausalBlock",
    "CausalLM",
    "DecoderBlock",
    "DecoderOnlyLM",
    "greedy_decode",
    "forward_with_cache",
    "generate_with_cache",
]


# --8<-- [start:causal_block]
class CausalBlock(nn.Module):
    """One pre-norm block: ``forward(x, mask=None)`` returns ``(output (B, L, D),
    weights (B, H, L, S))``.

    Pre-norm: each sub-layer reads a normalised copy of ``x`` and adds its
    result back, ``x + self_attn(norm1(x))`` then ``x + ff(norm2(x))``. The
    mask is the model's decision: with ``mask = causal_mask(L)`` position
    ``t`` sees positions ``0 .. t`` only; with ``None``, every position.
    """

    def __init__(
        self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0
    ):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout=dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        attn, weights = self.self_attn(self.norm1(x), mask=mask)
        x = x + attn  # (B, L, D); weights: (B, H, L, S)
        x = x + self.ff(self.norm2(x))  # (B, L, D)
        return x, weights


# --8<-- [end:causal_block]


# --8<-- [start:decoder_block]
class DecoderBlock(CausalBlock):
    """A ``CausalBlock`` that can also read a ``KVCache``:
    ``forward(x, mask=None, *, cache=None, layer=0)``.

    Without a cache it is the ``CausalBlock``. With one (the KV-cache chapter)
    the attention also reads the keys and values of earlier positions from
    layer ``layer`` of it and adds the new ones; ``S`` counts the cached keys
    too.
    """

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        cache: KVCache | None = None,
        layer: int = 0,
    ):
        if cache is None:
            return super().forward(x, mask)
        h = self.norm1(x)  # (B, L, D)
        # earlier positions' keys and values come from the cache
        attn, weights = cached_attention(
            self.self_attn, h, mask, cache=cache, layer=layer
        )
        x = x + attn  # (B, L, D); weights: (B, H, L, S)
        x = x + self.ff(self.norm2(x))  # (B, L, D)
        return x, weights


# --8<-- [end:decoder_block]


# --8<-- [start:causal_lm]
class CausalLM(nn.Module):
    """Ids ``(B, L)`` -> ``(logits (B, L, V), [weights (B, H, L, L) per layer])``.

    Token embedding plus a *learned* position embedding (one trained vector per
    position ``0 .. max_len - 1``), ``num_layers`` pre-norm blocks, a final
    LayerNorm and a linear head. ``logits[:, t]`` scores the token that comes
    *after* position ``t``, and depends on ``tokens[:, : t + 1]`` only. The
    model decides the mask, once per forward, for every block: ``causal_mask``.

    Args:
        vocab_size: V, the number of token ids.
        d_model: D.
        num_heads: H; must divide ``d_model``.
        num_layers: how many blocks.
        d_ff: hidden width of each feed-forward network.
        max_len: the longest sequence the position table covers.
        dropout: dropout in attention and feed-forward, during training.
        causal: ``False`` drops the mask, so every position also sees the
            future. Only for demonstrating the leak; a language model must be
            causal.
    """

    Block = CausalBlock  # the kind of block the model stacks

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
            self.blocks.append(self.Block(d_model, num_heads, d_ff, dropout))
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor):
        check_token_ids("tokens", tokens, self.vocab_size, max_len=self.max_len)
        L = tokens.size(1)
        positions = torch.arange(L, device=tokens.device)  # (L,)
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        # decided here, once for every block: query i may see keys 0 .. i
        mask = causal_mask(L, device=tokens.device) if self.causal else None
        # x: (B, L, D); mask: (L, L), True = may attend, broadcast over B and H
        all_weights = []
        for block in self.blocks:
            x, weights = block(x, mask)  # weights: (B, H, L, L)
            all_weights.append(weights)
        logits = self.head(self.final_norm(x))  # (B, L, V)
        return logits, all_weights

    @torch.no_grad()
    def generate(self, prompt: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
        """Greedy decoding: ``(B, L0)`` -> ``(B, L0 + max_new_tokens)``. Each
        step runs the model on the whole sequence so far and appends the most
        likely token after its last position. Call ``model.eval()`` first if
        the model has dropout."""
        self._check_generate(prompt, max_new_tokens)
        tokens = prompt  # (B, L0)
        for _ in range(max_new_tokens):
            logits, _ = self(tokens)  # (B, L, V): the whole sequence, every step
            next_token = logits[:, -1].argmax(dim=-1)  # (B,): the last position's
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, L + 1)
        return tokens

    # --8<-- [end:causal_lm]

    def _check_generate(self, prompt, max_new_tokens) -> None:
        _check_decode(self, prompt, max_new_tokens, use_cache=False, eos=None)

    @staticmethod
    def _check_settings(vocab_size, num_layers, max_len, dropout) -> None:
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_layers", num_layers),
            ("max_len", max_len),
        ):
            check_positive_int(name, value)
        check_probability("dropout", dropout)


# --8<-- [start:decoder_lm]
class DecoderOnlyLM(CausalLM):
    """A ``CausalLM`` of ``DecoderBlock``s that can also read a ``KVCache``:
    ``forward(tokens, *, cache=None)``. Without a cache it computes what
    ``CausalLM`` computes.

    With a ``KVCache`` (from ``new_cache()``) the tokens come after the cached
    ones, at the positions that follow, and the mask is aligned bottom-right
    over all ``S`` keys (the KV-cache chapter). ``generate`` uses the cache by
    default. The arguments are ``CausalLM``'s.
    """

    Block = DecoderBlock
    eos_token_id: int | None = None  # no end token: decoding runs to the limit

    def forward(self, tokens: torch.Tensor, *, cache: KVCache | None = None):
        start = self._check_forward(tokens, cache)  # positions already cached
        L = tokens.size(1)
        positions = torch.arange(start, start + L, device=tokens.device)  # (L,)
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        # decided here, once for every block: query i may see keys 0 .. start + i
        # (bottom-right over S = start + L keys; a single new query sees them all)
        causal = self.causal and L > 1
        mask = causal_mask(L, start + L, device=tokens.device) if causal else None
        # x: (B, L, D); mask: (L, S), True = may attend, broadcast over B and H
        all_weights = []
        for i, block in enumerate(self.blocks):
            x, weights = block(x, mask, cache=cache, layer=i)  # (B, H, L, S)
            all_weights.append(weights)
        logits = self.head(self.final_norm(x))  # (B, L, V)
        return logits, all_weights

    def new_cache(self) -> KVCache:
        """An empty ``KVCache`` with one slot per block."""
        return KVCache(len(self.blocks))

    def generate(
        self,
        prompt: torch.Tensor,
        max_new_tokens: int,
        *,
        use_cache: bool = True,
        eos_token_id: int | None = None,
    ) -> torch.Tensor:
        """Greedy decoding, ``greedy_decode``: ``(B, L0)`` -> at most
        ``(B, L0 + max_new_tokens)``.

        Call ``model.eval()`` first if the model has dropout. A non-causal
        model (``causal=False``) always recomputes: its earlier positions
        change when a token is added, so there is nothing to reuse.
        """
        if use_cache is True and not self.causal:
            use_cache = False
        return greedy_decode(
            self,
            prompt,
            max_new_tokens,
            use_cache=use_cache,
            eos_token_id=eos_token_id,
        )

    # --8<-- [end:decoder_lm]

    def _check_forward(self, tokens, cache) -> int:
        check_token_ids("tokens", tokens, self.vocab_size)
        if cache is not None and not self.causal:
            raise ValueError(
                "a non-causal model cannot read a cache: adding a token changes "
                "its earlier positions too; call it without cache="
            )
        return cache_start(cache, len(self.blocks), tokens.size(1), self.max_len)


# --8<-- [start:greedy_decode]
@torch.no_grad()
def greedy_decode(
    model: nn.Module,
    prompt: torch.Tensor,
    max_new_tokens: int,
    *,
    use_cache: bool = True,
    eos_token_id: int | None = None,
) -> torch.Tensor:
    """Greedy decoding: append the model's most likely next token, step by
    step, until ``max_new_tokens`` are written or every sequence has written
    the end token. ``(B, L0)`` -> ``(B, L0 + n)``, ``n <= max_new_tokens``.

    A sequence that has written the end token gets more of it while the others
    finish. With ``use_cache=True`` the prompt goes through the model once, as
    one chunk, filling a ``KVCache``; after that each step feeds only the
    token just chosen. With ``use_cache=False`` every step runs the model on
    the whole sequence again. Both write the same tokens.

    Args:
        model: a decoder of this package (``CausalLM``; with a cache,
            ``DecoderOnlyLM`` or SmolLM2's ``LlamaDecoder``): ``model(tokens)``
            returns ``(logits (B, L, V), ...)``; for ``use_cache=True``,
            ``model(tokens, cache=...)`` too and ``model.new_cache()`` an empty
            cache; it has ``vocab_size``, ``max_len`` and ``eos_token_id``.
        prompt: ``(B, L0)`` token ids.
        max_new_tokens: the most tokens to append.
        use_cache: reuse the keys and values of earlier positions.
        eos_token_id: the end token; ``None`` for the model's own,
            ``model.eos_token_id`` (a model without one decodes to the limit).
    """
    eos = _check_decode(model, prompt, max_new_tokens, use_cache, eos_token_id)
    cache = model.new_cache() if use_cache else None
    tokens, step_input = prompt, prompt  # the first step reads the whole prompt
    done = torch.zeros(prompt.size(0), dtype=torch.bool, device=prompt.device)
    for _ in range(max_new_tokens):
        # (B, L, V); a model without a cache is called on the tokens alone
        logits, _ = (
            model(step_input) if cache is None else model(step_input, cache=cache)
        )
        next_token = logits[:, -1].argmax(dim=-1)  # (B,): the last position's
        if eos is not None:  # a finished sequence keeps writing the end token
            next_token = next_token.masked_fill(done, eos)
            done = done | (next_token == eos)  # (B,)
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, L + 1)
        # with a cache only the new token goes in; without, the whole sequence
        step_input = next_token[:, None] if use_cache else tokens
        if done.all():
            break
    return tokens


# --8<-- [end:greedy_decode]


def forward_with_cache(
    model: nn.Module, tokens: torch.Tensor, cache
) -> torch.Tensor:
    """Logits ``(B, L, V)`` for ``tokens`` ``(B, L)`` that come after the cached
    ones: the model's own cached forward, ``model(tokens, cache=cache)[0]``.

    Kept under its earlier name; the model decides the positions (from
    ``cache.length``) and the mask.
    """
    return model(tokens, cache=cache)[0]


def generate_with_cache(
    model: nn.Module, prompt: torch.Tensor, max_new_tokens: int
) -> torch.Tensor:
    """Greedy decoding with a KV cache: ``greedy_decode(model, prompt,
    max_new_tokens, use_cache=True)``, kept under its earlier name."""
    return greedy_decode(model, prompt, max_new_tokens, use_cache=True)


def _check_decode(model, prompt, max_new_tokens, use_cache, eos) -> int | None:
    """Check the arguments of ``greedy_decode``; return the end token."""
    check_token_ids("prompt", prompt, model.vocab_size)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise TypeError(
            f"max_new_tokens must be an int, got {type(max_new_tokens).__name__}"
        )
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if not isinstance(use_cache, bool):
        raise TypeError(f"use_cache must be a bool, got {type(use_cache).__name__}")
    if use_cache and not callable(getattr(model, "new_cache", None)):
        raise ValueError(
            f"{type(model).__name__} has no new_cache() and cannot decode with a "
            "cache: pass use_cache=False"
        )
    total = prompt.size(1) + max_new_tokens
    if total > model.max_len:
        raise ValueError(
            f"prompt length {prompt.size(1)} + max_new_tokens {max_new_tokens} "
            f"= {total} exceeds max_len={model.max_len}"
        )
    eos = getattr(model, "eos_token_id", None) if eos is None else eos
    if eos is not None:
        if isinstance(eos, bool) or not isinstance(eos, int):
            raise TypeError(
                f"eos_token_id must be None or an int token id, got "
                f"{type(eos).__name__}"
            )
        if not 0 <= eos < model.vocab_size:
            raise ValueError(
                f"eos_token_id must be None or a token id in [0, "
                f"{model.vocab_size}), got {eos}"
            )
    return eos
