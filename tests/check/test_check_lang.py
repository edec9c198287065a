"""attention_src.check in Chinese: ``--lang zh`` or ``ATTENTION_CHECK_LANG=zh``.

- The report, the notes, the usage errors and --help are Chinese; the machine-read parts are
  not translated: the ``FINDING <id>:`` prefix, the ids, the JSON keys, the exit status, and
  the English phrases the check page asserts ("no mistakes found", "did not return within
  1 s", "called as forward(x); causal built in; no mask argument", "(2i, 2i + 1),
  interleaved"), kept in parentheses after the Chinese.
- The links lead to the Chinese edition, /zh/ with the same paths and anchors.
- The language never comes from the locale: LANG=zh_CN.UTF-8 alone leaves English.
- Every finding kind and every English template the checker prints has its Chinese.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import string
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from attention_src.check import (
    FINDINGS,
    SITE_URL,
    UsageError,
    check_decode,
    check_function,
    check_gqa,
    check_module,
    check_rope,
    main,
    zh,
)
from attention_src.check.findings import kinds
from attention_src.check.lang import ENV, tr, use

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "attention_src" / "check"
ZOO = ROOT / "tests" / "check" / "check_zoo"
HAN = re.compile(r"[\u4e00-\u9fff]")
CHINESE = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")  # or its punctuation
ZH_LINE = re.compile(r"^FINDING ([a-z-]+): .+ — .+。详见 (https://\S+)$")
BUGGY = f"{ZOO / 'f_exercise.py'}:attention"  # missing-scale and softmax-dim


@pytest.fixture(autouse=True)
def _no_language_from_outside(monkeypatch):
    """Whoever runs the tests, the language comes only from what each test sets."""
    monkeypatch.delenv(ENV, raising=False)


def run(capsys, *args: str) -> tuple[int, str, str]:
    """``python -m attention_src.check ARGS`` in this process: (status, stdout, stderr)."""
    try:
        status = main([*args])
    except SystemExit as stop:  # argparse's own exits (--help, its usage errors)
        status = stop.code
    out, err = capsys.readouterr()
    return status, out, err


def finding_ids(output: str) -> list[str]:
    """The ids of the FINDING lines, read as the check page reads them."""
    return [
        line.split(":")[0].split()[1] for line in output.splitlines() if line.startswith("FINDING")
    ]


def load_entry(path: Path):
    spec = importlib.util.spec_from_file_location(f"zoo_lang_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the command line -------------------------------------------------------------------


def test_lang_zh_speaks_chinese_with_the_same_ids_status_and_fields(capsys):
    status_en, english, _ = run(capsys, BUGGY, "--device", "cpu")
    status, chinese, err = run(capsys, BUGGY, "--device", "cpu", "--lang", "zh")
    assert status == status_en == 1, err
    assert finding_ids(chinese) == finding_ids(english) == ["missing-scale", "softmax-dim"]
    lines = chinese.splitlines()
    assert len(lines) == len(english.splitlines())
    for line in lines:
        assert HAN.search(line), line
        found = ZH_LINE.match(line)
        if line.startswith("FINDING"):
            assert found, line
            assert found[2] == kinds("zh")[found[1]].link
            assert found[2].startswith(f"{SITE_URL}zh/chapters/")
    assert lines[2].startswith("判定依据：在 9 个输入中的 9 个上，输出等于")
    assert lines[3] == "注：根据行为判断出的掩码约定：allow（True = 可以关注）"
    assert lines[-1] == "结论：attention：发现 2 个错误（missing-scale, softmax-dim）"


def test_the_environment_variable_speaks_chinese_and_lang_beats_it(capsys, monkeypatch):
    _, chinese, _ = run(capsys, BUGGY, "--device", "cpu", "--lang", "zh")
    _, english, _ = run(capsys, BUGGY, "--device", "cpu")
    monkeypatch.setenv(ENV, "zh")
    status, out, _ = run(capsys, BUGGY, "--device", "cpu")
    assert status == 1 and out == chinese
    status, out, _ = run(capsys, BUGGY, "--device", "cpu", "--lang", "en")
    assert status == 1 and out == english
    monkeypatch.setenv(ENV, "")  # empty: unset
    assert run(capsys, BUGGY, "--device", "cpu")[1] == english


def test_json_keys_ids_and_status_stay_the_human_text_is_chinese(capsys):
    target = f"{ZOO / 'm_split_reshape.py'}:MyMultiHead"
    status_en, english, _ = run(capsys, target, "--module", "--json", "--device", "cpu")
    status, chinese, _ = run(
        capsys, target, "--module", "--json", "--device", "cpu", "--lang", "zh"
    )
    assert status == status_en == 1
    en, cn = json.loads(english), json.loads(chinese)
    assert cn.keys() == en.keys()
    assert [f.keys() for f in cn["findings"]] == [f.keys() for f in en["findings"]]
    assert [f["id"] for f in cn["findings"]] == [f["id"] for f in en["findings"]]
    assert cn["findings"][0]["id"] == "head-split"
    assert cn["findings"][0]["link"] == en["findings"][0]["link"].replace(
        SITE_URL, f"{SITE_URL}zh/"
    )
    assert cn["convention"] == en["convention"] == "allow"
    assert len(cn["checks"]) == len(en["checks"])
    for text in [cn["verdict"], *cn["notes"], *cn["checks"], cn["findings"][0]["message"]]:
        assert HAN.search(text), text
    assert all(HAN.search(s) for s in cn["findings"][0]["symptoms"])


def test_the_locale_alone_leaves_english():
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env.update(
        LANG="zh_CN.UTF-8", LC_ALL="zh_CN.UTF-8", LC_MESSAGES="zh_CN.UTF-8", LANGUAGE="zh_CN:zh"
    )
    target = f"{ZOO / 'f_ok_matmul.py'}:attention"
    done = subprocess.run(
        [sys.executable, "-m", "attention_src.check", target, "--device", "cpu"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("VERDICT: attention: no mistakes found")
    assert not HAN.search(done.stdout + done.stderr)


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--lang", "fr"], None, "error: --lang must be en or zh, got 'fr' (see --help)"),
        (["--lang", "ZH"], None, "error: --lang must be en or zh, got 'ZH' (see --help)"),
        ([], "zh_CN", f"error: {ENV} must be en or zh, got 'zh_CN' (see --help)"),
        (["--lang"], None, "error: argument --lang: expected one argument (see --help)"),
    ],
)
def test_an_unknown_language_is_a_one_line_usage_error(args, env, expected, capsys, monkeypatch):
    if env is not None:
        monkeypatch.setenv(ENV, env)
    status, out, err = run(capsys, f"{ZOO / 'f_ok_sdpa.py'}:attention", *args)
    assert status == 2
    assert out == ""
    assert err == expected + "\n"


def test_lang_beats_a_bad_environment_variable(capsys, monkeypatch):
    monkeypatch.setenv(ENV, "fr")
    assert (
        run(capsys, "no_such_file.py:attention", "--lang", "zh")[2]
        == "错误：找不到文件：no_such_file.py\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no_such_file.py:attention"], "错误：找不到文件：no_such_file.py\n"),
        ([], "错误：缺少必需的参数：target（见 --help）\n"),
        (["no_such_file.py:attention", "--frobnicate"], "错误：无法识别的参数：--frobnicate"),
        (["f_ok_sdpa.py:attention", "--mask-convention", "yes"], "参数 --mask-convention 的取值"),
        (["f_ok_sdpa.py:attention", "--seq-first"], "错误：--seq-first 只能配合 --module 使用"),
        (["r_base.py:rope", "--rope", "--gqa"], "--module、--rope、--gqa、--decode 只能选一个"),
        (["f_ok_sdpa.py:nope"], "中没有名字 'nope'；它定义了 attention"),
        (["f_ok_sdpa.py:attention", "--module"], "不能以 attention(d_model, num_heads) 的方式"),
    ],
)
def test_usage_errors_are_chinese_and_one_line(args, message, capsys):
    if args and (ZOO / args[0].partition(":")[0]).is_file():
        args = [str(ZOO / args[0]), *args[1:]]
    status, out, err = run(capsys, *args, "--lang", "zh")
    assert status == 2
    assert out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("错误：") and message in err, err


def test_a_call_past_the_limit_keeps_the_english_phrase(capsys):
    target = f"{ZOO / 'f_never_returns.py'}:attention"
    status, out, err = run(capsys, target, "--call-limit", "1", "--lang", "zh")
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith("错误：attention(q (2, 3, 5, 8)")
    assert "在 1 秒内没有返回（did not return within 1 s）" in err


def test_the_phrases_the_check_page_asserts_stay_in_chinese_output(capsys):
    status, out, _ = run(
        capsys, f"{ZOO / 'f_ok_matmul.py'}:attention", "--device", "cpu", "--lang", "zh"
    )
    assert status == 0 and "未发现错误（no mistakes found）" in out
    target = f"{ZOO / 'm_ok_factory_config.py'}:build"
    status, out, _ = run(capsys, target, "--module", "--device", "cpu", "--lang", "zh")
    assert status == 0
    assert "注：以 forward(x) 调用；内置因果掩码；没有掩码参数" in out
    assert "called as forward(x); causal built in; no mask argument" in out
    status, out, _ = run(
        capsys, f"{ZOO / 'r_ok_complex.py'}:rope", "--rope", "--device", "cpu", "--lang", "zh"
    )
    assert status == 0 and "(2i, 2i + 1), interleaved" in out and "相邻交错配对" in out
    status, out, _ = run(
        capsys,
        f"{ZOO / 'r_positions_ignored.py'}:rope",
        "--rope",
        "--device",
        "cpu",
        "--lang",
        "zh",
    )
    assert status == 1 and "FINDING rope-positions-ignored: " in out


def test_help_is_chinese_and_lists_every_finding(capsys):
    status, out, _ = run(capsys, "--help", "--lang", "zh")
    assert status == 0
    assert out.startswith("用法： python -m attention_src.check [-h]")
    assert "导入并运行 FILE.py" in out and "--lang {en,zh}" in out and "ATTENTION_CHECK_LANG" in out
    assert all(finding in out for finding in FINDINGS)
    body = [line for line in out.splitlines() if not line.startswith("发现项 id：")]
    assert max(map(_columns, body)) <= 80  # wrapped by display width
    status, out, _ = run(capsys, "--help")
    assert status == 0 and "imports and runs" in out and not HAN.search(out)


def _columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


# --- the Python API ---------------------------------------------------------------------


def test_the_python_api_is_english_unless_told(capsys):
    fn = load_entry(ZOO / "f_exercise.py").attention
    english = check_function(fn, device="cpu")
    chinese = check_function(fn, device="cpu", lang="zh")
    assert english.lang == "en" and not HAN.search(english.text() + english.to_json())
    assert chinese.lang == "zh" and chinese.ids == english.ids
    assert chinese.text() == run(capsys, BUGGY, "--device", "cpu", "--lang", "zh")[1].rstrip("\n")
    assert english.text() == run(capsys, BUGGY, "--device", "cpu")[1].rstrip("\n")
    with pytest.raises(UsageError, match=r"lang must be one of en, zh, got 'fr'"):
        check_function(fn, device="cpu", lang="fr")


def test_spaces_go_where_a_value_meets_a_chinese_character():
    with use("zh"):
        assert tr("seen on {first}", first="q (2, 3)") == "见于 q (2, 3)"
        assert tr("{what} does not change the output", what="因果掩码") == "因果掩码不改变输出"
        assert tr("{what} does not change the output", what="mask") == "mask 不改变输出"
        assert tr("pairs found: {layout}", layout="（x）") == "找到的配对方式：（x）"
    assert tr("seen on {first}", first="q (2, 3)") == "seen on q (2, 3)"


# --- the tables -------------------------------------------------------------------------


def test_every_finding_kind_has_chinese_meaning_fix_and_link():
    chinese = kinds("zh")
    assert chinese.keys() == FINDINGS.keys() == zh.FINDINGS.keys()
    for fid, kind in chinese.items():
        english = FINDINGS[fid]
        assert HAN.search(kind.meaning) and HAN.search(kind.fix), fid
        assert (kind.page, kind.anchor) == (english.page, english.anchor)
        assert kind.link == f"{SITE_URL}zh/{english.page}/#{english.anchor}"
        assert english.link == f"{SITE_URL}{english.page}/#{english.anchor}"


def _fields(template: str) -> set[tuple]:
    return {
        (name, spec, conversion)
        for _, name, spec, conversion in string.Formatter().parse(template)
        if name is not None
    }


def _templates() -> dict[str, str]:
    """Every ``tr("...")`` of the package: the English template -> the file it is in."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "tr" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.setdefault(first.value, path.name)
    return found


