"""A small disk cache for the experiments the chapters run (tiny trainings).

The build trains a few tiny models so that its figures show real results. A
result is stored under a key made from the experiment's name, its settings,
the source code of the modules that produce it and the torch version, so an
edit to the model code or a setting re-runs the experiment, and anything else
(rebuilding a page, ``mkdocs serve``) reuses it. Results are plain Python and
tensors, saved with ``torch.save`` and read back with ``weights_only=True``.

The cache lives in ``.cache/attention_src`` under the current directory, or
wherever ``ATTENTION_CACHE_DIR`` points; ``ATTENTION_CACHE_DIR=off`` disables it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import torch

__all__ = ["cache_dir", "cache_key", "cached"]

T = TypeVar("T")


def cache_dir() -> Path | None:
    """Where results are kept, or None when caching is off."""
    setting = os.environ.get("ATTENTION_CACHE_DIR", ".cache/attention_src")
    return None if setting.lower() in {"off", "0", "none", ""} else Path(setting)


def cache_key(
    name: str, settings: dict[str, Any], code: Iterable[ModuleType | Callable]
) -> str:
    """A hex digest of everything that determines the result."""
    digest = hashlib.sha256()
    digest.update(name.encode())
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    for obj in code:
        digest.update(inspect.getsource(obj).encode())
    digest.update(torch.__version__.encode())
    return digest.hexdigest()[:24]


def cached(
    name: str,
    settings: dict[str, Any],
    compute: Callable[..., T],
    code: Iterable[ModuleType | Callable] = (),
) -> T:
    """``compute(**settings)``, or its stored result from an earlier run.

    Args:
        name: a label for the experiment (part of the file name).
        settings: keyword arguments for ``compute``; JSON-serialisable.
        compute: the experiment. It must be deterministic given ``settings``
            (seed inside it) and return tensors, numbers, strings, lists and
            dicts only. torch's global random state is restored after it
            runs, so the code after ``cached`` sees the same random numbers
            whether the result was computed or read back.
        code: modules or functions whose source, when edited, must re-run it
            (``compute`` itself is always included).
    """
    directory = cache_dir()
    if directory is None:
        return _without_side_effects(compute, settings)
    key = cache_key(name, settings, [compute, *code])
    path = directory / f"{name}-{key}.pt"
    if path.exists():
        try:
            return torch.load(path, weights_only=True)
        except Exception:  # a truncated or foreign file: compute afresh
            path.unlink(missing_ok=True)
    result = _without_side_effects(compute, settings)
    directory.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(result, partial)
    partial.replace(path)  # atomic: a concurrent build never reads half a file
    return result


def _without_side_effects(compute: Callable[..., T], settings: dict[str, Any]) -> T:
    """``compute(**settings)`` with torch's global random state restored afterwards.

    Experiments seed themselves (``torch.manual_seed``). Without the restore, the
    code that runs after ``cached`` would draw different random numbers on a
    fresh build (the experiment ran) than on a cached one (it did not).
    """
    devices = (
        list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    )
    with torch.random.fork_rng(devices=devices):
        return compute(**settings)
