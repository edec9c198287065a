"""attention_src.masks: causal (bottom-right aligned) and padding masks, True = may attend."""

from __future__ import annotations

import pytest
import torch

from attention_src import causal_mask, document_mask, padding_mask, prefix_lm_mask


def _expected_causal(L: int, S: int, device) -> torch.Tensor:
    """Query i may attend key j iff j <= i + (S - L), written out element by element."""
    rows = [[j <= i + (S - L) for j in range(S)] for i in range(L)]
    return torch.tensor(rows, dtype=torch.bool, device=device)


@pytest.mark.parametrize(("L", "S"), [(1, 1), (4, 4), (7, 7), (3, 5), (1, 6), (5, 9), (16, 16)])
def test_causal_mask_matches_definition(device, L, S):
    mask = causal_mask(L, S, device=device)
    assert mask.dtype == torch.bool
    assert mask.shape == (L, S)
    assert mask.device.type == device.type
    assert torch.equal(mask, _expected_causal(L, S, device))


@pytest.mark.parametrize("L", [1, 2, 5, 8])
def test_square_causal_mask_is_lower_triangle(device, L):
    mask = causal_mask(L, device=device)
    assert torch.equal(mask, torch.ones(L, L, dtype=torch.bool, device=device).tril())
    # the diagonal is allowed (a token sees itself), the strict upper triangle is not
    assert mask.diagonal().all()
    assert not mask.triu(1).any()


@pytest.mark.parametrize(("L", "S"), [(2, 5), (3, 4), (1, 7)])
def test_causal_mask_is_bottom_right_aligned(device, L, S):
    mask = causal_mask(L, S, device=device)
    ones = torch.ones(L, S, dtype=torch.bool, device=device)
    assert torch.equal(mask, ones.tril(S - L))
    # ... which is not the top-left triangle that tril() (and torch's is_causal) gives
    assert not torch.equal(mask, ones.tril())
    assert mask[-1].all()  # the last query sees every key
    assert int(mask[0].sum()) == S - L + 1  # the first query sees the S - L cached keys and itself


def test_causal_mask_default_device_is_cpu():
    assert causal_mask(3).device.type == "cpu"


def test_causal_mask_fewer_keys_than_queries_raises():
    with pytest.raises(ValueError, match=r"size_k \(3\) must be >= size_q \(5\)"):
        causal_mask(5, 3)


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((0,), ValueError, r"size_q must be positive, got 0"),
        ((3, 0), ValueError, r"size_k must be positive, got 0"),
        ((2.0,), TypeError, r"size_q must be an int, got float 2\.0"),
        ((True,), TypeError, r"size_q must be an int, got bool True"),
    ],
)
def test_causal_mask_bad_sizes(args, error, pattern):
    with pytest.raises(error, match=pattern):
        causal_mask(*args)


def _expected_padding(lengths, S, device) -> torch.Tensor:
    rows = [[j < n for j in range(S)] for n in lengths]
    return torch.tensor(rows, dtype=torch.bool, device=device)[:, None, None, :]


@pytest.mark.parametrize(
    ("lengths", "max_len"),
    [([3, 1, 4], 4), ([3, 1, 4], 6), ([0, 2], 3), ([5], None), ([2, 7, 1], None)],
)
def test_padding_mask_from_list(lengths, max_len):
    mask = padding_mask(lengths, max_len)
    S = max(lengths) if max_len is None else max_len
    assert mask.dtype == torch.bool
    assert mask.shape == (len(lengths), 1, 1, S)
    assert torch.equal(mask, _expected_padding(lengths, S, mask.device))


def test_padding_mask_from_tensor_uses_its_device(device):
    lengths = torch.tensor([2, 5, 3], device=device)
    mask = padding_mask(lengths, 6)
    assert mask.device.type == device.type
    assert torch.equal(mask, _expected_padding([2, 5, 3], 6, device))


def test_padding_mask_broadcasts_over_heads_and_queries(device):
    mask = padding_mask(torch.tensor([2, 4], device=device), 4)
    scores = torch.zeros(2, 3, 5, 4, device=device)  # (B, H, L, S)
    expanded = mask.expand_as(scores)
    assert torch.equal(expanded[0, 1, 3], torch.tensor([True, True, False, False], device=device))
    assert expanded[1].all()


def test_padding_mask_length_longer_than_max_len_raises():
    with pytest.raises(ValueError, match=r"a length \(5\) exceeds max_len \(4\)"):
        padding_mask([2, 5], max_len=4)


def test_padding_mask_negative_length_raises():
    with pytest.raises(ValueError, match=r"lengths must be >= 0, got \[2, -1\]"):
        padding_mask([2, -1], max_len=3)


@pytest.mark.parametrize(
    ("lengths", "pattern"),
    [
        (
            torch.tensor([1.0, 2.0]),
            r"lengths must be a 1-D integer tensor, got dtype torch\.float32",
        ),
        (
            torch.tensor([True, False]),
            r"lengths must be a 1-D integer tensor, got dtype torch\.bool",
        ),
        ([1, 2.5], r"lengths must be a list of ints or a 1-D integer tensor, got \[1, 2\.5\]"),
        ("abc", r"lengths must be a list of ints or a 1-D integer tensor, got 'abc'"),
    ],
)
def test_padding_mask_bad_lengths_type(lengths, pattern):
    with pytest.raises(TypeError, match=pattern):
        padding_mask(lengths)


