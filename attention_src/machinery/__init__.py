"""Build machinery, not lessons: the results cache the pages call (:func:`cached`),
the one reader of the project's source (:func:`read_module`: it keys the cache, and
the reader's copy texts, ``serve``'s page dependencies and the house-rules test read
code through it), and the one file-hash helper.

A chapter's code never imports this package (the house-rules test says so); pages
and notebooks do, to store the results of their tiny trainings.
"""

from .cache import cache_dir, cache_key, cached
from .hashing import file_sha256, verify_sha256
from .source import (
    Definition,
    Imported,
    ModuleSource,
    code_fingerprint,
    code_shape,
    free_names,
    module_file,
    reachable_code,
    read_module,
    read_source,
)

__all__ = [
    "cached",
    "cache_dir",
    "cache_key",
    "code_fingerprint",
    "code_shape",
    "reachable_code",
    "free_names",
    "module_file",
    "read_module",
    "read_source",
    "ModuleSource",
    "Definition",
    "Imported",
    "file_sha256",
    "verify_sha256",
]
