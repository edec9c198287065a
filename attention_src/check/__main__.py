"""``python -m attention_src.check``: see ``attention_src.check.cli``."""

import sys

from .cli import main

sys.exit(main())
