"""attention_src.experiments.tasks: the synthetic tasks and their expected keys, the task model and
its training, the map-vs-pattern scores, and the influence tools (token replacement,
zeroed values, layer-input dependence)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attention_src.experiments.tasks import (
    TASKS,
    TaskBatch,
    TaskModel,
    argmax_match,
    expected_pattern,
    init_task_model,
    layer_input_dependence,
    load_task_model,
    permutation_batch,
    reversal_batch,
    rotate_batch,
    sorting_batch,
    task_batch,
    token_influence,
    train_task_model,
    weight_on_expected,
    zero_values,
)

KWARGS = dict(vocab_size=12, d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=8)


def _model(device) -> TaskModel:
    return init_task_model(KWARGS, seed=0, device=device)


# --------------------------------------------------------------------------- tasks


@pytest.mark.parametrize("task", TASKS)
def test_targets_are_the_inputs_at_the_expected_positions(device, gen, task):
    batch = task_batch(task, 16, 7, 12, generator=gen, device=device)
    assert isinstance(batch, TaskBatch)
    for t in batch:
        assert t.shape == (16, 7) and t.dtype == torch.long and t.device.type == device.type
    assert torch.equal(batch.targets, batch.inputs.gather(1, batch.expected))
    assert batch.inputs.min() >= 0 and batch.inputs.max() < 12


def test_reversal_reads_the_anti_diagonal(device, gen):
    batch = reversal_batch(3, 5, 10, generator=gen, device=device)
    assert batch.expected.tolist() == [[4, 3, 2, 1, 0]] * 3
    assert torch.equal(batch.targets, batch.inputs.flip(1))


def test_previous_token_reads_the_sub_diagonal_and_wraps(device, gen):
    batch = rotate_batch(2, 5, 10, generator=gen, device=device)
    assert batch.expected.tolist() == [[4, 0, 1, 2, 3]] * 2
    assert torch.equal(batch.targets, batch.inputs.roll(1, dims=1))
    shifted = rotate_batch(2, 5, 10, shift=2, generator=gen, device=device)
    assert shifted.expected.tolist() == [[3, 4, 0, 1, 2]] * 2


def test_sorting_has_distinct_tokens_and_input_dependent_keys(device, gen):
    batch = sorting_batch(64, 6, 9, generator=gen, device=device)
    for row in batch.inputs.tolist():
        assert len(set(row)) == 6
    assert torch.all(batch.targets[:, 1:] > batch.targets[:, :-1])  # strictly increasing
    assert len({tuple(r) for r in batch.expected.tolist()}) > 1  # differs per input


def test_permutation_batch_any_source(device, gen):
    batch = permutation_batch([2, 2, 0], 4, 5, generator=gen, device=device)
    assert torch.equal(batch.targets[:, 0], batch.inputs[:, 2])
    assert torch.equal(batch.targets[:, 2], batch.inputs[:, 0])


@pytest.mark.parametrize("task", TASKS)
def test_batches_are_reproducible_under_a_generator(device, task):
    make = lambda: task_batch(  # noqa: E731
        task, 8, 6, 10, generator=torch.Generator(device=device).manual_seed(3), device=device
    )
    assert all(torch.equal(a, b) for a, b in zip(make(), make(), strict=True))


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        (("copy", 2, 4, 10), ValueError, "task must be one of"),
        (("sorting", 2, 8, 5), ValueError, r"vocab_size \(5\) must be >= seq_len \(8\)"),
        (("reversal", 0, 4, 10), ValueError, "batch_size must be positive, got 0"),
        (("reversal", 2, 4.0, 10), TypeError, "seq_len must be an int"),
    ],
)
def test_task_batch_errors(args, error, pattern):
    with pytest.raises(error, match=pattern):
        task_batch(*args)


@pytest.mark.parametrize(
    ("source", "error", "pattern"),
    [
        (
            [0, 3, 1],
            ValueError,
            r"positions in \[0, 3\) for a sequence of length 3, got \[0, 3, 1\]",
        ),
        ([-1, 0], ValueError, r"positions in \[0, 2\)"),
        ([], ValueError, "at least one position, got an empty sequence"),
        ([0.0, 1.0], TypeError, "source must hold integer positions, got dtype torch.float32"),
        ([[0, 1]], ValueError, r"source must be 1-D \(L,\)"),
    ],
)
def test_permutation_batch_errors(source, error, pattern):
    with pytest.raises(error, match=pattern):
        permutation_batch(source, 2, 5)


def test_each_generator_checks_its_arguments():
    with pytest.raises(ValueError, match="seq_len must be positive, got 0"):
        reversal_batch(2, 0, 10)
    with pytest.raises(TypeError, match="seq_len must be an int"):
        rotate_batch(2, 3.0, 10)
    with pytest.raises(ValueError, match=r"vocab_size \(3\) must be >= seq_len \(4\)"):
        sorting_batch(2, 4, 3)
    with pytest.raises(ValueError, match="vocab_size must be positive"):
        permutation_batch([1, 0], 2, 0)


def test_expected_pattern_is_one_hot(device):
    expected = torch.tensor([[2, 0, 1]], device=device)
    pattern = expected_pattern(expected)
    assert pattern.shape == (1, 3, 3)
    assert pattern.tolist() == [[[0, 0, 1], [1, 0, 0], [0, 1, 0]]]
    with pytest.raises(ValueError, match=r"expected must be 2-D \(B, L\)"):
        expected_pattern(expected[0])


# --------------------------------------------------------------------------- model and training


def test_model_shapes_and_weights(device, gen):
    model = _model(device)
    tokens = torch.randint(12, (3, 8), generator=gen, device=device)
    logits, weights = model(tokens)
    assert logits.shape == (3, 8, 12)
    assert len(weights) == 2
    for w in weights:
        assert w.shape == (3, 2, 8, 8)
        torch.testing.assert_close(w.sum(-1), torch.ones(3, 2, 8, device=device))


def test_embedding_starts_at_the_scale_of_the_positions():
    model = TaskModel(vocab_size=50, d_model=64, num_heads=2, num_layers=1, d_ff=8)
    scaled = model.encoder.embedding.weight * 64**0.5  # what the encoder adds to PE
    assert 0.8 < scaled.std().item() < 1.2


def test_init_is_deterministic_and_in_eval_mode(device):
    a, b = _model(device), _model(device)
    assert not a.training
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(p, q), name


def test_training_lowers_the_loss_and_is_deterministic():
    settings = dict(
        task="previous_token", seq_len=4, vocab_size=5, d_model=16, num_heads=1, num_layers=1,
        d_ff=16, steps=25, batch_size=16, lr=1e-2, seed=0,
    )  # fmt: skip
    run = train_task_model(**settings)
    losses = run["losses"]
    assert len(losses) == 25
    assert sum(losses[-5:]) / 5 < 0.9 * sum(losses[:5]) / 5
    again = train_task_model(**{**settings, "steps": 3})  # same seed: the same first steps
    assert again["losses"] == losses[:3]
    model = load_task_model(run)
    batch = task_batch("previous_token", 64, 4, 5, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits, _ = model(batch.inputs)
    loss = F.cross_entropy(logits.reshape(-1, 5), batch.targets.reshape(-1))
    assert loss.item() < losses[0]
    assert run["model_kwargs"]["max_len"] == 4 and run["task"] == "previous_token"


def test_training_rejects_zero_steps():
    with pytest.raises(ValueError, match="steps must be positive"):
        train_task_model(
            task="reversal", seq_len=4, vocab_size=5, d_model=8, num_heads=1, num_layers=1,
            d_ff=8, steps=0, batch_size=4, lr=1e-3, seed=0,
        )  # fmt: skip


# --------------------------------------------------------------------------- scores


def test_scores_of_a_perfect_and_a_uniform_map(device):
    expected = torch.tensor([[1, 2, 0], [0, 0, 2]], device=device)  # (B, L)
    perfect = expected_pattern(expected)[:, None]  # (B, 1, L, S)
    uniform = torch.full((2, 1, 3, 3), 1 / 3, device=device)
    both = torch.cat([perfect, uniform], dim=1)  # head 0 perfect, head 1 uniform
    torch.testing.assert_close(
        weight_on_expected(both, expected)[0], torch.tensor(1.0, device=device)
    )
    torch.testing.assert_close(
        weight_on_expected(both, expected)[1], torch.tensor(1 / 3, device=device)
    )
    assert argmax_match(both, expected).shape == (2,)
    assert argmax_match(both, expected)[0] == 1.0


def test_argmax_match_counts_rows(device):
    expected = torch.tensor([[0, 1]], device=device)
    weights = torch.tensor([[[[0.9, 0.1], [0.8, 0.2]]]], device=device)  # row 1 misses
    assert argmax_match(weights, expected).tolist() == [0.5]


@pytest.mark.parametrize("fn", [weight_on_expected, argmax_match])
def test_scores_reject_mismatched_shapes(device, fn):
    weights = torch.full((2, 1, 3, 3), 1 / 3, device=device)
    with pytest.raises(ValueError, match=r"expected must be \(B, L\) = \(2, 3\)"):
        fn(weights, torch.zeros(2, 4, dtype=torch.long, device=device))
    with pytest.raises(ValueError, match=r"weights must be 4-D \(B, H, L, S\)"):
        fn(weights[0], torch.zeros(2, 3, dtype=torch.long, device=device))


# --------------------------------------------------------------------------- influence


def test_influence_of_a_perfect_reverser_is_the_anti_diagonal(device, gen):
    def reverser(tokens):  # logits that pick the mirrored token, like a solved reversal
        return (F.one_hot(tokens.flip(1), 7).float(),)

    tokens = torch.randint(7, (32, 5), generator=gen, device=device)
    influence = token_influence(reverser, tokens, generator=gen)
    assert torch.equal(influence, torch.eye(5, device=device).flip(1))


def test_influence_sees_every_input_of_a_sorter(device, gen):
    def sorter(tokens):
        return (F.one_hot(tokens.sort(dim=-1).values, 9).float(),)

    tokens = sorting_batch(64, 4, 9, generator=gen, device=device).inputs
    influence = token_influence(sorter, tokens, generator=gen)
    assert torch.all(influence > 0)  # every input can move every output


def test_influence_absent_only_keeps_sorting_inputs_distinct(device, gen):
    seen = []

    def sorter(tokens):
        seen.append(tokens)
        return (F.one_hot(tokens.sort(dim=-1).values, 9).float(),)

    tokens = sorting_batch(64, 4, 9, generator=gen, device=device).inputs
    token_influence(sorter, tokens, generator=gen, absent_only=True)
    for changed in seen[1:]:  # one per replaced position
        assert (changed != tokens).sum(dim=-1).eq(1).all()  # one token changed
        assert all(row.unique().numel() == 4 for row in changed)  # still distinct
    seen.clear()
    token_influence(sorter, tokens, generator=gen)  # the default may repeat one
    assert any(row.unique().numel() < 4 for changed in seen for row in changed)


def test_absent_only_needs_a_missing_token(device, gen):
    tokens = torch.arange(5, device=device).repeat(3, 1)  # every row holds all 5

    def model(t):
        return (F.one_hot(t, 5).float(),)

    with pytest.raises(ValueError, match=r"absent_only=True.*all 5 tokens"):
        token_influence(model, tokens, generator=gen, absent_only=True)


def test_zero_values_keeps_the_weights_and_changes_the_output(device, gen):
    model = _model(device)
    tokens = torch.randint(12, (4, 8), generator=gen, device=device)
    with torch.no_grad():
        logits, weights = model(tokens)
        with zero_values(model, layer=0, positions=[3]):
            logits_z, weights_z = model(tokens)
        logits_again, _ = model(tokens)
    assert torch.equal(weights_z[0], weights[0])  # the first layer's map cannot see values
    assert not torch.allclose(logits_z, logits)
    assert torch.equal(logits_again, logits)  # the hook is gone after the block


def test_zero_values_of_one_head_touches_only_its_columns(device, gen):
    model = _model(device)
    tokens = torch.randint(12, (2, 8), generator=gen, device=device)
    v_proj = model.encoder.layers[1].self_attn.v_proj
    d = model.encoder.layers[1].self_attn.d_head
    seen = []
    with torch.no_grad(), zero_values(model, layer=1, positions=[0, 5], head=1):
        handle = v_proj.register_forward_hook(lambda m, a, out: seen.append(out))  # runs after
        model(tokens)
        handle.remove()
    value = seen[0]  # (B, L, D) as attention used it
    assert torch.all(value[:, [0, 5], d : 2 * d] == 0)  # head 1 at positions 0 and 5
    assert torch.all(value[:, :, :d] != 0)  # head 0 untouched
    assert torch.all(value[:, [1, 2, 3, 4, 6, 7], d:] != 0)  # other positions untouched


def test_layer_input_dependence(device, gen):
    model = _model(device)
    tokens = torch.randint(12, (16, 8), generator=gen, device=device)
    first = layer_input_dependence(model, tokens, 0, generator=gen)
    torch.testing.assert_close(first, torch.eye(8, device=device))  # only its own token
    second = layer_input_dependence(model, tokens, 1, generator=gen)
    torch.testing.assert_close(second.sum(-1), torch.ones(8, device=device))
    assert (second - torch.diag(second.diagonal())).min() >= 0
    assert (1 - second.diagonal()).min() > 0.05  # every position mixes in others
