"""The one browser visit of tests/browser/test_browser.py over the Chinese edition's pages.

The same checks of every page (rendering, copy buttons against the texts the build ran,
output boxes, layout, figures' captions and sizes, typed numbers, accessibility, weight),
in a module of their own: ``./dev.sh test`` hands whole modules to its two workers, so the
two editions are visited at once, each page once. (The chapter-only checks -- a picture near
the top, one number and one name -- and the screenshots and the clipboard check are the
English module's, and so is the tokenizer's test set, which needs one page.)
"""

from __future__ import annotations

from .test_browser import (  # noqa: F401  (the fixture and the tests, run for this edition)
    page_reports,
    test_copy_buttons_copy_what_the_build_ran,
    test_every_figure_has_a_numbered_caption,
    test_every_page_passes_the_accessibility_audit,
    test_every_page_renders_cleanly,
    test_every_widget_is_used_on_its_page,
    test_first_visits_are_light,
    test_minilm_in_the_page_equals_pytorch,
    test_no_code_box_is_cut_off,
    test_no_figure_is_shown_smaller_than_drawn,
    test_no_figure_shows_as_its_repr,
    test_numbers_in_the_prose_come_from_the_build,
    test_output_boxes_look_like_output,
    test_small_model_in_the_page_equals_pytorch,
)

EDITION = "zh"
