"""attention_src.efficient: tiled_attention against naive attention and
F.scaled_dot_product_attention; FastMultiHeadAttention against nn.MultiheadAttention."""

from __future__ import annotations

import copy
import math
import shutil

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attention_src import (
    FastMultiHeadAttention,
    MultiHeadAttention,
    causal_mask,
    scaled_dot_product_attention,
    tiled_attention,
)
from attention_src.bench import tensor_memory_peak

from .helpers import MHA_SHAPES, SCENARIOS, mha_scenario, randomize, run_nn_mha


def _bottom_right(L: int, S: int, device) -> torch.Tensor:
    """query i sees key j iff j <= i + (S - L); also defined for S < L (rows of False)."""
    return torch.ones(L, S, dtype=torch.bool, device=device).tril(S - L)


def _sdpa(q, k, v, causal: bool) -> torch.Tensor:
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q, k, v = (t.expand(*batch, *t.shape[-2:]) for t in (q, k, v))
    mask = _bottom_right(q.size(-2), k.size(-2), q.device) if causal else None
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


# ------------------------------------------------------------------ tiled_attention: values

# (L, S): equal, more keys, more queries, single rows, and sizes that are not
# multiples of the tiles used below
LENGTHS = [(1, 1), (1, 9), (9, 1), (5, 5), (7, 12), (12, 7), (16, 16), (33, 70), (70, 33)]
TILES = [(4, None), (5, 3), (16, 64), (128, None)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("block_size", "key_block_size"), TILES)
@pytest.mark.parametrize(("L", "S"), LENGTHS)
def test_matches_naive_and_sdpa(randn, device, L, S, block_size, key_block_size, causal):
    q, k, v = randn(2, 3, L, 8), randn(2, 3, S, 8), randn(2, 3, S, 5)
    out = tiled_attention(
        q, k, v, causal=causal, block_size=block_size, key_block_size=key_block_size
    )
    assert out.shape == (2, 3, L, 5) and out.dtype == q.dtype
    torch.testing.assert_close(out, _sdpa(q, k, v, causal))
    mask = _bottom_right(L, S, device) if causal else None
    naive, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, naive)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("L", "S"), [(1, 1), (3, 5), (5, 3), (6, 6)])
def test_one_by_one_tiles(randn, L, S, causal):
    q, k, v = randn(2, L, 4), randn(2, S, 4), randn(2, S, 3)
    out = tiled_attention(q, k, v, causal=causal, block_size=1, key_block_size=1)
    torch.testing.assert_close(out, _sdpa(q, k, v, causal))


@pytest.mark.parametrize(
    ("q_shape", "k_shape", "v_shape"),
    [
        ((4, 8), (6, 8), (6, 8)),  # no batch dimension
        ((2, 5, 8), (2, 7, 8), (2, 7, 3)),
        ((2, 4, 5, 6), (1, 4, 9, 6), (1, 4, 9, 2)),  # key and value broadcast over B
        ((2, 1, 5, 6), (2, 3, 5, 6), (2, 3, 5, 6)),  # query broadcasts over H
        ((3, 1, 8), (1, 9, 8), (3, 9, 8)),
        ((2, 2, 2, 3, 4), (2, 2, 2, 6, 4), (2, 2, 2, 6, 10)),
    ],
)
@pytest.mark.parametrize("causal", [False, True])
def test_broadcast_leading_dimensions(randn, q_shape, k_shape, v_shape, causal):
    q, k, v = randn(*q_shape), randn(*k_shape), randn(*v_shape)
    out = tiled_attention(q, k, v, causal=causal, block_size=2, key_block_size=3)
    torch.testing.assert_close(out, _sdpa(q, k, v, causal))


@pytest.mark.parametrize(("L", "S", "causal"), [(2048, 2048, False), (1000, 4096, True)])
def test_large(randn, L, S, causal):
    q, k, v = randn(1, 1, L, 32), randn(1, 1, S, 32), randn(1, 1, S, 32)
    torch.testing.assert_close(tiled_attention(q, k, v, causal=causal), _sdpa(q, k, v, causal))


