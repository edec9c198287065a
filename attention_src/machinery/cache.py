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
with ``weights_only=True``. Only deterministic results belong here: never a
timing (a page measures those afresh each time it is built).

Where results go (:func:`cache_dir`):

- ``ATTENTION_CACHE_DIR`` set to a folder (``./dev.sh`` and the tests set
  ``.cache/attention_src`` in the checkout): every result is kept there,
  whatever its size.
- ``ATTENTION_CACHE_DIR=off``: nothing is kept; every call computes.
- Not set (a reader running a page's code): the user's cache folder, as the
  platform names it (``platformdirs.user_cache_dir("attention_src")``, e.g.
  ``~/.cache/attention_src`` on Linux). There only results under 50 MB are
  kept; a larger one (SmolLM2's dequantised weights, about 540 MB) is
  computed again on each call and never written.
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

# The largest result kept in the user's cache folder when ATTENTION_CACHE_DIR is
# not set: 50 MB, measured before writing by _stored_bytes.
_READER_LIMIT_BYTES = 50_000_000
_OFF = {"off", "0", "none", ""}


def cache_dir() -> Path | None:
    """Where results are kept, or None when caching is off.

    ``ATTENTION_CACHE_DIR`` when it is set (``off``, ``0``, ``none`` or empty
    turn the cache off); otherwise the user's cache folder,
    ``platformdirs.user_cache_dir("attention_src")`` (``~/.cache/attention_src``
    on Linux, or under ``$XDG_CACHE_HOME``), where :func:`cached` keeps only
    results under 50 MB.
    """
    setting = os.environ.get("ATTENTION_CACHE_DIR")
    if setting is None:
        # imported here: `import attention_src` needs only torch, numpy, matplotlib
        import platformdirs

        return Path(platformdirs.user_cache_dir("attention_src", appauthor=False))
    return None if setting.strip().lower() in _OFF else Path(setting)


def _size_limit() -> int | None:
    """The largest result :func:`cached` writes, in bytes; None for no limit.

    A folder named by ``ATTENTION_CACHE_DIR`` takes everything (the build needs
    its large entries); the reader's default folder takes results under 50 MB.
    """
    return None if "ATTENTION_CACHE_DIR" in os.environ else _READER_LIMIT_BYTES


def _stored_bytes(result: Any) -> int:
    """About the size of ``torch.save(result)``, counted before anything is written.

    ``torch.save`` writes each tensor's whole storage once (a view saves the
    storage it looks into), so this adds the bytes of every distinct storage,
    plus the bytes of strings and bytes objects; numbers, ``None`` and the
    containers themselves count nothing (a few bytes each in the file).
    """
    seen: set[tuple[str, int]] = set()
    total = 0
    stack = [result]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            storage = item.untyped_storage()
            identity = (str(item.device), storage.data_ptr())
            if storage.nbytes() and identity not in seen:
                seen.add(identity)
                total += storage.nbytes()
        elif isinstance(item, str):
            total += len(item.encode("utf-8", errors="surrogatepass"))
        elif isinstance(item, bytes | bytearray):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
    return total


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

    Where results go, and how to choose (see :func:`cache_dir`): with
    ``ATTENTION_CACHE_DIR`` set to a folder, every result is stored there (the
    build and the tests use ``.cache/attention_src`` in the checkout); with
    ``ATTENTION_CACHE_DIR=off``, nothing is stored; with it unset, results are
    stored in the user's cache folder (``~/.cache/attention_src`` on Linux)
    only if they are under 50 MB. The size is counted before writing, from the
    result itself: the bytes of its tensors' storages and of its strings (what
    ``torch.save`` would write, to within a few bytes per item). A larger
    result is returned but not written: it is kept in memory for the rest of the
    interpreter's life (each call gets its own copy of the tensors) and computed
    again in the next one. Delete the folder to recompute everything.

    Args:
        name: a label for the experiment (part of the file name).
        settings: keyword arguments for ``compute``; JSON-serialisable.
        compute: the experiment. It must be deterministic given ``settings``
            (seed inside it) and return tensors, numbers, strings, lists and
            dicts only -- never a timing, which differs on every run. torch's
            global random state is restored after it runs, so the code after
            ``cached`` sees the same random numbers whether the result was
            computed or read back. Its code, and all the project code it can
            reach, is part of the key.
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
    if path in _IN_MEMORY:  # over the reader's limit, computed here already
        return _fresh_copy(_IN_MEMORY[path])
    result = _without_side_effects(compute, settings)
    limit = _size_limit()
    if limit is not None and _stored_bytes(result) >= limit:
        # Too large for the reader's cache folder: never written, but kept for this
        # interpreter: a page that loads the model several times computes it once.
        _IN_MEMORY[path] = result
        return _fresh_copy(result)
    directory.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(result, partial)
    partial.replace(path)  # atomic: a concurrent build never reads half a file
    return result


_IN_MEMORY: dict[Path, Any] = {}  # results over the reader's limit, this process


def _fresh_copy(result: T) -> T:
    """``result`` with every tensor cloned: a caller that edits what it got (loads
    it into a model, changes a weight) never changes what the next caller gets."""
    if isinstance(result, torch.Tensor):
        return result.clone()
    if isinstance(result, dict):
        return {k: _fresh_copy(v) for k, v in result.items()}
    if isinstance(result, list | tuple):
        return type(result)(_fresh_copy(v) for v in result)
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
