"""attention_src.models.smollm2 and attention_src.models.gguf_weights: SmolLM2-135M-Instruct
on our own modules against the reference implementation, transformers' ``LlamaForCausalLM`` loaded
by transformers' own GGUF loader from the same file (eager attention).

Checked: our dequantised, un-permuted weights equal the ones transformers loads, tensor
for tensor; the logits and every layer's attention weights equal the reference for
prompts of different lengths and a batch, in float32 and float64; greedy ``generate``
writes the reference's tokens, with and without our KV cache, and called plainly it ends
at the model's own end-of-turn token (read from the file); the cache read in
chunks gives the logits of one full pass (RoPE offsets); without the q/k un-permutation
the model is far from the reference (so the un-permutation is doing real work); the
un-permutation inverts llama.cpp's permutation, written here from its rule; the KV
cache holds 3x fewer bytes per token than multi-head attention would, counted from its
tensors; the tokenizer and the chat template against transformers' tokenizer from the
GGUF; the sha256 pin; the error messages.

The expensive objects (our parts, the reference model and tokenizer) are loaded once per
module and device.
"""

from __future__ import annotations

import copy
import os
import shutil

import pytest
import torch

from attention_src.kv_cache import kv_cache_bytes_per_token
from attention_src.machinery import verify_sha256
from attention_src.models.gguf_weights import (
    Q4_1_BLOCK_BYTES,
    SMOLLM2_SHA256,
    decode_q4_1,
    q4_1_block,
    read_smollm2,
    smollm2_path,
    unpermute_qk,
)
from attention_src.models.smollm2 import LlamaDecoder, load_smollm2
from tests.conftest import CUDA

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

TOL = 1e-4  # max abs difference of logits (the bound), both dtypes
WEIGHT_TOL = 1e-5  # of attention weights (probabilities)
# A batch of two sequences: our grouped attention broadcasts K/V over the query group
# and our RoPE angles are computed in float64 (transformers': float32), so the float32
# rounding differs a little more than for one sequence (measured 1.7e-4 here); both are
# far inside float32's own error for this model (about 6e-3, see the float64 test).
BATCH_TOL = 5e-4
TEXTS = [
    "Hello",
    "The quick brown fox jumps over the lazy dog, and then it runs far away.",
    # long enough for rotary angles at positions past 100
    " ".join(["Attention is all you need; the rest is details."] * 10),
]
QUESTION = "What is the capital of France?"
EOS = 2  # <|im_end|> in SmolLM2's vocabulary, read from the tokenizer below


@pytest.fixture(scope="module", params=["cpu", CUDA])
def dev(request) -> torch.device:
    return torch.device(request.param)


@pytest.fixture(scope="module")
def parts():
    return read_smollm2()


@pytest.fixture(scope="module")
def ours(parts, dev):
    return load_smollm2(parts=parts, device=dev)


@pytest.fixture(scope="module")
def ref_tokenizer():
    path = smollm2_path()
    return transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


@pytest.fixture(scope="module")
def reference(dev):
    path = smollm2_path()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        path.parent,
        gguf_file=path.name,
        dtype=torch.float32,
        attn_implementation="eager",
    )
    assert type(model).__name__ == "LlamaForCausalLM"
    return model.to(dev).eval()


def encode(tokenizer, texts, dev) -> list[torch.Tensor]:
    return [torch.tensor([tokenizer.encode(t)], device=dev) for t in texts]


def chat_prompt(tokenizer, question, dev) -> torch.Tensor:
    return torch.tensor([tokenizer.chat([{"role": "user", "content": question}])], device=dev)


def compare(model, ref, ids):
    """Max abs differences (logits, attention weights) of ``model`` and ``ref`` on ids."""
    with torch.no_grad():
        logits, weights = model(ids)
        out = ref(ids, output_attentions=True)
    assert logits.shape == out.logits.shape
    assert len(weights) == len(out.attentions) == 30
    w_diff = max(float((a - b).abs().max()) for a, b in zip(weights, out.attentions, strict=True))
    return float((logits - out.logits).abs().max()), w_diff


# --- the file and the layout of its weights ---------------------------------------


