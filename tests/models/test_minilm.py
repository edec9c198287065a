"""attention_src.models.minilm: all-MiniLM-L6-v2 on our own modules against the reference
implementation, ``transformers.BertModel`` (eager attention, the same weights file).

Checked: every layer's hidden states (real tokens) and attention weights for a padded
batch of sentences of different lengths, in float32 and float64, on every device; padded
keys get weight exactly 0; token-type embeddings; the sentence embedding against the mean
pool of transformers' output (and the package's pooling config); the tokenizer against
transformers' BertTokenizerFast on the same files; head knock-out against the reference
with the same head removed; the sha256 check; the error messages.

The reference is loaded once per (device, dtype) and kept for the module.
"""

from __future__ import annotations

import functools
import json
import os
import shutil

import pytest
import torch

from attention_src import load_minilm  # the public contract
from attention_src.machinery import verify_sha256
from attention_src.models.minilm import (
    MINILM_SHA256,
    MiniLM,
    mean_pool,
    minilm_dir,
)

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")

SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "Hi!",
    "A man is eating a piece of bread.",
    "Naïve café-goers re-read Schrödinger's 1935 paper, twice… 🙂",
]
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}
DTYPES = [torch.float32, torch.float64]


@functools.cache
def ours(device: str, dtype: torch.dtype):
    return load_minilm(device=device, dtype=dtype)


@functools.cache
def reference(device: str, dtype: torch.dtype):
    model = transformers.BertModel.from_pretrained(
        minilm_dir(), attn_implementation="eager", dtype=torch.float32
    )
    return model.to(device=device, dtype=dtype).eval()


def run_reference(device, dtype, batch, **kwargs):
    ref = reference(str(device), dtype)
    with torch.no_grad():
        return ref(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"].long(),
            output_hidden_states=True,
            output_attentions=True,
            **kwargs,
        )


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_layer_matches_transformers_on_a_padded_batch(device, dtype):
    model, tokenizer = ours(str(device), dtype)
    batch = tokenizer(SENTENCES, device=device)
    real = batch["attention_mask"]  # (B, L)
    assert len(set(real.sum(1).tolist())) == len(SENTENCES)  # all lengths differ
    with torch.no_grad():
        states, weights = model.hidden_states(batch["input_ids"], real)
    expected = run_reference(device, dtype, batch)
    assert len(states) == len(expected.hidden_states) == 7
    assert len(weights) == len(expected.attentions) == 6
    worst = 0.0
    for got, want in zip(states, expected.hidden_states, strict=True):
        assert got.dtype == dtype and got.shape == want.shape
        worst = max(worst, (got - want)[real].abs().max().item())
    for got, want in zip(weights, expected.attentions, strict=True):
        assert got.shape == want.shape == (len(SENTENCES), 12, *real.shape[1:] * 2)
        worst = max(worst, (got - want).abs().max().item())
        padded_keys = ~real[:, None, None, :].expand_as(got)
        assert (got[padded_keys] == 0).all()  # exactly 0, not just small
        torch.testing.assert_close(got.sum(-1), torch.ones_like(got.sum(-1)))
    assert worst <= TOL[dtype], f"max abs difference {worst:.3g} > {TOL[dtype]}"


