"""The pieces of a decoder, each with a check of its own: rotary positions
(``rope``), grouped-query attention (``gqa``, which runs the function check on
the heads as ordinary attention first) and cached decoding (``decode``).
"""

from .decode import check_decode
from .gqa import check_gqa
from .rope import check_rope

__all__ = ["check_rope", "check_gqa", "check_decode"]
