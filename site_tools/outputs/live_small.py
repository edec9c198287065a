"""The site's small trained models, exported for the reader's browser.

Build machinery, not a lesson. Chapter 12 trains a causal copy model
(``CausalLM``) and chapter 14 an encoder–decoder (``EncoderDecoder``); both
results live in the build's results cache (``attention_src.machinery.cached``),
keyed on the code. The pages' widgets
(``docs/assets/javascripts/attention-live-small.js``) run those same weights
in the reader's browser. This module writes them where the widgets fetch them:

- :func:`write_small_models` (called by the build hook ``site_tools/live_hooks.py``
  after a build) writes, per model, ``<site>/assets/live/small/<name>.json``
  (shapes, settings, the alphabet) and the weights it names,
  ``<name>.<sha256 prefix>.bin``: float32, little-endian, the tensors of the
  model's ``state_dict`` one after the other, each once (a shared embedding
  table is stored once and named twice).
- :func:`widget_html` (called by a build-only block of each page) prints the
  widget's placeholder, which carries the size of those two files (the reader
  sees it before anything is fetched) and the page's own example inputs.

Where the weights come from: the page itself. The page's program
(:func:`site_tools.engine.program.page_program`) is run, as the build runs it, up to
the block that trains the model through ``cached(...)``; with the same code and
settings the call finds the result the build stored, so the browser gets the
weights the page's figures were drawn from, never a second training. The export
is kept in the results cache under a key made of those blocks' code and the
package's code, so a warm build copies it instead of running the page again.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import io
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = "assets/live/small"  # under the site
FORMAT = 1  # the layout of the JSON and the .bin; the script checks it


@dataclass(frozen=True)
class SmallModel:
    """One exported model: where its page trains it, and what the page calls it."""

    name: str  # the file name under assets/live/small/, and the widget's data-live-small
    kind: str  # "causal-lm" or "encoder-decoder": which forward pass the script runs
    page: str  # the English page (the program is the same in both editions)
    trains: str  # text of the block that trains and loads it (its `cached(` call)
    model_var: str = "model"  # the name the page gives the trained model


MODELS = (
    SmallModel(
        name="causal-copy",
        kind="causal-lm",
        page="docs/chapters/causal-attention.md",
        trains='cached("causal-copy", settings, train_copy_model)',
    ),
    SmallModel(
        name="encoder-decoder-copy",
        kind="encoder-decoder",
        page="docs/chapters/encoder-decoder.md",
        trains='cached("encoder-decoder-copy", SETTINGS, run_copy)',
    ),
)
BY_NAME = {m.name: m for m in MODELS}


# --- the export: bytes from a trained model ------------------------------------------


def _config(kind: str, model) -> dict:
    """What the forward pass needs besides the tensors: the model's settings.

    Read from the model's attributes, not by its class: the page's program runs the
    listings it shows, so the model on the page is of the class the page defined.
    """
    if kind == "causal-lm":
        first = model.blocks[0]
        return {
            "vocab_size": model.vocab_size,
            "d_model": model.token_embedding.embedding_dim,
            "num_heads": first.self_attn.num_heads,
            "num_layers": len(model.blocks),
            "d_ff": first.ff.linear1.out_features,
            "max_len": model.max_len,
            "causal": model.causal,
            "activation": first.ff.activation,
            "eps": first.norm1.eps,
            "symbols": list(range(model.vocab_size)),  # every id is a symbol
        }
    if kind == "encoder-decoder":
        from attention_src.seq2seq import BOS

        layer = model.layers[0]
        return {
            "vocab_size": model.vocab_size,
            "d_model": model.d_model,
            "num_heads": layer.self_attn.num_heads,
            "num_layers": len(model.layers),
            "d_ff": layer.ff.linear1.out_features,
            "max_len": model.max_len,
            "norm_first": layer.norm_first,
            "activation": layer.ff.activation,
            "eps": layer.norm1.eps,
            "bos": BOS,
            "symbols": [t for t in range(model.vocab_size) if t != BOS],
        }
    raise ValueError(f"kind must be 'causal-lm' or 'encoder-decoder', got {kind!r}")


def export_bytes(name: str, model) -> tuple[dict, bytes]:
    """``(manifest, weights)`` of a trained model: the JSON's content and the .bin's bytes.

    The weights are the ``state_dict``'s float32 tensors, row-major, little-endian, in
    the ``state_dict``'s order; a tensor that shares its storage with an earlier one
    (``share_embeddings=True``) is stored once, its entry naming the first.
    """
    import numpy as np
    import torch

    if name not in BY_NAME:
        raise ValueError(f"name must be one of {sorted(BY_NAME)}, got {name!r}")
    tensors: dict[str, dict] = {}
    chunks: list[bytes] = []
    seen: dict[tuple[int, int, tuple], str] = {}  # (storage, offset, shape) -> first name
    offset = 0
    for key, value in model.state_dict().items():
        same = (value.untyped_storage().data_ptr(), value.storage_offset(), tuple(value.shape))
        if same in seen:
            tensors[key] = {"same_as": seen[same]}
            continue
        seen[same] = key
        array = value.detach().to("cpu", torch.float32).contiguous().numpy()
        chunks.append(array.astype("<f4", copy=False).tobytes())
        tensors[key] = {"shape": list(array.shape), "offset": offset}
        offset += int(np.prod(array.shape, dtype=np.int64))
    weights = b"".join(chunks)
    digest = hashlib.sha256(weights).hexdigest()
    manifest = {
        "format": FORMAT,
        "name": name,
        "kind": BY_NAME[name].kind,
        "config": _config(BY_NAME[name].kind, model),
        "weights": f"{name}.{digest[:12]}.bin",
        "weights_bytes": len(weights),
        "weights_sha256": digest,
        "dtype": "float32",
        "tensors": tensors,
    }
    return manifest, weights


def _manifest_text(manifest: dict) -> bytes:
    return (json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n").encode()


def export_size(name: str, model) -> int:
    """Bytes the reader's browser fetches for this model: its JSON and its weights."""
    manifest, weights = export_bytes(name, model)
    return len(_manifest_text(manifest)) + len(weights)