def test_forward_is_the_last_state_and_the_weights(device):
    model, tokenizer = ours(str(device), torch.float32)
    batch = tokenizer(SENTENCES[:2], device=device)
    with torch.no_grad():
        hidden, weights = model(batch["input_ids"], batch["attention_mask"])
        states, weights2 = model.hidden_states(batch["input_ids"], batch["attention_mask"])
    assert hidden.shape == (2, batch["input_ids"].size(1), 384)
    torch.testing.assert_close(hidden, states[-1], rtol=0, atol=0)
    for a, b in zip(weights, weights2, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_token_types_match_transformers(device):
    model, tokenizer = ours(str(device), torch.float32)
    batch = tokenizer(SENTENCES, device=device)
    gen = torch.Generator().manual_seed(0)
    types = torch.randint(2, batch["input_ids"].shape, generator=gen).to(device)
    with torch.no_grad():
        hidden, _ = model(batch["input_ids"], batch["attention_mask"], token_type_ids=types)
        plain, _ = model(batch["input_ids"], batch["attention_mask"])
    want = run_reference(device, torch.float32, batch, token_type_ids=types)
    real = batch["attention_mask"]
    assert (hidden - want.last_hidden_state)[real].abs().max() <= 1e-5
    assert (hidden - plain)[real].abs().max() > 1e-3  # the types do matter


def test_padding_does_not_change_a_sentence(device):
    model, tokenizer = ours(str(device), torch.float32)
    batch = tokenizer(SENTENCES, device=device)
    alone = tokenizer(SENTENCES[1:2], device=device)
    n = alone["input_ids"].size(1)
    with torch.no_grad():
        hidden, weights = model(batch["input_ids"], batch["attention_mask"])
        hidden1, weights1 = model(alone["input_ids"], alone["attention_mask"])
    torch.testing.assert_close(hidden[1, :n], hidden1[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(weights[3][1, :, :n, :n], weights1[3][0], atol=1e-6, rtol=0)


def test_sentence_embedding_is_the_mean_pool_of_the_reference(device):
    config = json.loads((minilm_dir() / "1_Pooling" / "config.json").read_text())
    assert config["pooling_mode_mean_tokens"] and not config["pooling_mode_cls_token"]
    modules = json.loads((minilm_dir() / "modules.json").read_text())
    assert modules[-1]["type"].endswith("Normalize")
    model, tokenizer = ours(str(device), torch.float32)
    batch = tokenizer(SENTENCES, device=device)
    with torch.no_grad():
        got = model.sentence_embedding(batch["input_ids"], batch["attention_mask"])
    last = run_reference(device, torch.float32, batch).last_hidden_state  # (B, L, D)
    m = batch["attention_mask"].float()[..., None]
    mean = (last * m).sum(1) / m.sum(1)
    want = mean / mean.norm(dim=-1, keepdim=True)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
    torch.testing.assert_close(got.norm(dim=-1), torch.ones(len(SENTENCES), device=device))
    # the meaning shows: a paraphrase is closer than an unrelated sentence
    pair = tokenizer(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The girl is carrying a baby.",
        ],
        device=device,
    )
    with torch.no_grad():
        e = model.sentence_embedding(pair["input_ids"], pair["attention_mask"])
    assert e[0] @ e[1] > e[0] @ e[2] + 0.3


def test_mean_pool_ignores_padding_and_checks_shapes():
    hidden = torch.tensor([[[3.0, 4.0], [100.0, 100.0]]])  # (1, 2, 2)
    mask = torch.tensor([[True, False]])
    torch.testing.assert_close(mean_pool(hidden, mask), torch.tensor([[0.6, 0.8]]))
    with pytest.raises(ValueError, match=r"hidden \(1, 2, 2\) and attention_mask \(1, 3\)"):
        mean_pool(hidden, torch.ones(1, 3, dtype=torch.bool))


def test_tokenizer_matches_transformers():
    _, tokenizer = ours("cpu", torch.float32)
    ref = transformers.AutoTokenizer.from_pretrained(minilm_dir())
    assert isinstance(ref, transformers.BertTokenizerFast)
    texts = [
        *SENTENCES,
        "UNAFFABLE antidisestablishmentarianism",
        "   spaces\tand\nlines  ",
        "x" * 300,
    ]
    got = tokenizer(texts)
    want = ref(texts, padding=True, return_tensors="pt")
    assert got["input_ids"].dtype == torch.int64 and got["attention_mask"].dtype == torch.bool
    assert torch.equal(got["input_ids"], want["input_ids"])
    assert torch.equal(got["attention_mask"], want["attention_mask"].bool())
    assert torch.equal(got["token_type_ids"], want["token_type_ids"])
    for text in texts:
        assert tokenizer.tokens(text) == ref.convert_ids_to_tokens(ref(text)["input_ids"])
    # the file asks for padding to 128; ours pads each batch to its longest text
    assert tokenizer(["Hi!"])["input_ids"].shape == (1, 4)
    assert tokenizer.decode(got["input_ids"][1]) == ref.decode(
        want["input_ids"][1], skip_special_tokens=True
    )


def test_knock_out_matches_the_reference_without_those_heads(device):
    model, tokenizer = ours(str(device), torch.float32)
    batch = tokenizer(SENTENCES, device=device)
    real = batch["attention_mask"]
    heads = [(0, 3), (2, 7), (2, 0), (5, 11)]
    with torch.no_grad():
        before, _ = model(batch["input_ids"], real)
        with model.knock_out(heads):
            knocked, weights = model(batch["input_ids"], real)
        after, _ = model(batch["input_ids"], real)
    torch.testing.assert_close(after, before, rtol=0, atol=0)  # restored exactly
    assert (knocked - before)[real].abs().max() > 1e-3
    # the reference with the same heads' outputs zeroed through its head mask
    ref = reference(str(device), torch.float32)
    layers = ref.encoder.layer
    saved = {}
    with torch.no_grad():
        for layer, head in heads:
            dense = layers[layer].attention.output.dense.weight
            saved.setdefault(layer, dense.clone())
            dense[:, head * 32 : (head + 1) * 32] = 0
        try:
            want = run_reference(device, torch.float32, batch)
        finally:
            for layer, w in saved.items():
                layers[layer].attention.output.dense.weight.copy_(w)
    assert (knocked - want.last_hidden_state)[real].abs().max() <= 1e-5
    assert (weights[5] - want.attentions[5]).abs().max() <= 1e-5
    with pytest.raises(ValueError, match=r"no head \(6, 0\): layers are 0..5, heads 0..11"):
        with model.knock_out([(6, 0)]):
            pass
    with pytest.raises(TypeError, match="knock_out takes \\(layer, head\\) pairs, got int 3"):
        with model.knock_out([3]):
            pass


def test_sha256_is_checked_before_loading(tmp_path):
    verify_sha256(minilm_dir() / "model.safetensors", MINILM_SHA256)  # the real file passes
    for name in ("tokenizer.json", "config.json"):
        shutil.copy(minilm_dir() / name, tmp_path / name)
    data = bytearray((minilm_dir() / "model.safetensors").read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit flipped in the middle of a weight
    (tmp_path / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"expected {MINILM_SHA256}: the file is damaged"):
        load_minilm(tmp_path)


def test_bad_input_gets_a_clear_error():
    model, tokenizer = ours("cpu", torch.float32)
    batch = tokenizer(SENTENCES[:2])
    ids, mask = batch["input_ids"], batch["attention_mask"]
    with pytest.raises(
        TypeError,
        match=r"input_ids must be integer token ids \(torch\.long\), got dtype torch\.float32; "
        r"get them from the tokenizer: tokenizer\(texts\)\['input_ids'\]",
    ):
        model(ids.float(), mask)
    with pytest.raises(TypeError, match=r"input_ids must be integer token ids .* torch\.int16"):
        model(ids.short(), mask)
    assert torch.equal(model(ids.int(), mask)[0], model(ids, mask)[0])  # int32 ids are fine
    with pytest.raises(
        ValueError,
        match=r"input_ids must be 2-D \(B, L\), got 1-D shape \(16\); for a single example add "
        r"a batch dimension: input_ids\.unsqueeze\(0\)",
    ):
        model(ids[0], mask[0])
    with pytest.raises(TypeError, match=r"attention_mask must be bool .* got dtype torch\.int64"):
        model(ids, mask.long())
    with pytest.raises(ValueError, match=r"attention_mask must have the shape of input_ids"):
        model(ids, mask[:, :3])
    with pytest.raises(
        ValueError,
        match=r"input_ids: token ids must be in \[0, 30522\), got values from 0 to 30522",
    ):
        model(torch.tensor([[0, 30522]]))
    with pytest.raises(
        ValueError,
        match=r"input_ids has length 513, but the position table covers only max_len=512 "
        r"positions",
    ):
        model(torch.zeros(1, 513, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"input_ids must hold at least one token"):
        model(torch.zeros(1, 0, dtype=torch.int64))
    with pytest.raises(ValueError, match="every sequence needs at least one real token"):
        model(ids, torch.zeros_like(mask))
    with pytest.raises(ValueError, match="token_type_ids must have the shape of input_ids"):
        model(ids, mask, token_type_ids=ids[:, :2])
    with pytest.raises(TypeError, match=r"positional argument"):
        model(ids, mask, ids)  # token_type_ids is keyword-only
    with pytest.raises(TypeError, match=r"pass a list of texts, e.g. tokenizer\(\[text\]\)"):
        tokenizer("one sentence")
    with pytest.raises(TypeError, match="texts must be a non-empty list of str"):
        tokenizer([])
    with pytest.raises(TypeError, match="text must be a str, got int"):
        tokenizer.tokens(3)


def test_an_untrained_minilm_has_the_checkpoints_shapes():
    model = MiniLM(vocab_size=50, d_model=8, num_heads=2, num_layers=2, d_ff=16, max_len=10)
    ids = torch.randint(50, (3, 10))
    hidden, weights = model.eval()(ids)
    assert hidden.shape == (3, 10, 8) and [w.shape for w in weights] == [(3, 2, 10, 10)] * 2
    with pytest.raises(ValueError, match="num_layers must be positive, got 0"):
        MiniLM(num_layers=0)
