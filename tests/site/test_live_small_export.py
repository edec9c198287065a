"""The small models' export in the built site (site_tools/outputs/live_small.py): the weights the
build wrote for each page's widget are the trained ones, bit for bit, and the Chinese edition
serves the same manifest. (The export on fresh models, without a build:
tests/site_tools/test_live_small.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from site_tools.outputs import live_small
from tests.browser.widget_small import PAGES, reference_model


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
