"""The models that run in the reader's browser (issue 37), written into the built site.

At each build (site_tools.after_build) it writes, into the built site:

- ``assets/live/minilm/``: all-MiniLM-L6-v2's weights for
  ``docs/assets/javascripts/attention-live.js`` (``model.json``, a manifest, and
  ``weights-<key>.bin``) and its WordPiece vocabulary ``vocab.txt`` (one token a
  line, id = line index), read from the pinned model package
  (``attention_src.models.minilm``'s loading path: sha256 checked, safetensors);
- the small trained models (``site_tools.outputs.live_small.write_small_models``).

The weights are never committed. The export is content-addressed: its key hashes
the checkpoint's sha256, the format and this module's source, so a warm build
copies (hard-links) the files it wrote before instead of converting again.

The format, chosen by measurement (the contributing page's "live models"
section): every matrix (2-D tensor) is int16 with one float32 scale per row
(``value = int16 * scale[row]``, ``scale = max |row| / 32767``), every vector
(biases, LayerNorm) float32. Attention weights stay within 6.2e-4 of the float32
model on the chapter's sentences; float16 reaches 1.6e-3 to 2.9e-3 (the 2e-3
tolerance is not met reliably) and int8 with per-row scales 0.6. Same size as
float16: about 45 MB.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np

from site_tools.engine.markup import Source

log = logging.getLogger("mkdocs.plugins.attention.live")

ROOT = Path(__file__).resolve().parents[2]
LIVE_CACHE = ROOT / ".cache" / "live"  # outside the store: its pruning never sees it
FORMAT = "attention-live/1: int16 rows + float32 scales; float32 vectors"
MINILM_DIR = Path("assets") / "live" / "minilm"  # inside the built site
_ALIGN = 4  # every tensor starts on a multiple of 4 bytes (Float32Array views)


def _minilm_tensors() -> dict:
    """Our names (``MiniLM``'s state dict: ``embedding.word.weight``,
    ``layers.0.self_attn.q_proj.weight``, ...) -> float32 arrays, loaded the
    way the chapter loads the model (sha256 first, then safetensors)."""
    from attention_src.models.minilm import load_minilm

    model, _ = load_minilm()
    return {name: t.detach().to("cpu").float().numpy() for name, t in model.state_dict().items()}


def quantize_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)`` float32 -> ``(int16 (rows, cols), float32 scales (rows,))``
    with ``matrix ~= q * scales[:, None]``; a row of zeros gets scale 1."""
    if matrix.ndim != 2:
        raise ValueError(f"quantize_rows takes a matrix, got shape {matrix.shape}")
    peak = np.abs(matrix).max(axis=1).astype(np.float32)
    scales = np.where(peak > 0, peak / 32767, 1).astype(np.float32)
    q = np.clip(np.rint(matrix / scales[:, None]), -32767, 32767).astype(np.int16)
    return q, scales


