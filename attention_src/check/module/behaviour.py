"""What a module's outputs depend on, without masks: determinism in
``eval()``, the output's shape, the examples of a batch kept apart, which
tokens each output depends on (all of them: bidirectional; the earlier ones:
causal built in; anything else: a leak, or a built-in triangle the wrong way
round), permutation equivariance (a causal module: a prefix run alone), and,
given a second sequence, cross-attention. Measured by gradient, or by
perturbation where an output is NaN."""

from __future__ import annotations

import torch

from ...validate import shape_str
from ..lang import tr
from ..running import Recorder
from .facts import B, Facts, L
from .masking import weights_sum
from .probe import nonzero

__all__ = ["plain_facts", "cross_facts"]


def _inverted_fact(probe, facts: Facts, dep, blank) -> bool:
    """A causal triangle built in and read the wrong way round: each output
    depends on its own token and the later ones only, and the last query,
    which has no later key, sees no key at all — NaN (a ``-inf`` fill) or
    uniform over every token (a finite fill). Found from what the outputs
    depend on, whatever the fill."""
    eye = torch.eye(L, dtype=torch.bool, device=dep.device)
    later = torch.ones(L, L, dtype=torch.bool, device=dep.device).triu(1)
    # a query with one allowed key gives that key's value, whatever the
    # query: its own token may or may not show
    if (dep & ~(later | eye))[:-1].any() or (later & ~dep)[:-1].any():
        return False
    if blank is not None and blank[:, -1].all() and not blank[:, :-1].any():
        how = tr("it is NaN")
    elif dep[-1].all() and (blank is None or not blank.any()):
        how = tr("it depends on every token")
    else:
        return False
    facts.seen["inverted"] = tr(
        "with no mask argument, each output depends on its own token and the "
        "later ones only, and output {i}, which has no later token, sees no "
        "key ({how}): the built-in causal triangle allows the keys it should "
        "block and blocks those it should allow",
        i=L - 1,
        how=how,
    )
    return True


def _perturbed(probe, out) -> tuple[torch.Tensor, bool]:
    """``(dep (L, L), mixed)`` by perturbation, for outputs with NaN in
    them (where gradients are NaN everywhere): output i of example 0 moves
    when its token j is changed; ``mixed``: example 1 moves too."""
    dep = torch.zeros(L, L, dtype=torch.bool, device=probe.device)
    mixed = False
    base = out.detach()
    for j in range(L):
        x = probe.x.clone()
        x[0, j] += 1.0
        moved, _, error = probe.run(x)
        if error is not None or moved is None:
            continue
        same = torch.isclose(moved, base, rtol=0, atol=1e-6, equal_nan=True)
        changed = ~same.all(dim=-1)  # (B, L)
        dep[:, j] = changed[0]
        mixed = mixed or bool(changed[1].any())
    return dep, mixed


def _pattern_facts(probe, facts: Facts, dep, blank=None) -> None:
    """Which tokens each output depends on without a mask: all of them
    (bidirectional), exactly the earlier ones (causal built in), the later
    ones (a built-in triangle inverted), or — with no mask argument to
    explain it — something in between, a leak."""
    tril = torch.ones(L, L, dtype=torch.bool, device=dep.device).tril()
    if probe.call.mask is None and _inverted_fact(probe, facts, dep, blank):
        return
    if torch.equal(dep, tril):
        probe.causal = True
        facts.causal = True  # the checks of a causal module say so
        return
    later = dep & ~tril
    if later.any() and probe.call.mask is None:
        i, j = later.nonzero()[0].tolist()
        unseen = (~dep & ~tril).nonzero()
        if not len(unseen):  # every later token seen, some earlier one not
            k, m = (~dep).nonzero()[0].tolist()
            facts.seen["leak"] = tr(
                "with no mask argument, output {i} depends on the later token "
                "{j}, but output {k} not on the earlier token {m}: neither "
                "causal nor bidirectional",
                i=i,
                j=j,
                k=k,
                m=m,
            )
            return
        k, m = unseen[0].tolist()
        facts.seen["leak"] = tr(
            "with no mask argument, output {i} depends on the later token {j}, "
            "but output {k} not on the later token {m}: neither causal nor "
            "bidirectional",
            i=i,
            j=j,
            k=k,
            m=m,
        )
    elif torch.equal(dep, torch.eye(L, dtype=torch.bool, device=dep.device)):
        facts.seen["isolated"] = tr("without a mask, no token sees another token")
    else:
        i, j = (~dep).nonzero()[0].tolist()
        facts.seen["isolated"] = tr(
            "without a mask, output {i} ignores token {j}", i=i, j=j
        )


