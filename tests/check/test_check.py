"""attention_src.check: the checker of a reader's own attention code.

- The zoo (tests/check/check_zoo): every implementation gets exactly the finding ids it declares,
  so every buggy one gets its root cause and no correct one gets a false alarm (on the
  CPU, tests/check/test_check_golden.py checks it, with the golden report; here, on a GPU).
- Every finding links to a section that exists on the site.
- The command line: exit status 0 / 1 / 2, --json, one-line usage errors without tracebacks.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from markdown.extensions.toc import slugify

from attention_src.check import (
    FINDINGS,
    SITE_URL,
    Report,
    UsageError,
    check_function,
    check_module,
    load_target,
    main,
)

from .test_check_golden import assert_declared

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "tests" / "check" / "check_zoo"
ALL = sorted(ZOO.glob("[a-z]_*.py"))  # f_ functions, m_ modules, and the other kinds


def _literal(path: Path, name: str):
    """The value of a top-level ``NAME = <literal>`` in ``path``, read without importing it."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(node.value)
    return None


BROKEN = [p for p in ALL if _literal(p, "EXPECTED_ERROR") is not None]  # a usage error
ENTRIES = [p for p in ALL if p.name[:2] in ("f_", "m_") and p not in BROKEN]
PAGE = ROOT / "docs" / "chapters" / "check-your-attention.md"
LINE = re.compile(r"^FINDING ([a-z-]+): .+ — .+ \(see (https://\S+)\)$")


def load_entry(path: Path):
    spec = importlib.util.spec_from_file_location(f"zoo_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_entry(path: Path, device) -> tuple[Report, object]:
    entry = load_entry(path)
    options = {**getattr(entry, "OPTIONS", {}), "device": device}
    if path.name.startswith("m_"):
        return check_module(
            getattr(entry, getattr(entry, "TARGET", "MyMultiHead")), **options
        ), entry
    return check_function(entry.attention, **options), entry


def _params(paths):
    """The zoo's entries; one that declares KNOWN_WRONG = "why" is a case the checker gets
    wrong today: a strict expected failure, so that the fix turns it into a pass."""
    return [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=_literal(p, "KNOWN_WRONG")))
        if _literal(p, "KNOWN_WRONG")
        else p
        for p in paths
    ]


@pytest.mark.parametrize("path", _params(ENTRIES), ids=lambda p: p.stem)
def test_zoo_entry_gets_exactly_its_findings(path, device):
    if device.type == "cpu":
        pytest.skip("on the CPU: test_check_golden.py, with the same assertions")
    report, entry = run_entry(path, device)
    assert_declared(report, entry)


def test_zoo_covers_every_finding_and_many_correct_styles():
    """Every finding has an entry that the checker gets right (not KNOWN_WRONG)."""
    runnable = [p for p in ALL if p not in BROKEN and not _literal(p, "KNOWN_WRONG")]
    expected = [load_entry(p).EXPECTED for p in runnable]
    covered = set().union(*expected)
    assert covered == set(FINDINGS), f"no zoo entry for {set(FINDINGS) - covered}"
    correct = [p.name for p, ids in zip(runnable, expected, strict=True) if not ids]
    assert sum(n.startswith("f_") for n in correct) >= 5
    assert sum(n.startswith("m_") for n in correct) >= 5
    # the styles people write modules in, each checked without a false alarm
    for style in ("factory_config", "factory_args", "qkv", "mask_bls", "additive",
                  "key_padding", "no_mask", "causal_padding"):  # fmt: skip
        assert f"m_ok_{style}.py" in correct, style


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_code_ends_in_one_clear_line(path, capsys):
    """A file that raises at import, a call that never returns: exit 2, one line naming
    what happened (for a hang, which call), never a traceback and never a hang."""
    name = "MyMultiHead" if path.name.startswith("m_") else "attention"
    args = [f"{path}:{name}", "--device", "cpu", *(_literal(path, "ARGS") or [])]
    status = main(args)
    out, err = capsys.readouterr()
    assert status == 2, out + err
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert re.search(_literal(path, "EXPECTED_ERROR"), err), err


def test_what_the_code_prints_is_captured_not_shown(capsys):
    status = main([f"{ZOO / 'f_prints.py'}:attention", "--device", "cpu"])
    out, err = capsys.readouterr()
    assert status == 0, out + err
    assert "loading attention" not in out + err and "q row" not in out + err
    assert re.search(r"note: it printed \d+ lines while it was checked", out)