def _looked_up() -> list[str]:
    """The English texts translated through a variable, ``tr(TABLE[key])``."""
    from attention_src.check.decoder import rope
    from attention_src.check.function import variants
    from attention_src.check.module import facts, masks

    return [
        *facts.CHECKS.values(),
        *facts.CAUSAL_CHECKS.values(),  # what two checks say of a causal module
        *(text for text in masks.LAYOUTS.values() if re.search(r"[a-z]{3}", text)),
        *masks.MASK_ENCODINGS.values(),
        *(text for text in variants.KEY_TRANSPOSES.values() if " (" in text),
        *rope.PAIRINGS.values(),
        "padding", "causal", "random", "fully masked rows",  # the masks of check_function
        "query", "key",  # which operand of the scores (sites)
    ]  # fmt: skip


def test_every_english_template_has_chinese_with_the_same_fields():
    templates = [*_templates(), *_looked_up()]
    assert len(templates) > 200
    missing = [t for t in templates if t not in zh.MESSAGES]
    assert not missing, missing
    for english in templates:
        chinese = zh.MESSAGES[english]
        assert CHINESE.search(chinese), (english, chinese)
        assert _fields(chinese) == _fields(english), (english, chinese)
        if english.startswith("FINDING "):
            assert chinese.startswith("FINDING {id}: ")
    unused = set(zh.MESSAGES) - set(templates)
    assert not unused, unused


