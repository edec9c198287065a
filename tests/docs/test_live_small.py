"""The small models' export (site_tools/outputs/live_small.py), checked without a browser.

What the page computes with it -- every attention weight within 1e-4 of PyTorch, every symbol
identical, the widget's messages, the audit with a result on the page -- is checked in the
page's one visit of the browser pass (tests/docs/widget_small.py, run by test_browser.py and
test_browser_zh.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from site_tools.outputs import live_small

from .widget_small import PAGES, reference_model


@pytest.mark.parametrize("name", sorted(PAGES))
def test_exported_weights_are_the_trained_ones(built_site, name):
    """The .bin holds the trained float32 weights bit for bit, named as the state_dict."""
    folder = Path(built_site.dir) / live_small.OUT_DIR
    manifest = json.loads((folder / f"{name}.json").read_text("utf-8"))
    data = (folder / manifest["weights"]).read_bytes()
    assert len(data) == manifest["weights_bytes"]
    flat = torch.frombuffer(bytearray(data), dtype=torch.float32)
    state = reference_model(name).state_dict()
    assert set(manifest["tensors"]) == set(state)
    for key, value in state.items():
        entry = manifest["tensors"][key]
        entry = manifest["tensors"].get(entry.get("same_as"), entry)
        n = value.numel()
        stored = flat[entry["offset"] : entry["offset"] + n].view(entry["shape"])
        assert torch.equal(stored, value.float()), key
    zh = Path(built_site.dir) / "zh" / live_small.OUT_DIR / f"{name}.json"
    assert zh.read_bytes() == (folder / f"{name}.json").read_bytes()


def _unpack(manifest: dict, data: bytes) -> dict:
    flat = torch.frombuffer(bytearray(data), dtype=torch.float32)
    out = {}
    for key, entry in manifest["tensors"].items():
        entry = manifest["tensors"].get(entry.get("same_as"), entry)
        n = int(torch.Size(entry["shape"]).numel())
        out[key] = flat[entry["offset"] : entry["offset"] + n].view(entry["shape"])
    return out


def test_export_round_trips_and_stores_a_shared_table_once():
    """export_bytes on fresh models (no build needed): every tensor comes back bit for bit;
    the encoder–decoder's shared embedding is stored once and named twice."""
    from attention_src.decoder import CausalLM
    from attention_src.encoder_decoder import EncoderDecoder

    torch.manual_seed(0)
    causal = CausalLM(vocab_size=10, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=6)
    manifest, data = live_small.export_bytes("causal-copy", causal)
    for key, value in _unpack(manifest, data).items():
        assert torch.equal(value, causal.state_dict()[key]), key
    assert manifest["config"]["max_len"] == 6 and manifest["config"]["symbols"] == list(range(10))
    assert manifest["weights"].startswith("causal-copy.") and len(data) == manifest["weights_bytes"]

    seq = EncoderDecoder(12, 8, 2, 1, 16, dropout=0.0, max_len=9, norm_first=True)
    manifest, data = live_small.export_bytes("encoder-decoder-copy", seq)
    shared = manifest["tensors"]["target_embedding.weight"]
    assert shared == {"same_as": "encoder.embedding.weight"}
    params = sum(p.numel() for p in seq.parameters())  # the shared table once
    assert len(data) == 4 * params
    for key, value in _unpack(manifest, data).items():
        assert torch.equal(value, seq.state_dict()[key]), key
    assert manifest["config"]["bos"] == 0 and 0 not in manifest["config"]["symbols"]


def test_export_refuses_an_unknown_model():
    with pytest.raises(ValueError, match=r"name must be one of \['causal-copy'"):
        live_small.export_bytes("gpt-2", None)
