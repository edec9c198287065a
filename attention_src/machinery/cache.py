"""A small disk cache for the experiments the chapters run (tiny trainings).

Build machinery, not a lesson. The build trains a few tiny models so that its
figures show real results. A result is stored under a key made from the
experiment's name, its settings, the torch and Python versions, the device,
and **every piece of this project's code the experiment can reach**: the
function itself and, transitively, every function, class and constant of
``attention_src`` that it names (found by reading the source, so nothing has
to be listed by hand). Edit ``softmax`` and every experiment that ends up
calling it runs again; an experiment that cannot reach it keeps its stored
result. Code is compared without comments, docstrings or formatting. Data or
weights read from outside the project go into the key through ``files=``
(their bytes' hash) and ``packages=`` (the versions of the libraries that read
them).

Results are plain Python and tensors, saved with ``torch.save`` and read back
with ``weights_only=True``. The cache lives in ``.cache/attention_src`` under
the current directory, or wherever ``ATTENTION_CACHE_DIR`` points;
``ATTENTION_CACHE_DIR=off`` disables it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import torch

from .hashing import file_sha256
from .source import code_fingerprint

__all__ = [
    "cache_dir",
    "cache_key",
    "cached",
]

T = TypeVar("T")


def cache_dir() -> Path | None:
    """Where results are kept, or None when caching is off."""
    setting = os.environ.get("ATTENTION_CACHE_DIR", ".cache/attention_src")
    return None if setting.lower() in {"off", "0", "none", ""} else Path(setting)


def _device_label() -> str:
    if torch.cuda.is_available():
        return f"cuda:{torch.cuda.get_device_name()}"
    return "cpu"


def cache_key(
    name: str,
    settings: dict[str, Any],
    compute: Callable | Iterable[Callable],
    *,
    files: Iterable[str | os.PathLike] = (),
    packages: Iterable[str] = (),
) -> str:
    """A hex digest of everything that determines the result.

    Args:
        name: the experiment's label.
        settings: its keyword arguments.
        compute: the experiment (or several objects whose reachable code counts).
        files: data or weight files the experiment reads (their bytes count).
        packages: distributions whose versions count (e.g. ``"safetensors"``).
    """
    objects = list(compute) if isinstance(compute, list | tuple) else [compute]
    digest = hashlib.sha256()
    digest.update(name.encode())
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    digest.update(code_fingerprint(*objects).encode())
    for path in files:
        digest.update(f"{Path(path).name}:{file_sha256(path)}".encode())
    for package in sorted(packages):
        digest.update(f"{package}=={importlib.metadata.version(package)}".encode())
    digest.update(torch.__version__.encode())
    digest.update(platform.python_version().encode())
    digest.update(_device_label().encode())
    return digest.hexdigest()[:24]


def cached(
    name: str,
    settings: dict[str, Any],
    compute: Callable[..., T],
    *,
    files: Iterable[str | os.PathLike] = (),
    packages: Iterable[str] = (),
) -> T:
    """``compute(**settings)``, or its stored result from an earlier run.

    Args:
        name: a label for the experiment (part of the file name).
        settings: keyword arguments for ``compute``; JSON-serialisable.
        compute: the experiment. It must be deterministic given ``settings``
            (seed inside it) and return tensors, numbers, strings, lists and
            dicts only. torch's global random state is restored after it
            runs, so the code after ``cached`` sees the same random numbers
            whether the result was computed or read back. Its code, and all
            the project code it can reach, is part of the key.
        files: files from outside the project that it reads (weights, data);
            their contents are part of the key.
        packages: the libraries that read those files; their versions are
            part of the key.
    """
    directory = cache_dir()
    if directory is None:
        return _without_side_effects(compute, settings)
    key = cache_key(name, settings, compute, files=files, packages=packages)
    path = directory / f"{name}-{key}.pt"
    if path.exists():
        try:
            # mmap: a large result (a model's weights) is paged in as it is used
            return torch.load(path, weights_only=True, mmap=True)
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