def test_the_file_is_the_pinned_one(tmp_path):
    verify_sha256(smollm2_path(), SMOLLM2_SHA256)  # the installed file passes
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF not really")
    with pytest.raises(ValueError, match="sha256 .* expected " + SMOLLM2_SHA256):
        verify_sha256(fake, SMOLLM2_SHA256)
    with pytest.raises(ValueError, match="sha256"):
        read_smollm2(fake, tokenizer=False)  # refused before reading
    with pytest.raises(FileNotFoundError, match="no file"):
        verify_sha256(tmp_path / "missing.gguf", SMOLLM2_SHA256)


def llama_cpp_permute(w: torch.Tensor, n_head: int) -> torch.Tensor:
    """The permutation llama.cpp's converter applies to q and k: within each head,
    rows ``[a_0 .. a_{n-1}, b_0 .. b_{n-1}]`` become ``[a_0, b_0, a_1, b_1, ...]``
    (the rotate-half pairs ``(i, i + Dh/2)`` become neighbours)."""
    rows = w.size(0)
    dh = rows // n_head
    out = torch.empty_like(w)
    for h in range(n_head):
        for i in range(dh // 2):
            out[h * dh + 2 * i] = w[h * dh + i]  # a_i
            out[h * dh + 2 * i + 1] = w[h * dh + dh // 2 + i]  # b_i
    return out


@pytest.mark.parametrize("n_head, dh", [(9, 64), (3, 64), (1, 4), (2, 6)])
def test_unpermute_inverts_llama_cpp(n_head, dh, device, randn):
    w = randn(n_head * dh, 5)
    stored = llama_cpp_permute(w, n_head)
    assert not torch.equal(stored, w)
    assert torch.equal(unpermute_qk(stored, n_head), w)


def test_unpermute_errors(randn):
    with pytest.raises(ValueError, match="10 rows, not a multiple of 2 \\* num_heads = 4"):
        unpermute_qk(randn(10, 3), 2)
    with pytest.raises(ValueError, match="2-D"):
        unpermute_qk(randn(4), 1)
    with pytest.raises(ValueError, match="num_heads"):
        unpermute_qk(randn(4, 4), 0)


def test_a_changed_file_is_checked_again(tmp_path):
    """The file is hashed and parsed once per process while it stays the same; another
    file at the same path is checked again before a byte of it is read."""
    model = tmp_path / "model.gguf"
    shutil.copyfile(smollm2_path(), model)
    assert len(q4_1_block("blk.0.attn_v.weight", path=model)) == Q4_1_BLOCK_BYTES
    damaged = bytearray(model.read_bytes())
    damaged[-1] ^= 0xFF
    (tmp_path / "new.gguf").write_bytes(bytes(damaged))
    (tmp_path / "new.gguf").replace(model)  # as a reinstall puts a file in place
    with pytest.raises(ValueError, match="sha256 .* expected " + SMOLLM2_SHA256):
        q4_1_block("blk.0.attn_v.weight", path=model)
    with pytest.raises(ValueError, match="sha256"):
        read_smollm2(model, tokenizer=False)
    model.unlink()
    with pytest.raises(FileNotFoundError, match="no file"):
        q4_1_block("blk.0.attn_v.weight", path=model)


def test_decode_q4_1_equals_gguf_dequantize():
    import numpy as np
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    for name, row, block in [("blk.0.attn_v.weight", 0, 0), ("blk.29.ffn_up.weight", 7, 11)]:
        raw = q4_1_block(name, row, block)
        assert len(raw) == Q4_1_BLOCK_BYTES
        got = decode_q4_1(raw)
        ref = dequantize(np.frombuffer(raw, dtype=np.uint8)[None], GGMLQuantizationType.Q4_1)
        assert torch.equal(got["weights"], torch.from_numpy(ref[0].copy()))
        assert got["codes"].shape == (32,) and 0 <= got["codes"].min() <= got["codes"].max() <= 15


def test_decode_q4_1_layout():
    # scale 0.5, minimum -1.0 (float16), then byte j = code j | code (j + 16) << 4
    head = torch.tensor([0.5, -1.0], dtype=torch.float16).view(torch.uint8)
    codes = torch.arange(32) % 16
    packed = (codes[:16] | codes[16:] << 4).to(torch.uint8)
    got = decode_q4_1(bytes(torch.cat([head, packed]).tolist()))
    assert got["scale"] == 0.5 and got["min"] == -1.0
    assert torch.equal(got["codes"], codes)
    assert torch.equal(got["weights"], 0.5 * codes.float() - 1.0)


def test_q4_1_errors():
    with pytest.raises(ValueError, match="block must be 20 bytes, got 3"):
        decode_q4_1(b"abc")
    with pytest.raises(ValueError, match="F32, not Q4_1"):
        q4_1_block("blk.0.attn_norm.weight")
    with pytest.raises(ValueError, match="no tensor"):
        q4_1_block("blk.0.nothing.weight")
    with pytest.raises(ValueError, match="192 rows of 18 blocks; got row=192"):
        q4_1_block("blk.0.attn_v.weight", row=192)


def test_weights_equal_the_reference_loader(parts, reference):
    """Our dequantised, un-permuted tensors are exactly the ones transformers' GGUF loader
    puts into LlamaForCausalLM (whose output layer is the tied embedding)."""
    theirs = {k.removeprefix("model."): v for k, v in reference.state_dict().items()}
    assert reference.config.tie_word_embeddings
    assert torch.equal(theirs.pop("lm_head.weight"), theirs["embed_tokens.weight"])
    assert sorted(theirs) == sorted(parts["state"])
    for name, ours_w in parts["state"].items():
        assert ours_w.dtype == torch.float32
        assert torch.equal(ours_w, theirs[name].cpu()), name


def test_config_read_from_the_file(parts, reference):
    c, r = parts["config"], reference.config
    assert (c["num_layers"], c["num_heads"], c["num_kv_heads"]) == (30, 9, 3)
    assert c["d_model"] == r.hidden_size and c["d_ff"] == r.intermediate_size
    assert c["vocab_size"] == r.vocab_size == 49152
    assert c["num_heads"] == r.num_attention_heads
    assert c["num_kv_heads"] == r.num_key_value_heads
    assert c["rope_base"] == r.rope_parameters["rope_theta"] == 1e5
    assert c["norm_eps"] == pytest.approx(r.rms_norm_eps, rel=1e-6)
    assert c["eos_token_id"] == r.eos_token_id == EOS  # <|im_end|>, where decoding stops


# --- the model against the reference ------------------------------------------------


def test_contract_shapes(ours):
    model, tokenizer = ours
    ids = torch.tensor([tokenizer.encode("Hello there")] * 2, device=model.norm.weight.device)
    logits, weights = model(ids)
    B, L = ids.shape
    assert logits.shape == (B, L, 49152)
    assert len(weights) == 30 and all(w.shape == (B, 9, L, L) for w in weights)
    torch.testing.assert_close(weights[0].sum(-1), torch.ones(B, 9, L, device=ids.device))
    assert (weights[7].triu(1) == 0).all()  # causal: no weight on later tokens


def test_logits_and_weights_equal_reference_float32(ours, reference, dev):
    model, tokenizer = ours
    prompts = [*encode(tokenizer, TEXTS, dev), chat_prompt(tokenizer, QUESTION, dev)]
    assert sorted({p.size(1) for p in prompts}) == sorted(p.size(1) for p in prompts)
    assert max(p.size(1) for p in prompts) > 100
    for ids in prompts:
        logit_diff, weight_diff = compare(model, reference, ids)
        assert logit_diff <= TOL, (ids.size(1), logit_diff)
        assert weight_diff <= WEIGHT_TOL, (ids.size(1), weight_diff)
    batch = torch.cat(encode(tokenizer, ["One two three four", "Five six seven eight"], dev))
    assert batch.shape[0] == 2
    logit_diff, weight_diff = compare(model, reference, batch)
    assert logit_diff <= BATCH_TOL and weight_diff <= WEIGHT_TOL * 5, logit_diff


def test_logits_and_weights_equal_reference_float64(parts, ours, reference, dev):
    """In float64 too; transformers keeps RMSNorm, RoPE and softmax in float32 even
    then, so the bound is the float32 one. Taking our float64 model as the truth, our
    float32 model is as accurate as transformers' float32 one."""
    model, tokenizer = load_smollm2(parts=parts, device=dev, dtype=torch.float64)
    assert model.norm.weight.dtype == torch.float64
    ref64 = copy.deepcopy(reference).to(torch.float64)
    for ids in encode(tokenizer, TEXTS[1:2], dev):
        logit_diff, weight_diff = compare(model, ref64, ids)
        assert logit_diff <= TOL and weight_diff <= WEIGHT_TOL, (logit_diff, weight_diff)
    with torch.no_grad():
        truth = model(ids)[0]
        ours32 = (ours[0](ids)[0].double() - truth).abs().max()
        ref32 = (reference(ids).logits.double() - truth).abs().max()
    assert ours32 <= 1.5 * ref32, (ours32, ref32)


def test_without_unpermute_the_model_is_far_off(parts, ours, reference, dev):
    """A real check that the un-permutation matters: the file's own row order in q and
    k (everything else the same) moves the logits by whole units and changes the
    answer."""
    raw = read_smollm2(unpermute=False, tokenizer=False)["state"]
    for name, w in parts["state"].items():
        permuted = name.endswith(("q_proj.weight", "k_proj.weight"))
        assert torch.equal(w, raw[name]) != permuted, name
    with torch.device("meta"):
        wrong = LlamaDecoder(**parts["config"])
    wrong.load_state_dict(raw, assign=True)
    wrong.to(dev).eval()
    _, tokenizer = ours
    ids = chat_prompt(tokenizer, QUESTION, dev)
    logit_diff, weight_diff = compare(wrong, reference, ids)
    assert logit_diff > 1.0 and weight_diff > 0.1, (logit_diff, weight_diff)
    right = ours[0].generate(ids, 8)
    assert not torch.equal(wrong.generate(ids, 8), right)


# --- decoding -----------------------------------------------------------------------


def test_generate_equals_reference_greedy(ours, reference, dev):
    model, tokenizer = ours
    ids = chat_prompt(tokenizer, QUESTION, dev)
    out = model.generate(ids, max_new_tokens=20, eos_token_id=tokenizer.eos_token_id)
    theirs = reference.generate(ids, max_new_tokens=20, do_sample=False)
    assert torch.equal(out, theirs), tokenizer.decode(out[0])
    # a prompt that runs the full 20 tokens without an end-of-turn
    ids = encode(tokenizer, ["Once upon a time, in a small village,"], dev)[0]
    out = model.generate(ids, max_new_tokens=20)
    theirs = reference.generate(ids, max_new_tokens=20, do_sample=False)
    assert out.shape == (1, ids.size(1) + 20)
    assert torch.equal(out, theirs)


def test_plain_generate_ends_at_the_end_of_turn(ours, dev):
    """Without eos_token_id, generate stops at the model's own end token, <|im_end|>:
    the answer, then that token once, and nothing after it."""
    model, tokenizer = ours
    assert model.eos_token_id == tokenizer.eos_token_id == EOS
    ids = chat_prompt(tokenizer, "What is the capital of Japan?", dev)
    out = model.generate(ids, max_new_tokens=30)
    new = out[0, ids.size(1) :]
    assert new.numel() < 30 and int(new[-1]) == EOS and (new[:-1] != EOS).all()
    text = tokenizer.decode(new)
    assert text.endswith("<|im_end|>") and text.count("<|im_end|>") == 1, text
    assert "<|im_start|>" not in text and "Tokyo" in text, text
    assert "<|im_end|>" not in tokenizer.decode(new[:-1])
    explicit = model.generate(ids, max_new_tokens=30, eos_token_id=EOS)
    assert torch.equal(out, explicit)  # the default is the model's own end token
    assert torch.equal(model.generate(ids, max_new_tokens=30, use_cache=False), out)


def test_the_france_answer(ours, dev):
    model, tokenizer = ours
    ids = chat_prompt(tokenizer, QUESTION, dev)
    out = model.generate(ids, max_new_tokens=20, eos_token_id=tokenizer.eos_token_id)
    assert "Paris" in tokenizer.decode(out[0, ids.size(1) :])


def test_cache_and_no_cache_write_the_same_tokens(ours, dev):
    model, tokenizer = ours
    ids = torch.cat(encode(tokenizer, ["One two three four", "Five six seven eight"], dev))
    with_cache = model.generate(ids, max_new_tokens=6, use_cache=True)
    without = model.generate(ids, max_new_tokens=6, use_cache=False)
    assert with_cache.shape == (2, ids.size(1) + 6)
    assert torch.equal(with_cache, without)


def test_cached_chunks_give_the_full_pass(ours, dev):
    """Reading a sequence in three chunks through the cache (positions continue, keys
    accumulate) gives the logits and weights of one pass over the whole sequence."""
    model, tokenizer = ours
    ids = encode(tokenizer, [TEXTS[1]], dev)[0]
    with torch.no_grad():
        full, full_w = model(ids)
        cache, pieces = model.new_cache(), []
        for chunk in (ids[:, :5], ids[:, 5:6], ids[:, 6:]):
            logits, weights = model(chunk, cache=cache)
            pieces.append(logits)
    assert cache.length == ids.size(1)
    # each chunk is a product of another shape, so another float32 summation order: on
    # some CPUs past TOL (1.0e-4 measured), far inside float32's own error here (BATCH_TOL)
    torch.testing.assert_close(torch.cat(pieces, 1), full, atol=BATCH_TOL, rtol=0)
    # the last chunk's weights are the last rows of the full pass
    torch.testing.assert_close(weights[3], full_w[3][:, :, 6:], atol=WEIGHT_TOL, rtol=0)


def test_cache_holds_three_times_less_than_mha(ours, dev):
    model, tokenizer = ours
    ids = chat_prompt(tokenizer, QUESTION, dev)
    cache = model.new_cache()
    with torch.no_grad():
        model(ids, cache=cache)
    held = sum(t.numel() * t.element_size() for t in cache.keys + cache.values)
    per_token = held / ids.size(1)
    assert all(k.shape == (1, 3, ids.size(1), 64) for k in cache.keys)
    assert per_token == kv_cache_bytes_per_token(30, 576, 4, num_heads=9, num_kv_heads=3)
    assert kv_cache_bytes_per_token(30, 576, 4) == 3 * per_token  # full MHA: G = H = 9


# --- the tokenizer ------------------------------------------------------------------


TOKENIZER_TEXTS = [
    "Hello",
    " leading space and  double  spaces\nand a new line",
    "巴黎是法国的首都。",
    "Emoji 🙂 and café, naïve — dashes",
    "<|im_start|>user",
    "x = [i ** 2 for i in range(10)]",
]


def test_tokenizer_equals_transformers(ours, ref_tokenizer):
    _, tokenizer = ours
    for text in TOKENIZER_TEXTS:
        ids = tokenizer.encode(text)
        assert ids == ref_tokenizer.encode(text, add_special_tokens=False), text
        assert tokenizer.decode(ids) == ref_tokenizer.decode(ids) == text
        assert tokenizer.token_strings(ids) == ref_tokenizer.convert_ids_to_tokens(ids)
    assert tokenizer.eos_token_id == ref_tokenizer.eos_token_id == EOS
    assert tokenizer.vocab_size == len(ref_tokenizer) == 49152


def test_chat_template_equals_transformers(ours, ref_tokenizer):
    _, tokenizer = ours
    conversations = [
        [{"role": "user", "content": "What is 2+2?"}],
        [
            {"role": "system", "content": "You answer in one word."},
            {"role": "user", "content": "Colour of the sky?"},
            {"role": "assistant", "content": "Blue."},
            {"role": "user", "content": "And grass?"},
        ],
    ]
    for messages in conversations:
        theirs = ref_tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True
        )["input_ids"]
        ids = tokenizer.chat(messages)
        assert ids == list(theirs)
        text = tokenizer.decode(ids)
        assert text.endswith("<|im_start|>assistant\n")
        assert messages[-1]["content"] in text


def test_tokenizer_errors(ours):
    _, tokenizer = ours
    with pytest.raises(TypeError, match="text must be a str, got int"):
        tokenizer.encode(123)
    with pytest.raises(TypeError, match="list of \\{'role'"):
        tokenizer.chat("What is 2+2?")
    with pytest.raises(TypeError, match="list of \\{'role'"):
        tokenizer.chat([{"content": "no role"}])
    with pytest.raises(ValueError, match="one sequence of ids"):
        tokenizer.decode(torch.zeros(2, 3, dtype=torch.long))


def test_model_errors(ours, parts):
    model, tokenizer = ours
    dev = model.norm.weight.device
    ids = torch.tensor([tokenizer.encode("Hi")], device=dev)
    with pytest.raises(TypeError, match="integer token ids"):
        model(ids.float())
    with pytest.raises(ValueError, match="token ids must be in \\[0, 49152\\)"):
        model(ids + 49152)
    with pytest.raises(ValueError, match="max_new_tokens must be >= 0"):
        model.generate(ids, -1)
    with pytest.raises(TypeError, match="use_cache must be a bool"):
        model.generate(ids, 2, use_cache=1)
    with pytest.raises(ValueError, match="eos_token_id must be None or a token id"):
        model.generate(ids, 2, eos_token_id=-3)
    with pytest.raises(ValueError, match="exceeds max_len=8192"):
        model.generate(ids, 8192)
    with pytest.raises(ValueError, match="parts has no tokenizer"):
        load_smollm2(parts={**parts, "tokenizer": None})