def test_padding_mask_lengths_of_the_wrong_shape():
    with pytest.raises(
        ValueError, match=r"lengths must be a 1-D integer tensor \(B,\), got shape \(1, 2\)"
    ):
        padding_mask(torch.tensor([[1, 2]]))


def test_padding_mask_empty_lengths_raises():
    with pytest.raises(ValueError, match=r"lengths must hold at least one sequence length"):
        padding_mask([])


def test_padding_mask_bad_max_len():
    with pytest.raises(ValueError, match=r"max_len must be positive, got 0"):
        padding_mask([0], max_len=0)


# ---------------------------------------------------------------- prefix-LM mask


@pytest.mark.parametrize(
    ("L", "S", "prefix"), [(6, 6, 3), (6, 6, 0), (6, 6, 6), (1, 1, 1), (3, 8, 4), (2, 5, 5)]
)
def test_prefix_lm_mask_matches_definition(device, L, S, prefix):
    mask = prefix_lm_mask(L, S, prefix, device=device)
    rows = [[j < prefix or j <= S - L + i for j in range(S)] for i in range(L)]
    expected = torch.tensor(rows, dtype=torch.bool, device=device)
    assert mask.dtype == torch.bool and mask.device.type == device.type
    assert torch.equal(mask, expected)


def test_prefix_lm_mask_between_causal_and_full(device):
    """No prefix: the causal mask; the whole sequence as prefix: everything; inside the
    prefix the first query sees the last prefix key (bidirectional), after it not."""
    assert torch.equal(prefix_lm_mask(5, 7, 0, device=device), causal_mask(5, 7, device=device))
    assert prefix_lm_mask(4, 4, 4, device=device).all()
    mask = prefix_lm_mask(6, 6, 3, device=device)
    assert mask[0, 2] and not mask[0, 3] and not mask[3, 4]


def test_prefix_lm_mask_errors():
    with pytest.raises(ValueError, match=r"prefix_len must be in \[0, size_k\] = \[0, 4\], got 5"):
        prefix_lm_mask(4, 4, 5)
    with pytest.raises(ValueError, match=r"got -1"):
        prefix_lm_mask(4, 4, -1)
    with pytest.raises(TypeError, match="prefix_len must be an int, got True"):
        prefix_lm_mask(4, 4, True)
    with pytest.raises(ValueError, match=r"size_k \(3\) must be >= size_q \(4\)"):
        prefix_lm_mask(4, 3, 1)
    with pytest.raises(ValueError, match="size_q must be positive"):
        prefix_lm_mask(0, 3, 1)


# ---------------------------------------------------------------- document mask


def _expected_documents(ids: list[int], causal: bool, device) -> torch.Tensor:
    S = len(ids)
    rows = [[ids[i] == ids[j] and (j <= i or not causal) for j in range(S)] for i in range(S)]
    return torch.tensor(rows, dtype=torch.bool, device=device)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("ids", [[0, 0, 0, 1, 1, 2, 2, 2], [5], [0, 1, 2, 3], [3, 3, 7, 7, 7, 1]])
def test_document_mask_matches_definition(device, ids, causal):
    t = torch.tensor(ids, device=device)
    mask = document_mask(t, causal=causal)
    assert mask.dtype == torch.bool and mask.device.type == device.type
    assert torch.equal(mask, _expected_documents(ids, causal, device))


def test_document_mask_batched_broadcasts_over_heads(device):
    ids = [[0, 0, 1, 1, 1], [0, 1, 1, 2, 2]]
    mask = document_mask(torch.tensor(ids, device=device, dtype=torch.int32))
    assert mask.shape == (2, 1, 5, 5)
    for b in range(2):
        assert torch.equal(mask[b, 0], _expected_documents(ids[b], True, device))
    # one document is the causal mask; causal=False then allows everything
    one = torch.zeros(6, dtype=torch.long, device=device)
    assert torch.equal(document_mask(one), causal_mask(6, device=device))
    assert document_mask(one, causal=False).all()


def test_document_mask_errors(device):
    with pytest.raises(TypeError, match="document_ids must be an integer tensor, got dtype"):
        document_mask(torch.zeros(4, device=device))
    with pytest.raises(TypeError, match=r"document_ids must be a torch\.Tensor, got list"):
        document_mask([0, 0, 1])
    with pytest.raises(ValueError, match=r"\(S,\) or \(B, S\) with S >= 1, got shape \(1, 2, 3\)"):
        document_mask(torch.zeros(1, 2, 3, dtype=torch.long, device=device))
    with pytest.raises(ValueError, match=r"got shape \(0\)"):
        document_mask(torch.zeros(0, dtype=torch.long, device=device))
    with pytest.raises(TypeError, match="causal must be True or False, got 1"):
        document_mask(torch.zeros(3, dtype=torch.long, device=device), causal=1)
