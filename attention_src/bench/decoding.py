"""Decoding with and without the KV cache, set up and timed: a seeded, untrained
``DecoderOnlyLM`` and a prompt (:func:`decoding_setup`), and
:func:`measure_kv_cache`, which the KV-cache chapter runs at a small size."""

from __future__ import annotations

import torch

from ..decoder import DecoderOnlyLM
from ..validate import check_positive_int
from .timing import summarize, time_round_robin

__all__ = ["decoding_setup", "measure_kv_cache"]


def decoding_setup(
    prompt_len: int,
    new_tokens: int,
    *,
    d_model: int = 256,
    num_heads: int = 4,
    num_layers: int = 4,
    vocab_size: int = 1000,
    d_ff: int | None = None,
    max_len: int | None = None,
    batch_size: int = 1,
    seed: int = 0,
    device: torch.device | str | None = None,
):
    """A seeded, untrained ``DecoderOnlyLM`` in eval mode and a random prompt.

    Returns ``(model, prompt (batch_size, prompt_len), model_kwargs)``; the
    model's ``max_len`` covers ``prompt_len + new_tokens``. Shared by
    :func:`measure_kv_cache` and the benchmark's KV-cache section.
    """
    for name, value in (
        ("prompt_len", prompt_len),
        ("new_tokens", new_tokens),
        ("batch_size", batch_size),
    ):
        check_positive_int(name, value)
    device = torch.device("cpu" if device is None else device)
    d_ff = 4 * d_model if d_ff is None else d_ff
    max_len = max(768, prompt_len + new_tokens) if max_len is None else max_len
    kwargs = dict(
        vocab_size=vocab_size,
        d_model=d_model,
        num_heads=num_heads,
        num_layers=num_layers,
        d_ff=d_ff,
        max_len=max_len,
    )
    torch.manual_seed(seed)
    model = DecoderOnlyLM(**kwargs).to(device).eval()
    generator = torch.Generator(device=device).manual_seed(seed)
    prompt = torch.randint(
        vocab_size, (batch_size, prompt_len), generator=generator, device=device
    )  # (B, prompt_len)
    return model, prompt, kwargs


def measure_kv_cache(
    prompt_len: int,
    new_tokens: int,
    *,
    repeats: int = 15,
    device: torch.device | str | None = None,
    **model_settings,
) -> dict:
    """Time ``generate(use_cache=False)`` against ``generate(use_cache=True)``.

    The model and prompt come from :func:`decoding_setup`, which takes the
    other keyword arguments (``d_model``, ``num_heads``, ``num_layers``,
    ``vocab_size``, ``d_ff``, ``max_len``, ``batch_size``, ``seed``). The two
    variants are timed in turns by the benchmark's ``time_round_robin``
    (``repeats`` repetitions after one untimed call each), so a slow patch of a
    busy machine hits both.

    Three summaries of the same times are returned, because on a loaded
    machine they differ: ``min_s`` (the fastest call of each variant, the one
    least disturbed by other processes) and ``speedup`` = their ratio;
    ``median_s`` and ``ratio_of_medians``; and ``median_of_ratios``, the median
    of the per-repetition ratios, which pairs each call with its neighbour in
    time. A ratio of medians and a median of ratios are not the same number:
    the two medians may come from different repetitions.

    Returns plain data: the settings, the times in seconds
    (``times_no_cache_s``, ``times_cache_s``), the summaries above and
    ``identical`` (whether both variants wrote the same tokens).
    """
    check_positive_int("repeats", repeats)
    model, prompt, model_kwargs = decoding_setup(
        prompt_len, new_tokens, device=device, **model_settings
    )
    fns = {
        "no_cache": lambda: model.generate(prompt, new_tokens, use_cache=False),
        "cache": lambda: model.generate(prompt, new_tokens, use_cache=True),
    }
    identical = torch.equal(fns["no_cache"](), fns["cache"]())
    times = time_round_robin(fns, repeats, device=prompt.device)
    summary = summarize(times, "cache")
    fastest = {name: min(ts) for name, ts in times.items()}
    medians = summary["median_s"]
    return {
        "prompt_len": prompt_len,
        "new_tokens": new_tokens,
        "model": model_kwargs,
        "batch_size": prompt.size(0),
        "device": str(prompt.device),
        "repeats": repeats,
        "times_no_cache_s": times["no_cache"],
        "times_cache_s": times["cache"],
        "min_s": fastest,
        "median_s": medians,
        "median_no_cache_s": medians["no_cache"],
        "median_cache_s": medians["cache"],
        "speedup": fastest["no_cache"] / fastest["cache"],
        "ratio_of_medians": medians["no_cache"] / medians["cache"],
        "median_of_ratios": summary["ratio"]["no_cache"],
        "identical": identical,
    }