def test_a_module_that_cannot_be_called_says_what_was_tried(tmp_path):
    (tmp_path / "odd.py").write_text(
        "from torch import nn\n\n\n"
        "class Five(nn.Module):\n"
        "    def __init__(self, d_model, num_heads):\n"
        "        super().__init__()\n\n"
        "    def forward(self, a, b, c, d, e):\n"
        "        return a\n\n\n"
        "class Picky(nn.Module):\n"
        "    def __init__(self, d_model, num_heads):\n"
        "        super().__init__()\n\n"
        "    def forward(self, *args):\n"
        "        raise TypeError('give me a dict')\n"
    )
    with pytest.raises(UsageError, match=r"cannot be called as forward\(x\), forward\(x, mask\)"):
        check_module(load_target(f"{tmp_path / 'odd.py'}:Five"), device="cpu")
    tried = r"tried forward\(x\): TypeError: give me a dict; forward\(q, k, v\)"
    with pytest.raises(UsageError, match=tried):
        check_module(load_target(f"{tmp_path / 'odd.py'}:Picky"), device="cpu")


def test_a_constructor_that_does_not_fit_is_told_to_use_a_factory():
    entry = load_entry(ZOO / "m_ok_factory_args.py")
    with pytest.raises(UsageError, match=r"write a one-line factory, def build\(d_model"):
        check_module(entry.MultiHeadAttention)

    def not_a_module(d_model, num_heads):
        return torch.zeros(d_model, num_heads)

    def hangs(d_model, num_heads):
        while True:
            pass

    with pytest.raises(UsageError, match=r"not_a_module\(12, 3\) returned a Tensor, not an"):
        check_module(not_a_module, device="cpu")
    with pytest.raises(UsageError, match=r"hangs\(12, 3\) did not return within 0\.5 s"):
        check_module(hangs, device="cpu", call_limit=0.5)


def test_root_cause_first_symptoms_under_it(device):
    """A wrong head split also leaks and breaks equivariance: one finding, symptoms under it."""
    report, _ = run_entry(ZOO / "m_split_reshape.py", device)
    assert report.ids == ["head-split"]
    symptoms = " ".join(report.findings[0].symptoms)
    assert "causal mask" in symptoms and "permuting" in symptoms
    report, _ = run_entry(ZOO / "f_transpose_1_2.py", device)  # raises on most inputs
    assert report.ids == ["wrong-transpose"]
    assert any("raises" in s for s in report.findings[0].symptoms)


def test_famous_scale_names_the_model_width(device):
    report, _ = run_entry(ZOO / "m_c_scale.py", device)
    assert "1/sqrt(12) (the model width)" in report.findings[0].message
    assert "1/sqrt(4)" in report.findings[0].message


def test_fill_1e9_in_float16_is_a_symptom_not_a_second_finding(device):
    report, _ = run_entry(ZOO / "f_fill_1e9.py", device)
    assert report.ids == ["fully-masked-uniform"]
    assert any("float16" in s for s in report.findings[0].symptoms)


def test_auto_finds_the_convention_an_explicit_flag_names_the_mistake(device):
    entry = load_entry(ZOO / "f_mask_inverted.py")
    auto = check_function(entry.attention, device=device)
    assert auto.ok and auto.convention == "block"
    assert any("block" in note for note in auto.notes)
    given = check_function(entry.attention, mask_convention="allow", device=device)
    assert given.ids == ["mask-inverted"]
    block = load_entry(ZOO / "m_ok_block.py").MyMultiHead
    assert check_module(block, device=device).convention == "block"
    assert check_module(block, mask_convention="allow", device=device).ids == ["mask-inverted"]


def test_under_auto_the_report_says_which_flag_makes_an_inverted_mask_a_finding(device):
    """Under auto an inverted mask is read as the other convention, as before; the report
    says so, and that --mask-convention allow would make it the finding mask-inverted."""
    for path in ("f_mask_inverted.py", "m_mha_block_inverted.py"):
        entry = load_entry(ZOO / path)
        target = getattr(entry, getattr(entry, "TARGET", "attention"))
        check = check_module if path.startswith("m_") else check_function
        auto = check(target, device=device)
        assert auto.convention == "block" and "mask-inverted" not in auto.ids, auto.text()
        flag = [n for n in auto.notes if "--mask-convention allow" in n]
        assert flag and "mask-inverted" in flag[0], auto.text()
        assert check(target, mask_convention="allow", device=device).ids[0] == "mask-inverted"


