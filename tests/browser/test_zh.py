"""The one browser visit (tests/browser/visit.py) over the Chinese edition's pages.

The same checks of every page (rendering, copy buttons against the texts the build ran,
output boxes, layout, figures' captions and sizes, typed numbers, accessibility, weight,
widgets), in a module of their own: ``./dev.sh test`` hands the English visit's modules to
one of its two workers and this one to the other (tests/conftest.py, ``ONE_VISIT``), so the
two editions are visited at once, each page once. (The chapter-only checks -- a picture near
the top, one number and one name -- and the screenshots and the clipboard check are the
English modules', and so is the tokenizer's test set, which needs one page.)
"""

from __future__ import annotations

# the tests, run for this edition (noqa: F401: imported to be collected here)
from .test_accessibility import (  # noqa: F401
    test_every_page_passes_the_accessibility_audit,
    test_first_visits_are_light,
)
from .test_copy_buttons import test_copy_buttons_copy_what_the_build_ran  # noqa: F401
from .test_figures import (  # noqa: F401
    test_every_figure_has_a_numbered_caption,
    test_no_figure_is_shown_smaller_than_drawn,
    test_numbers_in_the_prose_come_from_the_build,
)
from .test_render import (  # noqa: F401
    test_every_page_renders_cleanly,
    test_no_code_box_is_cut_off,
    test_no_figure_shows_as_its_repr,
    test_output_boxes_look_like_output,
)
from .test_widgets import (  # noqa: F401
    test_every_widget_is_used_on_its_page,
    test_minilm_in_the_page_equals_pytorch,
    test_small_model_in_the_page_equals_pytorch,
)

EDITION = "zh"
