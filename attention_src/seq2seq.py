"""The Seq2Seq bottleneck: a GRU encoder-decoder with and without attention.

An RNN encoder reads the input one token at a time and hands the decoder its
final hidden state: one vector of ``hidden_size`` numbers, whatever the input
length. ``Seq2SeqGRU`` is that model. ``Seq2SeqAttentionGRU`` is the same model
plus one step: at every output position the decoder's state is a *query* over
*all* the encoder states (scaled dot-product attention), so nothing has to
squeeze through the final vector.

The task is synthetic: copy (or reverse) a random sequence of tokens (its data,
the training and the evaluation are the experiment
``attention_src.experiments.seq2seq_task``). Token ``BOS = 0`` starts every
decoder input; the other ``vocab_size - 1`` tokens are the symbols. The output
has the length of the input, so there is no end token.

Shapes: B batch, S input (source) length, L output length, H hidden size,
V vocabulary size.
"""

from __future__ import annotations

import torch
from torch import nn

from .checks import check_positive_int, check_tensor, check_token_ids, shape_str
from .scaled_dot_product import scaled_dot_product_attention

__all__ = ["BOS", "shift_right", "Seq2SeqGRU", "Seq2SeqAttentionGRU"]

# the token that starts every decoder input; symbols are 1 .. vocab_size - 1
BOS = 0


def _check_vocab_size(vocab_size) -> None:
    check_positive_int("vocab_size", vocab_size)
    if vocab_size < 3:
        raise ValueError(
            f"vocab_size must be at least 3 (BOS and two symbols), got {vocab_size}"
        )


# --8<-- [start:shift_right]
def shift_right(target: torch.Tensor) -> torch.Tensor:
    """The decoder input for teacher forcing: ``BOS``, then ``target[:, :-1]``."""
    check_tensor("target", target)
    if target.dim() != 2:
        shape = shape_str(target.shape)
        raise ValueError(f"target must be 2-D (B, L), got shape {shape}")
    bos = torch.full_like(target[:, :1], BOS)  # (B, 1)
    return torch.cat([bos, target[:, :-1]], dim=1)  # (B, L)


# --8<-- [end:shift_right]


# --8<-- [start:seq2seq]
class Seq2SeqGRU(nn.Module):
    """GRU encoder -> one fixed vector (its final hidden state) -> GRU decoder.

    Args:
        vocab_size: V, the number of token ids (``BOS`` and the symbols).
        hidden_size: H, the width of every hidden state, so also of the one
            vector that carries the whole input to the decoder.
        embed_size: the width of a token embedding (default: ``hidden_size``).

    ``forward(source (B, S), decoder_input (B, L))`` returns ``(logits (B, L, V),
    weights)``; ``weights`` is ``None`` here: this model has nothing to attend
    with.
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        embed_size: int | None = None,
    ):
        super().__init__()
        embed_size = hidden_size if embed_size is None else embed_size
        _check_vocab_size(vocab_size)
        check_positive_int("hidden_size", hidden_size)
        check_positive_int("embed_size", embed_size)
        self.vocab_size, self.hidden_size = vocab_size, hidden_size
        self.embed = nn.Embedding(vocab_size, embed_size)  # for both GRUs
        self.encoder = nn.GRU(embed_size, hidden_size, batch_first=True)
        self.decoder = nn.GRU(embed_size, hidden_size, batch_first=True)
        self.out = nn.Linear(self.readout_size(), vocab_size)

    def readout_size(self) -> int:
        return self.hidden_size  # the decoder state alone

    def encode(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """All encoder states ``(B, S, H)`` and the final one ``(1, B, H)``."""
        check_token_ids("source", source, self.vocab_size)
        states, final = self.encoder(self.embed(source))  # (B, S, H), (1, B, H)
        return states, final

    def readout(self, decoder_states, encoder_states):
        """Logits from the decoder states ``(B, L, H)``; ignores the encoder's."""
        return self.out(decoder_states), None  # (B, L, V)

    def forward(self, source: torch.Tensor, decoder_input: torch.Tensor):
        """Teacher forcing: the decoder reads the *true* previous tokens."""
        check_token_ids("source", source, self.vocab_size)
        check_token_ids("decoder_input", decoder_input, self.vocab_size)
        if decoder_input.size(0) != source.size(0):
            raise ValueError(
                f"source {shape_str(source.shape)} and decoder_input "
                f"{shape_str(decoder_input.shape)} must have the same batch size"
            )
        encoder_states, final = self.encode(source)  # (B, S, H), (1, B, H)
        embedded = self.embed(decoder_input)  # (B, L, E)
        decoder_states, _ = self.decoder(embedded, final)  # (B, L, H)
        return self.readout(decoder_states, encoder_states)

    @torch.no_grad()
    def generate(self, source: torch.Tensor, length: int | None = None):
        """Greedy decoding: feed back the most likely token, one step at a time.

        Returns tokens ``(B, length)`` (``length`` defaults to ``S``) and the
        attention weights ``(B, length, S)``, or ``None`` for this model.
        """
        check_token_ids("source", source, self.vocab_size)
        length = source.size(-1) if length is None else length
        check_positive_int("length", length)
        encoder_states, hidden = self.encode(source)  # (B, S, H), (1, B, H)
        token = torch.full_like(source[:, :1], BOS)  # (B, 1)
        tokens, weights = [], []
        for _ in range(length):
            state, hidden = self.decoder(self.embed(token), hidden)  # (B, 1, H)
            # logits (B, 1, V); w (B, 1, S), or None without attention
            logits, w = self.readout(state, encoder_states)
            token = logits.argmax(dim=-1)  # (B, 1)
            tokens.append(token)
            weights.append(w)
        all_weights = None if weights[0] is None else torch.cat(weights, dim=1)
        return torch.cat(tokens, dim=1), all_weights  # (B, L), (B, L, S)


# --8<-- [end:seq2seq]


# --8<-- [start:attention]
class Seq2SeqAttentionGRU(Seq2SeqGRU):
    """The same model; each decoder state attends over all the encoder states.

    ``forward`` returns ``(logits (B, L, V), weights (B, L, S))``: row ``t`` of
    ``weights`` is how output step ``t`` spreads its attention over the input.
    """

    def readout_size(self) -> int:
        return 2 * self.hidden_size  # the decoder state and what it looked up

    def readout(self, decoder_states, encoder_states):
        # query: decoder states (B, L, H); keys = values: encoder states (B, S, H)
        context, weights = scaled_dot_product_attention(
            decoder_states, encoder_states, encoder_states
        )  # (B, L, H), (B, L, S)
        both = torch.cat([decoder_states, context], dim=-1)  # (B, L, 2H)
        logits = self.out(both)  # (B, L, V)
        return logits, weights


# --8<-- [end:attention]