def test_mask_inverted_says_which_way_the_code_reads_the_mask(device):
    for path, reads in (("f_mask_inverted.py", "blocked"), ("f_mask_inverted_block.py",
                                                           "may attend")):  # fmt: skip
        report, _ = run_entry(ZOO / path, device)
        assert report.ids == ["mask-inverted"]
        assert f"the code treats True as {reads}" in report.findings[0].message


def test_a_sequence_first_report_names_the_axes_and_the_layout_it_found(device):
    """softmax-dim's fix names the keys' axis of the scores as found, and the "how" line the
    layout x was handed over in, for a sequence-first module."""
    for path, keys in (("m_labml_softmax_queries.py", -3), ("m_seq_first_softmax_dim.py", -2)):
        report, _ = run_entry(ZOO / path, device)
        assert report.ids == ["softmax-dim"], report.text()
        line = report.lines()[0]
        assert f"dim={keys} of these scores" in line.split(" — ")[1], line
        assert "x (5, 2, 12) (L, B, D)" in report.decided_by, report.decided_by
    ok, _ = run_entry(ZOO / "m_ok_seq_first.py", device)
    assert "x (5, 2, 12) (L, B, D)" in ok.decided_by


def test_reports_are_deterministic(device):
    entry = load_entry(ZOO / "f_exercise.py")
    first = check_function(entry.attention, device=device).to_json()
    assert check_function(entry.attention, device=device).to_json() == first
    module = load_entry(ZOO / "m_split_reshape.py").MyMultiHead
    assert check_module(module, device=device).text() == check_module(module, device=device).text()


def test_global_random_state_is_left_alone(device):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_function(load_entry(ZOO / "f_dropout.py").attention, device=device)
    assert torch.equal(torch.rand(3), expected)


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(TypeError, match="callable"):
        check_function(3)
    with pytest.raises(ValueError, match="mask_convention"):
        check_function(load_entry(ZOO / "f_ok_sdpa.py").attention, mask_convention="yes")
    with pytest.raises(ValueError, match="device"):
        check_function(load_entry(ZOO / "f_ok_sdpa.py").attention, device="nowhere")

    def two(q, k):
        return q

    with pytest.raises(ValueError, match=r"cannot be called as two\(q, k, v, mask=None\)"):
        check_function(two)
    with pytest.raises(ValueError, match=r"check a function without --module"):
        check_module(load_entry(ZOO / "f_ok_sdpa.py").attention)


# --- links ------------------------------------------------------------------------------


def _anchors(page: Path) -> set[str]:
    """Ids of a page: { #id } on a heading or alone after a paragraph, else a heading's slug."""
    anchors, in_code = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        # an attribute list alone on a paragraph's last line gives the paragraph
        # its id (attr_list), as in a folded block where no heading may stand
        alone = re.match(r"^\s*\{\s*#([\w-]+)\s*\}\s*$", line)
        if alone:
            anchors.add(alone[1])
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if not heading:
            continue
        text = heading[1]
        explicit = re.search(r"\{\s*#([\w-]+)\s*\}\s*$", text)
        if explicit:
            anchors.add(explicit[1])
        else:
            anchors.add(slugify(re.sub(r"[`*$]", "", text), "-"))
    return anchors


@pytest.mark.parametrize("finding", sorted(FINDINGS))
def test_every_link_points_at_an_existing_section(finding):
    link = FINDINGS[finding].link
    assert link.startswith(SITE_URL)
    path, _, anchor = link.removeprefix(SITE_URL).partition("/#")
    page = ROOT / "docs" / f"{path}.md"
    assert page.is_file(), f"{finding}: no page {page.relative_to(ROOT)}"
    assert anchor in _anchors(page), f"{finding}: no section #{anchor} in {page.name}"


def test_site_url_is_the_one_in_mkdocs_yml():
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    found = re.search(r"^site_url:\s*[\"']?([^\"'\s]+)", text, re.MULTILINE)
    assert found, "mkdocs.yml has no site_url"
    assert found[1] == SITE_URL


