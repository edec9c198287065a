"""The small models' export (site_tools/outputs/live_small.py), checked without a build or a browser
(the built site's export: tests/site/test_live_small_export.py).

What the page computes with it -- every attention weight within 1e-4 of PyTorch, every symbol
identical, the widget's messages, the audit with a result on the page -- is checked in the
page's one visit of the browser pass (tests/browser/widget_small.py, run by test_widgets.py and
test_zh.py).
"""

from __future__ import annotations

import pytest
import torch

from site_tools.outputs import live_small


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
