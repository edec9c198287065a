"""The banner above a Chinese page whose translation is pending or older than its English
page (:func:`site_tools.edition.pages.translation_state`), with a link to the English page.
"""

from __future__ import annotations

from site_tools.edition.pages import translation_state

BANNERS = {
    "pending": (
        "warning",
        "翻译待完成",
        "本页还没有译成中文，下面是英文原文。",
    ),
    "stale": (
        "note",
        "译文较旧",
        "英文页面在这份译文之后有过修改，本页可能没有反映最新内容。",
    ),
}


def banner(page: str, url: str) -> str:
    """The banner a Chinese page shows above its text when its translation is pending
    or older than its English page (raw HTML: its link leaves the edition)."""
    state = translation_state(page)
    if state not in BANNERS:
        return ""
    kind, title, text = BANNERS[state]
    english = "../" * (url.count("/") + 1) + url  # from site/zh/<url> to site/<url>
    return (
        f'<div class="admonition {kind} translation-{state}" markdown="0">'
        f'<p class="admonition-title">{title}</p>'
        f'<p>{text}<a href="{english}" hreflang="en">查看英文页面</a>。</p></div>\n\n'
    )
