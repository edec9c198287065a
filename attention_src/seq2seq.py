"""The Seq2Seq bottleneck: a GRU encoder-decoder with and without attention.

An RNN encoder reads the input one token at a time and hands the decoder its
final hidden state: one vector of ``hidden_size`` numbers, whatever the input
length. ``Seq2SeqGRU`` is that model. ``Seq2SeqAttentionGRU`` is the same model
plus one step: at every output position the decoder's state is a *query* over
*all* the encoder states (dot products, a softmax, a weighted average), so
nothing has to squeeze through the final vector.

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

from .validate import check_positive_int, check_tensor, check_token_ids, shape_str

__all__ = ["BOS", "shift_right", "Seq2SeqGRU", "Seq2SeqAttentionGRU"]

# the token that starts every decoder input; symbols are 1 .. vocab_size - 1
BOS = 0


def _check_vocab_size(vocab_size) -> None:
    check_positive_int("vocab_size", vocab_size)
    if vocab_size < 3:
        raise ValueError(
            f"vocab_size must be at least 3 (BOS and two symbols), got {vocab_size}"
        )


def _check_same_batch(source, decoder_input) -> None:
    """``source`` and ``decoder_input`` hold the same number of sequences."""
    if decoder_input.size(0) != source.size(0):
        raise ValueError(
            f"source {shape_str(source.shape)} and decoder_input "
            f"{shape_str(decoder_input.shape)} must have the same batch size"
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
    """GRU encoder -> its final state, H numbers -> GRU decoder. ``forward(source
    (B, S), decoder_input (B, L))`` returns ``(logits (B, L, V), None)``."""

    def __init__(self, vocab_size, hidden_size, embed_size=None):
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

    def readout_size(self):
        return self.hidden_size  # the decoder state alone

    def encode(self, source):  # all states (B, S, H), the final one (1, B, H)
        check_token_ids("source", source, self.vocab_size)
        return self.encoder(self.embed(source))

    def readout(self, decoder_states, encoder_states):
        return self.out(decoder_states), None  # (B, L, V); ignores the encoder

    def forward(self, source, decoder_input):
        """Teacher forcing: the decoder reads the *true* previous tokens."""
        check_token_ids("decoder_input", decoder_input, self.vocab_size)
        encoder_states, final = self.encode(source)  # (B, S, H), (1, B, H)
        _check_same_batch(source, decoder_input)
        # the decoder starts from the final state; its inputs are tokens only
        decoder_states, _ = self.decoder(self.embed(decoder_input), final)
        return self.readout(decoder_states, encoder_states)

    @torch.no_grad()
    def generate(self, source, length=None):
        """Greedy decoding: tokens ``(B, length)`` (default S), and the weights."""
        check_token_ids("source", source, self.vocab_size)
        length = source.size(-1) if length is None else length
        check_positive_int("length", length)
        tokens = torch.full_like(source[:, :1], BOS)  # (B, 1): BOS, then outputs
        for _ in range(length):  # feed back the most likely next token
            logits, weights = self(source, tokens)  # (B, t, V), (B, t, S) or None
            tokens = torch.cat([tokens, logits[:, -1:].argmax(dim=-1)], dim=1)
        return tokens[:, 1:], weights  # (B, L), (B, L, S) or None


# --8<-- [end:seq2seq]


# --8<-- [start:attention]
class Seq2SeqAttentionGRU(Seq2SeqGRU):
    """The same; each decoder state attends over all the encoder states."""

    def readout_size(self):
        return 2 * self.hidden_size  # the decoder state and what it looked up

    def readout(self, decoder_states, encoder_states):
        # query: decoder states (B, L, H); keys = values: encoder states (B, S, H)
        scores = decoder_states @ encoder_states.transpose(1, 2)  # (B, L, S)
        scores = scores / self.hidden_size**0.5  # dot products, scaled by √H
        weights = torch.softmax(scores, dim=-1)  # (B, L, S): each row sums to 1
        context = weights @ encoder_states  # (B, L, H): weighted average
        both = torch.cat([decoder_states, context], dim=-1)  # (B, L, 2H)
        return self.out(both), weights  # (B, L, V), (B, L, S)


# --8<-- [end:attention]
