"""attention_src.experiments.training: the warm-up schedule, the one training loop ``train``
(optimisers, warm-up, clipping, history), the classifier's ``train_loop`` and the seeded "which
comes first?" experiment. Tiny settings only."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from attention_src.experiments.classifier import EncoderClassifier, order_task_batch
from attention_src.experiments.training import (
    OPTIMIZERS,
    accuracy,
    classifier_loss,
    train,
    train_loop,
    train_order_classifier,
    warmup_factor,
)

TINY = dict(vocab_size=8, min_len=4, max_len=6, d_model=16, num_heads=2, num_layers=1, d_ff=32)

# --------------------------------------------------------------------------- warm-up


def test_warmup_rises_linearly_then_stays():
    factors = [warmup_factor(s, 4) for s in range(8)]
    assert factors == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0]


def test_warmup_inverse_sqrt_decay_is_the_paper_schedule():
    d_model, w = 512, 4000
    for step in (0, 10, 3998, 3999, 4000, 10_000, 50_000):
        n = step + 1
        paper = d_model**-0.5 * min(n**-0.5, n * w**-1.5)  # Vaswani et al., eq. (3)
        peak = d_model**-0.5 * w**-0.5
        assert math.isclose(warmup_factor(step, w, "inverse_sqrt") * peak, paper, rel_tol=1e-12)


def test_no_warmup_means_full_rate_from_the_start():
    assert [warmup_factor(s, 0) for s in range(3)] == [1.0, 1.0, 1.0]
    assert warmup_factor(3, 0, "inverse_sqrt") == 0.5


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((-1, 4), ValueError, r"step must be >= 0, got -1"),
        ((0, -4), ValueError, r"warmup_steps must be >= 0, got -4"),
        ((0, 4.0), TypeError, r"warmup_steps must be an int, got float 4\.0"),
        ((0, 4, "cosine"), ValueError, r"decay must be one of \['constant', 'inverse_sqrt'\]"),
    ],
)
def test_warmup_bad_arguments(args, error, pattern):
    with pytest.raises(error, match=pattern):
        warmup_factor(*args)


# --------------------------------------------------------------------------- the one loop


def _regression(device, seed=0):
    """A tiny model, a fixed stream of batches and a loss: (model, next_batch, loss_fn)."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
    data = torch.Generator(device=device).manual_seed(seed)

    def next_batch():
        x = torch.randn(16, 4, generator=data, device=device)  # (B, 4)
        return x, x.sum(dim=1, keepdim=True)  # (B, 4), (B, 1)

    def loss_fn(model, batch):
        x, y = batch
        return ((model(x) - y) ** 2).mean()

    return model, next_batch, loss_fn


def _by_hand(device, make_optimizer, steps, max_grad_norm=None):
    """The same training written out: the loop that ``train`` must reproduce bit for bit."""
    model, next_batch, loss_fn = _regression(device)
    optimizer = make_optimizer(model.parameters())
    losses = []
    for _ in range(steps):
        loss = loss_fn(model, next_batch())
        optimizer.zero_grad()
        loss.backward()
        if max_grad_norm is not None:
            nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        losses.append(loss.item())
    return model, losses