# --- the page's widget ---------------------------------------------------------------


def widget_html(name: str, model, *, examples, trained_lengths=None) -> str:
    """The widget's placeholder, printed by a build-only block of the page.

    ``examples``: the page's own inputs (lists of token ids), offered as buttons.
    ``trained_lengths``: ``(shortest, longest)`` input the model was trained on, if the
    page should say so. The box's label states the alphabet, the longest input and these
    lengths from the model and the page, before anything is fetched.
    The script (``attention-live-small.js``, loaded here, not on every page) fills the
    placeholder; without JavaScript it stays empty and the page's ``<noscript>``
    sentence says what it would add.
    """
    examples = [[int(t) for t in ex] for ex in examples]
    manifest, weights = export_bytes(name, model)
    size = len(_manifest_text(manifest)) + len(weights)
    config = manifest["config"]
    attrs = {
        "class": "live-small",
        "id": f"live-{name}",
        "data-live-small": name,
        "data-bytes": str(size),
        "data-examples": json.dumps(examples, separators=(",", ":")),
        "data-symbols": json.dumps(config["symbols"], separators=(",", ":")),
        "data-max-len": str(config["max_len"]),
    }
    if trained_lengths is not None:
        shortest, longest = (int(n) for n in trained_lengths)
        attrs["data-trained"] = f"{shortest}-{longest}"
    inner = " ".join(f'{k}="{html.escape(v, quote=True)}"' for k, v in attrs.items())
    script = "../../assets/javascripts/attention-live-small.js"
    return f'<div {inner}></div>\n<script src="{script}" defer></script>'


# --- the weights the build trained: the page's own program ---------------------------


def _program_until(model: SmallModel) -> list:
    """The page's blocks, in page order, up to the one that trains the model."""
    from site_tools.engine.program import page_program

    text = (ROOT / model.page).read_text(encoding="utf-8")
    blocks = page_program(text)
    for i, block in enumerate(blocks):
        if model.trains in block.code:
            return blocks[: i + 1]
    raise ValueError(
        f"{model.page} has no block containing {model.trains!r}: site_tools/outputs/live_small.py "
        "must name the block that trains the model"
    )


def trained_model(model: SmallModel):
    """The page's trained model: its program run up to the block that trains it.

    As :func:`site_tools.engine.program.execute` runs it: one namespace named ``__main__``
    (the cache keys a function defined on the page by its code and module), torch's
    default seed first, a figure's code skipped (it draws only), a block that shows
    an exception run until it raises it, printing swallowed.
    """
    import torch

    from site_tools.engine.program import TORCH_FRESH_SEED, _exception

    namespace: dict = {"__name__": "__main__"}
    with torch.random.fork_rng(devices=[]), contextlib.redirect_stdout(io.StringIO()):
        torch.manual_seed(TORCH_FRESH_SEED)
        for block in _program_until(model):
            if block.kind == "figure" or block.skip is not None:
                continue
            code = compile(block.code, f"<{model.page}, block {block.index}>", "exec")
            if block.raises:
                with contextlib.suppress(_exception(block.raises)):
                    exec(code, namespace)
            else:
                exec(code, namespace)
    return namespace[model.model_var].eval()


def _export_key(model: SmallModel) -> str:
    """The export's key: the code of the page's blocks up to the training, the package's
    code (what those blocks can reach), torch, Python and the device."""
    import attention_src
    from attention_src.machinery import cache_key

    blocks = [b.code for b in _program_until(model)]
    settings = {"blocks": blocks, "format": FORMAT}
    return cache_key(f"live-small-{model.name}", settings, [attention_src, export_bytes, _config])


def write_small_models(site_dir: Path) -> list[Path]:
    """Write every small model's JSON and weights under ``<site_dir>/assets/live/small/``.

    Returns the files written. A warm build copies them from the results cache (keyed
    by :func:`_export_key`); a cold one runs each page up to its training first.
    """
    from attention_src.machinery import cache_dir

    out = Path(site_dir) / OUT_DIR
    out.mkdir(parents=True, exist_ok=True)
    store = cache_dir()
    written: list[Path] = []
    for model in MODELS:
        kept = None if store is None else store / f"live-small-{model.name}-{_export_key(model)}"
        if kept is None or not (kept / f"{model.name}.json").exists():
            if str(ROOT) not in sys.path:  # the page imports attention_src and site_tools
                sys.path.insert(0, str(ROOT))
            manifest, weights = export_bytes(model.name, trained_model(model))
            files = {f"{model.name}.json": _manifest_text(manifest), manifest["weights"]: weights}
            if kept is not None:
                partial = kept.with_name(kept.name + f".tmp{os.getpid()}")
                partial.mkdir(parents=True, exist_ok=True)
                for file, data in files.items():
                    (partial / file).write_bytes(data)
                if kept.exists():
                    shutil.rmtree(kept, ignore_errors=True)
                partial.replace(kept)
            else:
                for file, data in files.items():
                    (out / file).write_bytes(data)
                    written.append(out / file)
                continue
        for file in sorted(kept.iterdir()):
            shutil.copyfile(file, out / file.name)
            written.append(out / file.name)
    return written


if __name__ == "__main__":  # python -m site_tools.outputs.live_small SITE_DIR
    for path in write_small_models(Path(sys.argv[1] if len(sys.argv) > 1 else "site")):
        print(path, path.stat().st_size)