def test_the_chinese_description_keeps_the_english_ones_lines_of_argument():
    from attention_src.check import cli

    for option in re.findall(r"--[a-z-]+", cli.DESCRIPTION):
        assert option in zh.DESCRIPTION, option


# --- the zoo in Chinese -----------------------------------------------------------------


def _literal(path: Path, name: str):
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(node.value)
    return None


RUNNABLE = [p for p in sorted(ZOO.glob("[a-z]_*.py")) if _literal(p, "EXPECTED_ERROR") is None]
WITH_NOTES = [
    "m_ok_factory_config",
    "m_ok_key_padding",
    "m_ok_valid_lens",
    "r_ok_rotate_half",
    "d_ok_window_lists",
    "f_prints",
]
CHINESE_ZOO = [p for p in RUNNABLE if "_ok_" not in p.name or p.stem in WITH_NOTES]


def check_in(path: Path, lang: str):
    entry = load_entry(path)
    options = {**getattr(entry, "OPTIONS", {}), "lang": lang}
    kind = path.name[:2]
    if kind == "m_":
        target = getattr(entry, getattr(entry, "TARGET", "MyMultiHead"))
        return check_module(target, device="cpu", **options), entry
    if kind == "r_":
        return check_rope(entry.rope, device="cpu", **options), entry
    if kind == "g_":
        return check_gqa(entry.attention, device="cpu", **options), entry
    if kind == "d_":
        return check_decode(entry.decode, device="cpu", **options), entry
    return check_function(entry.attention, device="cpu", **options), entry