def test_8192_causal_matches_sdpa_with_bottom_right_mask(device, gen):
    q, k, v = torch.randn(3, 1, 1, 8192, 32, generator=gen, device=device)
    out = tiled_attention(q, k, v, causal=True)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(8192, 8192, device))
    torch.testing.assert_close(out, ref)


def test_block_size_does_not_change_the_result(randn):
    q, k, v = randn(2, 2, 37, 16), randn(2, 2, 53, 16), randn(2, 2, 53, 16)
    ref = tiled_attention(q, k, v, causal=True, block_size=37, key_block_size=53)  # one tile
    for bq, bk in [(1, 1), (3, 7), (8, 8), (16, 64), (64, 4)]:
        out = tiled_attention(q, k, v, causal=True, block_size=bq, key_block_size=bk)
        torch.testing.assert_close(out, ref)


def test_causal_is_bottom_right_like_causal_mask(randn, device):
    L, S = 4, 10
    q, k, v = randn(1, L, 8), randn(1, S, 8), randn(1, S, 8)
    ours = tiled_attention(q, k, v, causal=True, block_size=2, key_block_size=3)
    naive, _ = scaled_dot_product_attention(q, k, v, causal_mask(L, S, device=device))
    torch.testing.assert_close(ours, naive)
    # F.scaled_dot_product_attention's is_causal is top-left aligned: a different result
    top_left = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert (ours - top_left).abs().max() > 1e-2


def test_causal_outputs_ignore_future_keys(randn):
    L = 12
    q, k, v = randn(1, 2, L, 8), randn(1, 2, L, 8), randn(1, 2, L, 8)
    k2, v2 = k.clone(), v.clone()
    k2[..., 7:, :] = randn(1, 2, L - 7, 8) * 10
    v2[..., 7:, :] = randn(1, 2, L - 7, 8) * 10
    a = tiled_attention(q, k, v, causal=True, block_size=4, key_block_size=4)
    b = tiled_attention(q, k2, v2, causal=True, block_size=4, key_block_size=4)
    torch.testing.assert_close(a[..., :7, :], b[..., :7, :])
    assert (a[..., 7:, :] - b[..., 7:, :]).abs().max() > 1e-2  # negative control


def test_more_queries_than_keys_causal_gives_zeros_first(randn):
    q, k, v = randn(2, 9, 4), randn(2, 5, 4), randn(2, 5, 4)
    out = tiled_attention(q, k, v, causal=True, block_size=3, key_block_size=2)
    assert (out[:, :4] == 0).all()  # queries 0..3 see no key (j <= i - 4)
    assert (out[:, 4:].abs() > 0).any()
    torch.testing.assert_close(out, _sdpa(q, k, v, True))


def test_large_scores_do_not_overflow(randn):
    q, k, v = randn(1, 6, 4) * 100, randn(1, 20, 4) * 100, randn(1, 20, 4)
    out = tiled_attention(q, k, v, block_size=2, key_block_size=3)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, _sdpa(q, k, v, False))


def test_float64(randn):
    q, k, v = (randn(2, 3, 17, 8, dtype=torch.float64) for _ in range(3))
    out = tiled_attention(q, k, v, causal=True, block_size=4)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, _sdpa(q, k, v, True), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_is_computed_in_float32(randn, dtype):
    q, k, v = randn(2, 2, 40, 16), randn(2, 2, 50, 16), randn(2, 2, 50, 16)
    out = tiled_attention(q.to(dtype), k.to(dtype), v.to(dtype), block_size=8, key_block_size=16)
    assert out.dtype == dtype
    ref = _sdpa(q.to(dtype).float(), k.to(dtype).float(), v.to(dtype).float(), False)
    torch.testing.assert_close(out.float(), ref, atol=1e-2, rtol=1e-2)