def test_the_page_lists_every_finding():
    text = PAGE.read_text(encoding="utf-8")
    for finding in FINDINGS:
        assert f"| `{finding}` |" in text, finding
    assert "imports and runs" in text


def private_imports(source: str) -> list[str]:
    """What a module of the checker takes from another by an underscore name: ``from .x
    import _y`` (relative, or from attention_src), and ``x._y`` where ``x`` was imported
    from the package."""
    tree, found, imported = ast.parse(source), [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and not (node.module or "").startswith("attention_src"):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(alias.name)
                imported.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            if node.value.id in imported and private:
                found.append(f"{node.value.id}.{node.attr}")
    return found


def test_private_imports_sees_each_kind():
    source = "from .a import _x, y\nfrom ..b import _z as w\nfrom . import c\nc._q\ny.ok\n"
    assert private_imports(source) == ["_x", "_z", "c._q"]
    assert private_imports("from os import _exit\nimport os\nos._exit\n") == []


def test_the_package_stays_small_and_independent():
    """No module over 400 lines, none takes another's underscore names (what modules
    share is their named interface, in their __all__), and no import of the benchmark,
    the cache or the site's build."""
    for path in (ROOT / "attention_src" / "check").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert len(source.splitlines()) <= 400, path.name
        assert not private_imports(source), (path.name, private_imports(source))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom):
                name = "." * node.level + (node.module or "")
                assert not re.match(r"^(\.{2,3}|attention_src\.)(bench|cache)\b", name), name
                assert "site_tools" not in name


# --- the command line -------------------------------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attention_src.check", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_cli_exit_0_for_a_correct_function():
    done = cli(f"{ZOO / 'f_ok_matmul.py'}:attention", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("VERDICT: attention: no mistakes found")


def test_cli_exit_1_and_json_for_a_buggy_module():
    target = f"{ZOO / 'm_split_reshape.py'}:MyMultiHead"
    done = cli(target, "--module", "--json", "--device", "cpu")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["convention"] == "allow"
    assert [f["id"] for f in report["findings"]] == ["head-split"]
    assert set(report["findings"][0]) >= {"id", "message", "link"}
    assert report["findings"][0]["link"] == FINDINGS["head-split"].link


def test_cli_usage_error_is_one_line_exit_2():
    done = cli("no_such_file.py:attention")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == "error: file not found: no_such_file.py\n"


def test_cli_help_says_it_runs_the_file():
    done = cli("--help")
    assert done.returncode == 0
    assert "imports and runs" in done.stdout
    assert all(finding in done.stdout for finding in FINDINGS)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["f_ok_sdpa.py:nope"], "has no name 'nope'; it defines attention"),
        (["f_ok_sdpa.py"], "expected FILE.py:NAME"),
        (["f_ok_sdpa.py:F"], "is an object of type module"),
        (["f_ok_sdpa.py:attention", "--module"], "cannot build an nn.Module"),
        (["m_ok_separate.py:MyMultiHead"], "is a class: check a module with --module"),
        (["f_ok_sdpa.py:attention", "--seq-first"], "--seq-first applies to --module only"),
        (["f_ok_sdpa.py:attention", "--device", "nowhere"], "device 'nowhere' cannot be used"),
        (["f_ok_sdpa.py:attention", "--mask-convention", "yes"], "invalid choice"),
    ],
)
def test_cli_usage_errors(args, message, capsys):
    args = [str(ZOO / args[0]), *args[1:]]
    try:
        status = main(args)
    except SystemExit as stop:  # argparse's own errors
        status = stop.code
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: ") and message in err
    assert "Traceback" not in err


def test_wrong_signature_and_broken_file_are_usage_errors(tmp_path, capsys):
    (tmp_path / "two.py").write_text("def attention(q, k):\n    return q\n")
    (tmp_path / "broken.py").write_text("import torch\n\nx = undefined_name\n")
    assert main([f"{tmp_path / 'two.py'}:attention"]) == 2
    assert main([f"{tmp_path / 'broken.py'}:attention"]) == 2
    _, err = capsys.readouterr()
    first, second = err.splitlines()
    assert first == "error: attention(q, k) cannot be called as attention(q, k, v, mask=None)"
    assert "broken.py (line 3): NameError: name 'undefined_name' is not defined" in second
    with pytest.raises(UsageError):
        load_target(f"{tmp_path / 'missing.py'}:attention")
