"""Build machinery, not lessons: the results cache the pages call (:func:`cached`),
the one reader of the project's source that keys it, and the one file-hash helper.

A chapter's code never imports this package (the house-rules test says so); pages
and notebooks do, to store the results of their tiny trainings.
"""

from .cache import cache_dir, cache_key, cached
from .hashing import file_sha256, verify_sha256
from .source import code_fingerprint, free_names, module_file, reachable_code

__all__ = [
    "cached",
    "cache_dir",
    "cache_key",
    "code_fingerprint",
    "reachable_code",
    "free_names",
    "module_file",
    "file_sha256",
    "verify_sha256",
]
