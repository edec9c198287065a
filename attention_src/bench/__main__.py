"""``python -m attention_src.bench``: see :mod:`attention_src.bench.cli`."""

from .cli import main

main()
