"""Broken at import: the file loads a checkpoint that is not there before the function is
even defined. The checker says so in one line, with the line number, and exits with
status 2."""

import torch

EXPECTED_ERROR = r"could not import .*f_import_error\.py \(line 9\): FileNotFoundError: "

CHECKPOINT = torch.load("weights_that_are_not_here.pt")


def attention(q, k, v, mask=None):
    return q
