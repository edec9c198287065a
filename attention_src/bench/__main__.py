"""``python -m attention_src.bench``."""

from . import main

main()