def _known_wrong(path: Path):
    """``KNOWN_WRONG = "why"`` in a zoo file (a case the checker gets wrong today), or None."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "KNOWN_WRONG" for t in targets):
            return ast.literal_eval(node.value)
    return None


CHINESE_PARAMS = [  # a case the checker gets wrong today: a strict expected failure
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=_known_wrong(p)))
    if _known_wrong(p)
    else p
    for p in CHINESE_ZOO
]


@pytest.mark.parametrize("path", CHINESE_PARAMS, ids=lambda p: p.stem)
def test_zoo_entry_in_chinese(path):
    """The same findings as in English (the ids each entry declares), every text Chinese."""
    report, entry = check_in(path, "zh")
    assert set(report.ids) == entry.EXPECTED, report.text()
    texts = [report.verdict(), *report.notes]
    texts += [report.decided_by] if report.decided_by else []
    for finding in report.findings:
        texts += [finding.message, *finding.symptoms]
    for text in texts:
        assert HAN.search(text), text
    for line in report.lines():
        if line.startswith("FINDING"):
            found = ZH_LINE.match(line)
            assert found, line
            assert found[2] == kinds("zh")[found[1]].link
    assert json.loads(report.to_json()).keys() == {
        "findings",
        "convention",
        "verdict",
        "notes",
        "checks",
    }
