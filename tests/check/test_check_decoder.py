"""attention_src.check on the pieces of a decoder: --rope, --gqa, --decode [--window W].

- The zoo's r_ (RoPE), g_ (grouped-query) and d_ (cached decoding) entries: each gets exactly
  the finding ids it declares; correct ones in several styles get none (on the CPU,
  tests/check/test_check_golden.py checks it; here, on a GPU, the r_ and g_ ones).
- Every finding id of these kinds has a zoo entry, and the report says what it found.
- The command line dispatches the three kinds and refuses options that do not fit.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest
import torch

from attention_src.check import (
    FINDINGS,
    UsageError,
    check_decode,
    check_gqa,
    check_rope,
    main,
)
from attention_src.check.decoder.rotation import reference_rope

from .test_check_golden import assert_declared

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "tests" / "check" / "check_zoo"
KINDS = {"r_": "rope", "g_": "gqa", "d_": "decode"}
ENTRIES = sorted(p for p in ZOO.glob("*.py") if p.name[:2] in KINDS)
NEW_IDS = {i for i in FINDINGS if i.startswith(("rope-", "gqa-", "decode-"))}
LINE = re.compile(r"^FINDING ([a-z-]+): .+ — .+ \(see (https://\S+)\)$")


def load_entry(path: Path):
    spec = importlib.util.spec_from_file_location(f"zoo_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_entry(path: Path, device):
    entry = load_entry(path)
    options = dict(getattr(entry, "OPTIONS", {}))
    kind = KINDS[path.name[:2]]
    if kind == "rope":
        return check_rope(entry.rope, device=device, **options), entry
    if kind == "gqa":
        return check_gqa(entry.attention, device=device, **options), entry
    return check_decode(entry.decode, device="cpu", **options), entry  # CPU models


def _known_wrong(path: Path):
    """``KNOWN_WRONG = "why"`` in a zoo file, read without importing it, or None."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "KNOWN_WRONG" for t in targets):
            return ast.literal_eval(node.value)
    return None


PARAMS = [  # a case the checker gets wrong today: a strict expected failure
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=_known_wrong(p)))
    if _known_wrong(p)
    else p
    for p in ENTRIES
]


@pytest.mark.parametrize("path", PARAMS, ids=lambda p: p.stem)
def test_zoo_entry_gets_exactly_its_findings(path, device):
    if device.type == "cpu" or path.name.startswith("d_"):  # d_: CPU models
        pytest.skip("on the CPU: test_check_golden.py, with the same assertions")
    report, entry = run_entry(path, device)
    assert_declared(report, entry)


def test_every_new_finding_has_an_entry_and_each_kind_many_correct_styles():
    right = [p for p in ENTRIES if not _known_wrong(p)]  # entries it gets right
    expected = {p.name: load_entry(p).EXPECTED for p in right}
    covered = set().union(*expected.values())
    assert NEW_IDS == {
        "rope-exponent", "rope-base", "rope-positions-ignored", "rope-layout-mix",
        "gqa-kv-head", "decode-position-offset", "decode-rope-twice",
        "decode-causal-top-left", "decode-window", "decode-cache-unbounded",
        "decode-attend-before-append",
    }  # fmt: skip
    assert NEW_IDS <= covered, f"no zoo entry for {NEW_IDS - covered}"
    for prefix in KINDS:
        correct = [n for n, ids in expected.items() if n.startswith(prefix) and not ids]
        assert len(correct) >= 4, (prefix, correct)
    windowed = [p for p in ENTRIES if "window" in getattr(load_entry(p), "OPTIONS", {})]
    assert any(not load_entry(p).EXPECTED for p in windowed)


@pytest.mark.parametrize(
    ("entry", "layout"),
    [
        ("r_ok_rotate_half.py", "(i, i + Dh/2), rotate-half"),
        ("r_ok_interleaved.py", "(2i, 2i + 1), interleaved"),
        ("r_ok_complex.py", "(2i, 2i + 1), interleaved"),
    ],
)
def test_rope_says_which_layout_it_found(entry, layout, device):
    report, _ = run_entry(ZOO / entry, device)
    assert any(note.startswith(f"pairs found: {layout}") for note in report.notes)


def test_rope_names_the_base_it_recovers(device):
    report, _ = run_entry(ZOO / "r_base.py", device)
    assert "with base 1000000, not 10000" in report.findings[0].message
    report, _ = run_entry(ZOO / "r_exponent.py", device)
    assert "base ** (-i/Dh)" in report.findings[0].message
    assert "as if the base were 100 instead of 10000" in report.findings[0].message


def test_rope_turning_the_other_way_is_unexplained_with_the_reason(device):
    def backwards(x, positions):
        return reference_rope(x, -positions)

    report = check_rope(backwards, device=device)
    assert report.ids == ["unexplained"]
    assert "turn the other way" in report.findings[0].message


