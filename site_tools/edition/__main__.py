"""``python -m site_tools.edition``: the Chinese edition's command line."""

import sys

from site_tools.edition.comments import main

sys.exit(main())