def dequantize_rows(q: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """What the page computes from the file: ``q * scale`` in float32."""
    return q.astype(np.float32) * scales[:, None]


def _tokenizer_options(tokenizer_json: dict) -> dict:
    """What the browser's WordPiece needs from ``tokenizer.json``, beyond the vocabulary."""
    norm = tokenizer_json["normalizer"]
    model = tokenizer_json["model"]
    return {
        "lowercase": bool(norm.get("lowercase")),
        "strip_accents": norm.get("strip_accents"),  # None: follows lowercase (BERT)
        "clean_text": bool(norm.get("clean_text")),
        "handle_chinese_chars": bool(norm.get("handle_chinese_chars")),
        "unk_token": model["unk_token"],
        "continuing_subword_prefix": model["continuing_subword_prefix"],
        "max_input_chars_per_word": model["max_input_chars_per_word"],
    }


def _vocab_lines(tokenizer_json: dict) -> list[str]:
    vocab = tokenizer_json["model"]["vocab"]  # token -> id
    lines = [None] * len(vocab)
    for token, i in vocab.items():
        lines[i] = token
    if any(t is None for t in lines):
        raise ValueError("tokenizer.json's vocabulary ids are not 0..V-1 without gaps")
    return lines


def export_minilm(folder: Path) -> dict:
    """Write ``model.json``, ``weights-<key>.bin`` and ``vocab.txt`` into
    ``folder``; returns the manifest."""
    from attention_src.models.minilm import MINILM_SHA256, minilm_dir

    key = minilm_key()
    tensors = _minilm_tensors()
    folder.mkdir(parents=True, exist_ok=True)
    weights_name = f"weights-{key[:16]}.bin"
    entries, offset = {}, 0
    tmp = folder / (weights_name + ".part")
    with open(tmp, "wb") as f:

        def put(array: np.ndarray) -> int:
            nonlocal offset
            start = offset
            data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
            pad = (-len(data)) % _ALIGN
            f.write(data + b"\0" * pad)
            offset += len(data) + pad
            return start

        for name, t in tensors.items():
            if t.ndim == 2:
                q, scales = quantize_rows(t)
                entries[name] = {
                    "shape": list(t.shape),
                    "dtype": "int16-rows",
                    "offset": put(q),
                    "scales": put(scales),
                }
            else:
                entries[name] = {
                    "shape": list(t.shape),
                    "dtype": "float32",
                    "offset": put(t.astype(np.float32)),
                }
    tmp.replace(folder / weights_name)
    tokenizer_json = json.loads((minilm_dir() / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = _vocab_lines(tokenizer_json)
    minilm_config = json.loads((minilm_dir() / "config.json").read_text(encoding="utf-8"))
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    manifest = {
        "format": FORMAT,
        "model": "all-MiniLM-L6-v2",
        "checkpoint_sha256": MINILM_SHA256,
        "key": key,
        "weights": weights_name,
        "bytes": offset,
        "vocab": "vocab.txt",
        "vocab_bytes": (folder / "vocab.txt").stat().st_size,
        "config": {
            "vocab_size": len(vocab),
            "d_model": int(tensors["embedding.word.weight"].shape[1]),
            "num_heads": int(minilm_config["num_attention_heads"]),
            "num_layers": sum(1 for n in tensors if n.endswith("self_attn.q_proj.weight")),
            "d_ff": int(tensors["layers.0.ff.linear1.weight"].shape[0]),
            "max_len": int(tensors["embedding.position.weight"].shape[0]),
            "layer_norm_eps": 1e-12,
            "activation": "gelu",
            "norm_first": False,
        },
        "tokenizer": _tokenizer_options(tokenizer_json),
        "tensors": entries,
    }
    (folder / "model.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def minilm_key() -> str:
    """sha256 of what the export depends on: the checkpoint, the format, this code."""
    from attention_src.models import minilm

    h = hashlib.sha256()
    for part in (minilm.MINILM_SHA256, FORMAT, inspect.getsource(minilm), _SOURCE):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


_SOURCE = Path(__file__).read_text(encoding="utf-8")


def minilm_export() -> Path:
    """The cached export's folder, written first if this key has none."""
    return _export(minilm_key())


@functools.cache
def _export(key: str) -> Path:
    folder = LIVE_CACHE / "minilm" / key[:16]
    if not (folder / "model.json").exists():
        log.info("live models: exporting MiniLM's weights (%s)", key[:16])
        staging = folder.with_name(folder.name + f".tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        export_minilm(staging)
        shutil.rmtree(folder, ignore_errors=True)
        staging.replace(folder)
        # older keys' exports are no longer read
        for old in folder.parent.iterdir():
            if old != folder and ".tmp" not in old.name:
                shutil.rmtree(old, ignore_errors=True)
    return folder


def minilm_manifest() -> dict:
    return json.loads((minilm_export() / "model.json").read_text(encoding="utf-8"))


def _place(src: Path, dst: Path) -> None:
    """``dst`` becomes ``src``'s content: a hard link where possible (no copy of
    45 MB), else a copy; skipped when it is already there."""
    same_size = dst.exists() and dst.stat().st_size == src.stat().st_size
    # the weights' name holds the key: same name and size, same content
    if same_size and (src.suffix == ".bin" or dst.read_bytes() == src.read_bytes()):
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def write_minilm(site_dir: Path) -> list[Path]:
    """Put the MiniLM export into ``site_dir / assets/live/minilm``."""
    src = minilm_export()
    dst = Path(site_dir) / MINILM_DIR
    written = []
    for path in sorted(src.iterdir()):
        _place(path, dst / path.name)
        written.append(dst / path.name)
    keep = {p.name for p in written}
    for stale in dst.iterdir():  # weights of an older key
        if stale.name not in keep:
            stale.unlink()
    return written


def english_copy(site_dir) -> Path | None:
    """The English edition's MiniLM export, when this edition's site is built inside
    the English one (``./dev.sh build``: ``site/zh`` in ``site/``, English first) and
    that holds this very export (the same ``model.json``, which names the weights'
    file by its key, and files of the same sizes): then the Chinese pages use it and
    the site holds the 45 MB once. None otherwise (an edition built or served alone
    writes its own copy)."""
    english = Path(site_dir).resolve().parent / MINILM_DIR
    ours = minilm_export()
    if not (english / "model.json").is_file():
        return None
    if (english / "model.json").read_bytes() != (ours / "model.json").read_bytes():
        return None
    for path in ours.iterdir():
        there = english / path.name
        if not there.is_file() or there.stat().st_size != path.stat().st_size:
            return None
    return english


def fill_sizes(output: str, shared: bool = False) -> str:
    """The widget's button says how much it will download before the reader asks:
    ``data-live-bytes=""`` in the page becomes the export's size in bytes. ``shared``:
    the widget loads the English edition's copy (:func:`english_copy`), one folder up."""
    if 'data-live-bytes=""' not in output:
        return output
    m = minilm_manifest()
    total = m["bytes"] + m["vocab_bytes"]
    output = output.replace('data-live-bytes=""', f'data-live-bytes="{total}"')
    if not shared:
        return output
    page = Source(output, "div")
    for widget in page.soup.find_all("div", class_="live-minilm"):
        model = widget.get("data-live-model", "")
        start, end = page.start(widget), page.inner_start(widget)
        at = output.find(f'data-live-model="{model}"', start, end)
        if model and "://" not in model and at >= 0:
            page.insert(at + len('data-live-model="'), "../")
    return page.edited()


def write_live_models(site_dir, shared: bool = False) -> list[Path]:
    """MiniLM's export (unless ``shared``: the English edition's copy serves this one)
    and the small trained models into ``site_dir``."""
    from site_tools.outputs.live_small import write_small_models

    site_dir = Path(site_dir)
    if shared:
        shutil.rmtree(site_dir / MINILM_DIR, ignore_errors=True)
        written = []
    else:
        written = write_minilm(site_dir)
    written += write_small_models(site_dir)
    log.info("live models: %d files in %s", len(written), site_dir / "assets" / "live")
    return written