def test_inputs_are_not_modified(randn):
    q, k, v = randn(1, 2, 9, 4), randn(1, 2, 11, 4), randn(1, 2, 11, 4)
    copies = [t.clone() for t in (q, k, v)]
    tiled_attention(q, k, v, causal=True, block_size=4, key_block_size=4)
    for t, c in zip((q, k, v), copies, strict=True):
        assert torch.equal(t, c)


def test_no_tensor_as_large_as_the_scores(device, gen):
    """Only the tiles: the peak is far below one (L, S) matrix, and doubling L
    roughly doubles it (naive attention quadruples)."""
    if device.type != "cpu":
        pytest.skip("the profiler-based count is for the CPU")

    def peak(L, fn):
        q, k, v = torch.randn(3, 1, 2, L, 16, generator=gen, device=device)
        return tensor_memory_peak(lambda: fn(q, k, v))

    tiled = [peak(L, tiled_attention) for L in (512, 1024)]
    naive = [peak(L, lambda *a: scaled_dot_product_attention(*a)[0]) for L in (512, 1024)]
    scores_1024 = 2 * 1024 * 1024 * 4
    assert tiled[1] < scores_1024 / 10
    assert tiled[1] <= 2.2 * tiled[0]
    assert naive[1] >= scores_1024 and naive[1] >= 3.5 * naive[0]


# ------------------------------------------------------------------ tiled_attention: errors


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"block_size": 0}, ValueError, r"block_size must be positive, got 0"),
        ({"block_size": 2.0}, TypeError, r"block_size must be an int, got float 2\.0"),
        ({"key_block_size": -1}, ValueError, r"key_block_size must be positive, got -1"),
    ],
)
def test_bad_block_sizes(randn, kwargs, error, pattern):
    q = randn(1, 4, 8)
    with pytest.raises(error, match=pattern):
        tiled_attention(q, q, q, **kwargs)


def test_requires_grad_is_refused(randn):
    q = randn(1, 4, 8, requires_grad=True)
    k, v = randn(1, 4, 8), randn(1, 4, 8)
    with pytest.raises(
        ValueError,
        match=r"forward pass only: it writes each tile with out= and in place, which "
        r"autograd does not support \(torch would stop inside the loop\); call it under "
        r"torch\.no_grad\(\)",
    ):
        tiled_attention(q, k, v)
    # what the guard stands in for: torch's own refusal, from inside step 1
    with pytest.raises(RuntimeError, match=r"out=\.\.\. arguments don't support automatic"):
        torch.bmm(q, k.transpose(1, 2), out=torch.empty(1, 4, 4, device=q.device))
    with torch.no_grad():
        out = tiled_attention(q, k, v)
    torch.testing.assert_close(out, _sdpa(q.detach(), k, v, False))


def test_shape_errors_are_those_of_the_naive_function(randn):
    with pytest.raises(ValueError, match=r"query and key must have the same feature size Dk"):
        tiled_attention(randn(3, 4), randn(5, 2), randn(5, 2))
    with pytest.raises(ValueError, match=r"key and value must have the same length S"):
        tiled_attention(randn(3, 4), randn(5, 4), randn(6, 4))
    with pytest.raises(TypeError, match=r"query must be a floating-point tensor"):
        tiled_attention(torch.zeros(3, 4, dtype=torch.long), randn(5, 4), randn(5, 4))


# ---------------------------------------------------------- FastMultiHeadAttention vs nn


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize(("B", "L", "S", "D", "H"), MHA_SHAPES)
def test_fast_mha_matches_nn_multihead_attention(
    randn, device, B, L, S, D, H, batch_first, bias, scenario
):
    mha = randomize(nn.MultiheadAttention(D, H, bias=bias, batch_first=batch_first).to(device))
    mha.eval()
    fast = FastMultiHeadAttention.from_torch(mha)
    x, ctx, mask, key_padding_mask, attn_mask = mha_scenario(randn, device, B, L, S, D, scenario)
    ref, _ = run_nn_mha(mha, x, ctx, key_padding_mask, attn_mask, need_weights=False)
    out, weights = fast(x, context=ctx, mask=mask)
    assert weights is None and out.shape == (B, L, D)
    torch.testing.assert_close(out, ref)


