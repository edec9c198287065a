"""The checker in Simplified Chinese (see ``lang``): each finding's meaning
and fix, and each English template the checker prints, with its Chinese.

The words are the site's (i18n/terms.zh.yml): 注意力分数, 掩码, 词元, 注意力头,
填充, 因果掩码; a finding is a 发现项. Code, shapes, option names and finding ids
stay as they are, and so do the phrases that the site's pages and scripts look
for, in parentheses after the Chinese: "未发现错误（no mistakes found）",
"did not return within 1 s". A Chinese template has the English one's fields.

Each text is one line, so that searching for an English message finds its
Chinese; hence the long lines. The texts are kept by part, as the checker is:
``core`` (the findings, the report, the command line, loading and running),
``function``, ``module`` and ``decoder``; ``MESSAGES`` has them all.
"""

from __future__ import annotations

from . import core, decoder, function, module

__all__ = ["FINDINGS", "MESSAGES", "DESCRIPTION", "ARGPARSE"]

FINDINGS = core.FINDINGS  # id: (meaning, fix)
MESSAGES = {  # English template: Chinese template, of every part
    **core.MESSAGES,
    **function.MESSAGES,
    **module.MESSAGES,
    **decoder.MESSAGES,
}
DESCRIPTION = core.DESCRIPTION  # the command line's --help
ARGPARSE = core.ARGPARSE  # argparse's own messages
