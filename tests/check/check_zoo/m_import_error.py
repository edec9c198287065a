"""Broken at import: a name used at the top of the file does not exist. The checker says so
in one line, with the line number, and exits with status 2."""

from torch import nn

EXPECTED_ERROR = r"could not import .*m_import_error\.py \(line 9\): NameError: name 'Config'"
ARGS = ["--module"]

DEFAULTS = Config(n_embd=12, n_head=3)  # noqa: F821


class MyMultiHead(nn.Module):
    pass