def test_fast_mha_equals_multi_head_attention_with_the_same_weights(randn, device):
    mha = randomize(nn.MultiheadAttention(12, 3, batch_first=True)).to(device).eval()
    fast, ours = FastMultiHeadAttention.from_torch(mha), MultiHeadAttention.from_torch(mha)
    x, ctx = randn(2, 5, 12), randn(2, 7, 12)
    mask = causal_mask(5, device=device)
    torch.testing.assert_close(fast(x, mask=mask)[0], ours(x, mask=mask)[0])
    torch.testing.assert_close(fast(x, context=ctx)[0], ours(x, context=ctx)[0])


def test_fast_mha_has_one_fused_projection(device):
    mha = randomize(nn.MultiheadAttention(12, 3, batch_first=True)).to(device)
    fast = FastMultiHeadAttention.from_torch(mha)
    names = {name for name, _ in fast.named_parameters()}
    assert names == {"qkv_proj.weight", "qkv_proj.bias", "out_proj.weight", "out_proj.bias"}
    assert fast.qkv_proj.weight.shape == (36, 12)
    assert torch.equal(fast.qkv_proj.weight, mha.in_proj_weight)
    assert torch.equal(fast.qkv_proj.bias, mha.in_proj_bias)
    assert fast.training and (fast.d_head, fast.dropout) == (4, 0.0)
    with torch.no_grad():  # a copy, not shared storage
        mha.in_proj_weight.zero_()
    assert fast.qkv_proj.weight.abs().sum() > 0
    no_bias = FastMultiHeadAttention(8, 2, bias=False)
    assert no_bias.qkv_proj.bias is None and no_bias.out_proj.bias is None


def test_fast_mha_in_float64_and_gradients(randn, device):
    mha = randomize(nn.MultiheadAttention(8, 2, batch_first=True)).to(device).double().eval()
    fast = FastMultiHeadAttention.from_torch(mha)
    ours = MultiHeadAttention.from_torch(mha)
    x = randn(2, 4, 8, dtype=torch.float64, requires_grad=True)
    x2 = x.detach().clone().requires_grad_(True)
    mask = causal_mask(4, device=device)
    fast(x, mask=mask)[0].square().sum().backward()
    ours(x2, mask=mask)[0].square().sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(fast.qkv_proj.weight.grad[:8], ours.q_proj.weight.grad)


def test_fast_mha_gradcheck(randn, device):
    fast = FastMultiHeadAttention(4, 2).to(device).double()
    x = randn(1, 2, 4, dtype=torch.float64, requires_grad=True)
    ctx = randn(1, 3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: fast(a, context=b)[0], (x, ctx))


def test_fast_mha_dropout_train_and_eval(randn, device):
    fast = FastMultiHeadAttention(8, 2, dropout=0.5).to(device)
    x = randn(2, 6, 8)
    fast.eval()
    assert torch.equal(fast(x)[0], fast(x)[0])
    fast.train()
    torch.manual_seed(3)
    a = fast(x)[0]
    torch.manual_seed(3)
    b = fast(x)[0]
    torch.manual_seed(4)
    c = fast(x)[0]
    assert torch.equal(a, b) and not torch.equal(a, c)
    fast.eval()
    assert not torch.allclose(a, fast(x)[0])


def test_fast_mha_bfloat16(randn, device):
    mha = randomize(nn.MultiheadAttention(8, 2, batch_first=True)).to(device).eval()
    fast = FastMultiHeadAttention.from_torch(mha)
    x = randn(2, 5, 8)
    ref = fast(x)[0]
    out = copy.deepcopy(fast).to(torch.bfloat16)(x.to(torch.bfloat16))[0]
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ref, atol=5e-2, rtol=5e-2)


# ---------------------------------------------------------- FastMultiHeadAttention: errors


def test_fast_mha_constructor_errors():
    with pytest.raises(ValueError, match=r"d_model \(10\) must be divisible by num_heads \(3\)"):
        FastMultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\), got 1\.0"):
        FastMultiHeadAttention(8, 2, dropout=1.0)
    with pytest.raises(TypeError, match=r"num_heads must be an int, got float"):
        FastMultiHeadAttention(8, 2.0)