@pytest.mark.parametrize(
    ("kwargs", "make_optimizer"),
    [
        # AdamW without weight decay is exactly Adam: the trainings that used Adam keep their
        # results
        (dict(lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
        (
            dict(lr=0.01, weight_decay=0.1),
            lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
        ),
        (dict(lr=0.1, optimizer="sgd"), lambda p: torch.optim.SGD(p, lr=0.1)),
        (dict(lr=0.01, max_grad_norm=0.05), lambda p: torch.optim.Adam(p, lr=0.01)),
    ],
)
def test_train_is_the_loop_written_out(device, kwargs, make_optimizer):
    expected, expected_losses = _by_hand(
        device, make_optimizer, steps=5, max_grad_norm=kwargs.get("max_grad_norm")
    )
    model, next_batch, loss_fn = _regression(device)
    history = train(model, next_batch, loss_fn, steps=5, **kwargs)
    assert history["loss"] == expected_losses
    for (name, got), want in zip(
        model.state_dict().items(), expected.state_dict().values(), strict=True
    ):
        assert torch.equal(got, want), name
    assert history["lr"] == [kwargs["lr"]] * 5 and model.training


def test_train_changes_the_weights_and_lowers_the_loss(device):
    model, next_batch, loss_fn = _regression(device)
    before = [p.detach().clone() for p in model.parameters()]
    history = train(model, next_batch, loss_fn, steps=60, lr=0.02)
    assert all(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
    assert sum(history["loss"][-5:]) < sum(history["loss"][:5]) / 2


def test_train_warms_up_with_the_inverse_sqrt_schedule(device):
    model, next_batch, loss_fn = _regression(device)
    history = train(
        model, next_batch, loss_fn, steps=6, lr=0.01, warmup_steps=2, decay="inverse_sqrt"
    )
    assert history["lr"] == pytest.approx(
        [0.01 * warmup_factor(s, 2, "inverse_sqrt") for s in range(6)]
    )
    assert history["lr"][-1] < history["lr"][1]  # decays after the warm-up


def test_train_trains_a_bare_parameter(device):
    """The scaling chapter's use: one query vector is the whole model."""
    query = nn.Parameter(torch.ones(3, device=device))
    history = train(
        nn.ParameterList([query]),
        lambda: None,
        lambda model, _: (model[0] ** 2).sum(),
        steps=1,
        lr=0.25,
        optimizer="sgd",
    )
    assert history["loss"] == [3.0] and history["grad_norm"][0] == pytest.approx(12**0.5)
    torch.testing.assert_close(query.detach(), torch.full((3,), 0.5, device=device))


@pytest.mark.parametrize(
    ("change", "error", "pattern"),
    [
        (dict(model="net"), TypeError, r"model must be a torch\.nn\.Module, got str"),
        (dict(next_batch=[1]), TypeError, r"next_batch must be callable, got list \[1\]"),
        (dict(loss_fn=None), TypeError, r"loss_fn must be callable, got NoneType None"),
        (dict(steps=0), ValueError, r"steps must be positive, got 0"),
        (dict(lr="1e-3"), TypeError, r"lr must be a number, got str '1e-3'"),
        (dict(lr=-1.0), ValueError, r"lr must be a positive number, got -1\.0"),
        (
            dict(optimizer="adam"),
            ValueError,
            r"optimizer must be one of \['adamw', 'sgd'\], got 'adam'",
        ),
        (dict(weight_decay=-0.1), ValueError, r"weight_decay must be >= 0, got -0\.1"),
        (dict(weight_decay=None), TypeError, r"weight_decay must be a number, got NoneType None"),
        (
            dict(max_grad_norm="1"),
            TypeError,
            r"max_grad_norm must be a number or None, got str '1'",
        ),
        (dict(max_grad_norm=-1.0), ValueError, r"max_grad_norm must be a positive number or None"),
        (dict(warmup_steps=1.5), TypeError, r"warmup_steps must be an int, got float 1\.5"),
        (dict(decay="cosine"), ValueError, r"decay must be one of \['constant', 'inverse_sqrt'\]"),
    ],
)
def test_train_bad_arguments(device, change, error, pattern):
    model, next_batch, loss_fn = _regression(device)
    kwargs = dict(model=model, next_batch=next_batch, loss_fn=loss_fn, steps=2, lr=1e-3)
    kwargs.update(change)
    positional = [kwargs.pop(k) for k in ("model", "next_batch", "loss_fn")]
    with pytest.raises(error, match=pattern):
        train(*positional, **kwargs)
    assert OPTIMIZERS == ("adamw", "sgd")


# --------------------------------------------------------------------------- the classifier's loop


def test_train_loop_is_train_with_the_classifier_loss(device):
    model, next_batch = _setup(device)
    history = train_loop(model, next_batch, steps=3, lr=1e-3, warmup_steps=2)
    again, next_batch = _setup(device)
    expected = train(
        again, next_batch, classifier_loss, steps=3, lr=1e-3, warmup_steps=2, max_grad_norm=1.0
    )
    assert history == expected


def _setup(device, seed=0):
    torch.manual_seed(seed)
    model = EncoderClassifier(
        TINY["vocab_size"],
        TINY["d_model"],
        TINY["num_heads"],
        TINY["num_layers"],
        TINY["d_ff"],
        2,
        max_len=TINY["max_len"],
    ).to(device)
    data = torch.Generator(device=device).manual_seed(seed)

    def next_batch():
        return order_task_batch(16, TINY["vocab_size"], 4, 6, generator=data, device=device)

    return model, next_batch


def test_history_has_one_entry_per_step_and_follows_the_schedule(device):
    model, next_batch = _setup(device)
    history = train_loop(model, next_batch, steps=6, lr=0.01, warmup_steps=4)
    assert set(history) == {"loss", "grad_norm", "lr"}
    assert all(len(v) == 6 for v in history.values())
    expected = [0.01 * warmup_factor(s, 4) for s in range(6)]
    assert history["lr"] == pytest.approx(expected)
    assert all(math.isfinite(v) and v > 0 for v in history["grad_norm"])


def test_clipping_caps_the_gradient_that_is_applied(device):
    model, next_batch = _setup(device)
    cap = 1e-3  # far below the gradient norms of this model
    history = train_loop(model, next_batch, steps=2, lr=1e-3, max_grad_norm=cap)
    assert history["grad_norm"][-1] > 10 * cap  # recorded before clipping
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    applied = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    assert applied.item() == pytest.approx(cap, rel=1e-3)  # the last step's, after clipping


def test_without_clipping_the_gradient_is_untouched(device):
    model, next_batch = _setup(device)
    history = train_loop(model, next_batch, steps=1, lr=1e-3, max_grad_norm=None)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    assert norm.item() == pytest.approx(history["grad_norm"][0], rel=1e-5)


def test_training_lowers_the_loss(device):
    model, next_batch = _setup(device)
    history = train_loop(model, next_batch, steps=40, lr=3e-3, warmup_steps=5)
    first, last = sum(history["loss"][:5]) / 5, sum(history["loss"][-5:]) / 5
    assert last < first - 0.05


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        (dict(steps=0, lr=1e-3), r"steps must be positive, got 0"),
        (dict(steps=2, lr=0.0), r"lr must be a positive number, got 0\.0"),
        (dict(steps=2, lr=1e-3, max_grad_norm=0), r"max_grad_norm must be a positive number or"),
    ],
)
def test_loop_bad_arguments(device, kwargs, pattern):
    model, next_batch = _setup(device)
    with pytest.raises(ValueError, match=pattern):
        train_loop(model, next_batch, **kwargs)


def test_accuracy_restores_the_mode(device):
    model, next_batch = _setup(device)
    tokens, lengths, labels = next_batch()
    model.train()
    acc = accuracy(model, tokens, lengths, labels)
    assert model.training and 0.0 <= acc <= 1.0
    logits, _ = model.eval()(tokens, lengths)
    assert acc == (logits.argmax(-1) == labels).float().mean().item()


# --------------------------------------------------------------------------- the experiment


def test_experiment_is_deterministic_and_plain_data(device):
    kwargs = dict(TINY, steps=3, batch_size=8, eval_size=20, seed=1, device=str(device))
    a = train_order_classifier(**kwargs)
    b = train_order_classifier(**kwargs)
    assert a["history"] == b["history"] and a["accuracy"] == b["accuracy"]
    for name, tensor in a["state_dict"].items():
        assert torch.equal(tensor, b["state_dict"][name]), name
        assert tensor.device.type == "cpu"
    c = train_order_classifier(**dict(kwargs, seed=2))
    assert c["history"]["loss"] != a["history"]["loss"]
    model = EncoderClassifier(**a["model_kwargs"])
    model.load_state_dict(a["state_dict"])  # the result rebuilds the trained model


def test_experiment_learns_the_task(device):
    run = train_order_classifier(
        **TINY,
        steps=80,
        batch_size=32,
        lr=1e-2,
        warmup_steps=10,
        eval_size=400,
        seed=0,
        device=str(device),
    )
    assert run["accuracy"] > 0.8  # chance is 0.5: the two classes hold the same tokens
    first, last = run["history"]["loss"][:10], run["history"]["loss"][-10:]
    assert sum(last) < sum(first) / 2