def cross_facts(probe, facts: Facts) -> None:
    """With a second sequence (``context=``, or k and v apart from q) of
    another length S: the output keeps x's shape, depends on the context,
    and each output on its own query token only."""
    g = torch.Generator(device=probe.device).manual_seed(1)
    context = torch.randn(B, L + 2, probe.D, generator=g, device=probe.device)
    context.requires_grad_(True)
    x = probe.leaf()
    out, _, error = probe.run(x, context=context)
    shape = tr("a context {shape} (B, S, D)", shape=shape_str(context.shape))
    if error is not None:  # built for self-attention only, as it may be
        facts.notes.append(
            tr(
                "cross-attention was not checked: it {error} with {shape}",
                error=error,
                shape=shape,
            )
        )
        return
    facts.add("context")
    dep = probe.token_matrix(out, x)
    eye = torch.eye(L, dtype=torch.bool, device=probe.device)
    if dep is not None and not torch.equal(dep | eye, eye):
        i, j = (dep & ~eye).nonzero()[0].tolist()
        facts.seen["cross"] = tr(
            "with {shape}, output {i} depends on query token {j}",
            shape=shape,
            i=i,
            j=j,
        )
    used = probe.dependence(out, context, 1)
    if used is not None and not nonzero(used):
        facts.seen["cross"] = tr(
            "with {shape}, the output does not depend on it", shape=shape
        )


def plain_facts(probe, facts: Facts) -> tuple:
    """Determinism, shapes, batch, dependence pattern, equivariance."""
    out0, _, error = probe.run(probe.x, neutralize=False)
    if error is not None:
        return error, None
    out1, _, _ = probe.run(probe.x, seed=1, neutralize=False)
    same = out1 is not None and torch.allclose(
        out0, out1, rtol=0, atol=0, equal_nan=True
    )  # NaN where NaN is the same output
    if out1 is not None and not same:
        gap = float((out0 - out1).detach().abs().nan_to_num(0).max())
        facts.seen["dropout"] = tr(
            "in eval(), two forward passes on the same x {shape} differ by up to "
            "{gap:.3g}; the other checks ran with dropout switched off",
            shape=shape_str(probe.x.shape),
            gap=gap,
        )
    x = probe.leaf()
    recorder = Recorder(neutralize=True)
    out, w, error = probe.run(x, recorder=recorder)
    if error is not None:
        return error, None
    blank = out.detach().isnan().any(dim=-1)  # (B, L): outputs that are NaN
    if blank.any():  # gradients through a NaN are NaN: perturb the tokens
        dep, mixed = _perturbed(probe, out)
    else:
        dep_batch = probe.dependence(out[0], x, 0)
        mixed = dep_batch is not None and nonzero(dep_batch) != [0]
        dep = probe.token_matrix(out, x)
        blank = None
    if mixed:
        facts.seen["batch"] = tr("the output of sequence 0 depends on sequence 1")
    if dep is not None and not dep.all():
        _pattern_facts(probe, facts, dep, blank)
    issue = weights_sum(w)
    if issue:
        facts.seen["weights-sum"] = tr(
            "without a mask the weights' {issue}", issue=issue
        )
    if "leak" in facts.seen or "inverted" in facts.seen:  # a mask of its own
        return None, (x, out, recorder)
    if probe.causal:
        n = 3  # a causal module gives a prefix the outputs it gives it inside
        short, _, _ = probe.run(probe.x[:, :n])
        if short is not None and not torch.allclose(short, out[:, :n], atol=1e-5):
            facts.seen["equivariance"] = tr(
                "the first {n} tokens run alone give other outputs than the "
                "same tokens at the start of the whole sequence",
                n=n,
            )
        return None, (x, out, recorder)
    perm = torch.tensor([3, 0, 4, 1, 2], device=probe.device)
    moved, _, _ = probe.run(probe.x[:, perm])
    if moved is not None and not torch.allclose(moved, out[:, perm], atol=1e-5):
        facts.seen["equivariance"] = tr(
            "permuting the tokens does not permute the outputs the same way"
        )
    return None, (x, out, recorder)