def test_fast_mha_input_errors(randn, device):
    fast = FastMultiHeadAttention(8, 2).to(device)
    with pytest.raises(ValueError, match=r"x must be 3-D \(B, L, D\).*x\.unsqueeze\(0\)"):
        fast(randn(4, 8))
    with pytest.raises(ValueError, match=r"x has 6 features per token, expected d_model=8"):
        fast(randn(2, 4, 6))
    with pytest.raises(ValueError, match=r"x and context must have the same batch size B"):
        fast(randn(2, 4, 8), context=randn(3, 4, 8))
    with pytest.raises(ValueError, match=r"a 3-D mask \(2, 4, 4\) is ambiguous"):
        fast(randn(2, 4, 8), mask=torch.ones(2, 4, 4, dtype=torch.bool, device=device))
    with pytest.raises(
        ValueError, match=r"mask of shape \(3, 1, 1, 4\) does not broadcast to .* = \(2, 2, 4, 4\)"
    ):
        fast(randn(2, 4, 8), mask=torch.ones(3, 1, 1, 4, dtype=torch.bool, device=device))
    with pytest.raises(TypeError, match=r"mask must be a bool tensor.*torch\.int64"):
        fast(randn(2, 4, 8), mask=torch.ones(4, 4, dtype=torch.long, device=device))


def test_fast_mha_takes_the_mask_second(randn, device):
    fast = FastMultiHeadAttention(8, 2).to(device)
    x, memory = randn(2, 5, 8), randn(2, 7, 8)
    mask = causal_mask(5, device=device)
    torch.testing.assert_close(fast(x, mask)[0], fast(x, mask=mask)[0], rtol=0, atol=0)
    assert not torch.allclose(fast(x, mask)[0], fast(x)[0])  # the mask was applied
    with pytest.raises(
        TypeError,
        match=r"the second argument of FastMultiHeadAttention\.forward is the mask, got a "
        r"float tensor of shape \(2, 7, 8\).*context is keyword-only: for cross-attention "
        r"call attn\(x, context=memory\)",
    ):
        fast(x, memory)
    assert fast(x, context=memory)[0].shape == (2, 5, 8)  # the advice works


def test_fast_mha_from_torch_errors():
    with pytest.raises(TypeError, match=r"m must be an nn\.MultiheadAttention, got Linear"):
        FastMultiHeadAttention.from_torch(nn.Linear(4, 4))
    with pytest.raises(ValueError, match=r"kdim == vdim == embed_dim"):
        FastMultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=4, vdim=4))
    with pytest.raises(ValueError, match=r"add_bias_kv or add_zero_attn"):
        FastMultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))


# ------------------------------------------------------------------ torch.compile


@pytest.mark.skipif(
    shutil.which("cc") is None and shutil.which("gcc") is None,
    reason="torch.compile on the CPU needs a C compiler",
)
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated")
def test_torch_compile_turns_naive_attention_into_sdpa():
    """What the fused-attention chapter says of torch.compile (its block is
    not run by the build, because compiling takes seconds): the compiled naive
    function gives the same output and calls one of SDPA's fused kernels."""
    from torch.autograd.profiler import profile

    def naive(q, k, v):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        return torch.softmax(scores, dim=-1) @ v

    gen = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 1, 4, 256, 64, generator=gen).unbind(0)
    compiled = torch.compile(naive)
    torch.testing.assert_close(compiled(q, k, v), naive(q, k, v))
    with profile() as prof:
        compiled(q, k, v)
    kernels = {e.key for e in prof.function_events}
    assert any(key.startswith("aten::_scaled_dot_product") for key in kernels)
    with profile() as prof:
        naive(q, k, v)
    assert not any(
        e.key.startswith("aten::_scaled_dot_product") for e in prof.function_events
    )  # negative control: uncompiled, no SDPA kernel