def test_rope_reference_layouts_are_rotations_of_different_pairs(device):
    x = torch.randn(2, 5, 8, device=device)
    positions = torch.tensor([4, 0, 2, 9, 1], device=device)
    half = reference_rope(x, positions)
    inter = reference_rope(x, positions, layout="interleaved")
    torch.testing.assert_close(half.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(inter.norm(dim=-1), x.norm(dim=-1))
    assert not torch.allclose(half, inter)
    # interleaved = rotate-half on the features reordered as (0, 2, 4, ..., 1, 3, ...)
    order = torch.tensor([0, 2, 4, 6, 1, 3, 5, 7], device=device)
    torch.testing.assert_close(inter[..., order], reference_rope(x[..., order], positions))


def test_gqa_names_the_mapping_it_found(device):
    report, _ = run_entry(ZOO / "g_repeat_tile.py", device)
    assert "read [0, 1, 0, 1, 0, 1], not [0, 0, 0, 1, 1, 1]" in report.findings[0].message


def test_gqa_on_plain_attention_is_a_shape_finding(device):
    def plain(q, k, v, mask=None):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    report = check_gqa(plain, device=device)
    assert report.ids == ["shape"]
    assert "k, v (2, 2, 7, 8)" in report.findings[0].message


def test_decode_runs_past_the_window_and_counts_the_cache():
    report, _ = run_entry(ZOO / "d_cache_unbounded.py", None)
    assert report.checks[0].startswith("tokens (2, 11): ")  # 11 tokens > 2 W for W = 4
    assert report.checks[-2].startswith("step 10: token 10 after 10 cached")
    message = report.findings[0].message
    assert re.search(r"holds (\d+) tensor elements after 4 tokens and (\d+) after 11", message)
    ok, _ = run_entry(ZOO / "d_ok_window_lists.py", None)
    assert ok.ok and any(note.startswith("cache: ") for note in ok.notes)


def test_decode_without_the_window_meant_what_a_step_reads_is_observed_not_named():
    """Without --window the checker cannot know that a window is meant: a step that does not
    read a token the full recompute reads is unexplained, with what was seen, not
    decode-window (nor a rotation, which it is not)."""
    report = check_decode(load_entry(ZOO / "d_window_short_one_layer.py").decode)
    assert report.ids == ["unexplained"], report.text()
    message = report.findings[0].message
    assert "does not change when token 0 changes and the full recompute's does" in message
    assert "--window W" in message
    assert "one step after a prefill of one token is right, after two tokens right" in message


def test_decode_a_broken_adapter_is_a_shape_finding():
    def no_cache(tokens, cache):
        return torch.zeros((*tokens.shape, 3))  # not (out, cache)

    report = check_decode(no_cache)
    assert report.ids == ["shape"]
    assert "not (out, cache)" in report.findings[0].message


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(TypeError, match="callable"):
        check_rope(3)
    with pytest.raises(UsageError, match=r"cannot be called as one\(x, positions\)"):
        check_rope(lambda x: x, name="one")
    with pytest.raises(ValueError, match="base must be a number > 1"):
        check_rope(lambda x, p: x, base=1)
    with pytest.raises(ValueError, match=r"window must be an int >= 2, got 1"):
        check_decode(lambda tokens, cache: None, window=1)
    with pytest.raises(UsageError, match=r"cannot be called as f\(tokens, cache\)"):
        check_decode(lambda tokens: None, name="f")
    with pytest.raises(TypeError, match="callable"):
        check_gqa(None)


# --- the command line -------------------------------------------------------------------


def test_cli_checks_each_kind(capsys):
    assert main([f"{ZOO / 'r_ok_complex.py'}:rope", "--rope", "--device", "cpu"]) == 0
    assert main([f"{ZOO / 'r_base.py'}:rope", "--rope", "--base", "1e6"]) == 0
    assert main([f"{ZOO / 'g_repeat_tile.py'}:attention", "--gqa", "--device", "cpu"]) == 1
    target = f"{ZOO / 'd_window_one_query.py'}:decode"
    assert main([target, "--decode", "--window", "4", "--json"]) == 1
    out = capsys.readouterr().out
    assert "pairs found: (2i, 2i + 1)" in out
    assert "FINDING gqa-kv-head" in out
    assert '"id": "decode-window"' in out and '"id": "decode-cache-unbounded"' in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["r_base.py:rope", "--rope", "--gqa"], "pick one of --module, --rope"),
        (["r_base.py:rope", "--module", "--rope"], "pick one of --module, --rope"),
        (["r_base.py:rope", "--base", "3"], "pick one of --module, --rope"),
        (["g_ok_sdpa.py:attention", "--gqa", "--base", "3"], "--base applies to --rope"),
        (["d_ok_lists.py:decode", "--rope", "--window", "4"], "--window applies to --decode"),
        (["d_ok_lists.py:decode", "--decode", "--window", "1"], "window must be an int >= 2"),
        (["g_ok_sdpa.py:attention", "--decode"], "cannot be called as attention(tokens"),
    ],
)
def test_cli_usage_errors(args, message, capsys):
    status = main([str(ZOO / args[0]), *args[1:]])
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: ") and message in err
