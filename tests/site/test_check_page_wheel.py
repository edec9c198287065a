"""The check page's copy texts run where a reader runs them: in an empty folder, with only
the package's wheel installed (no checkout, no tests/ folder). Its decoder blocks read
their example models from the installed package (package data of ``attention_src.check``);
this test builds the wheel as the site serves it, installs it into an empty folder with
``pip install --target``, and runs the copy texts of the page's decoder session (the
blocks that read the examples, and those they build on), both editions, as
``site_tools.engine.copyrun`` runs them, from another empty folder, with that folder alone on
``PYTHONPATH`` (torch and transformers come from the environment, as a reader's do).
About 20 s an edition on two loaded cores; the whole page takes about 90 s, and its
other blocks read no file of the checkout (tests/check/test_check_examples.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from site_tools.engine import copyrun
from site_tools.engine.program import copies, page_program
from site_tools.outputs.wheel import build_wheel

ROOT = Path(__file__).resolve().parents[2]
PAGE = "chapters/check-your-attention.md"
SESSION = "check-decoder"  # the blocks that read the example models, and what they use
EXAMPLES = (
    "d_ok_lists",
    "d_ok_transformers",
    "d_ok_preallocated",
    "d_window_one_query",
    "d_attend_before_append_lists",
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """An empty folder with the wheel installed into it, and nothing else."""
    wheel = build_wheel(ROOT / ".cache" / "wheel")
    names = zipfile.ZipFile(wheel).namelist()
    for name in EXAMPLES:
        assert f"attention_src/check/examples/{name}.py.txt" in names, name
    target = tmp_path_factory.mktemp("site-packages")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
         "--disable-pip-version-check", "--target", str(target), str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    return target


def _reader_env(target: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ATTENTION_CACHE_DIR")}
    env.update(PYTHONPATH=str(target), CUDA_VISIBLE_DEVICES="", MPLBACKEND="Agg")
    return env


@pytest.mark.parametrize("edition", ["docs", "docs-zh"])
def test_the_check_page_runs_from_an_empty_folder_with_the_wheel(edition, installed, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = _reader_env(installed)
    where = subprocess.run(
        [sys.executable, "-c", "import attention_src; print(attention_src.__file__)"],
        cwd=work, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert Path(where).is_relative_to(installed), where  # the wheel's, not the checkout's
    program = page_program((ROOT / edition / PAGE).read_text(encoding="utf-8"))
    blocks = copies([b for b in program if b.session == SESSION])
    data = tmp_path / "copies.json"
    data.write_text(json.dumps({"page": PAGE, "blocks": blocks}), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, copyrun.__file__, "--one", str(data)],
        cwd=work, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    report = json.loads(lines[-1])
    failed = [b for b in report["blocks"] if b["status"] == "failed"]
    assert failed == [], "\n".join(f"block {b['index']}:\n{b['error']}" for b in failed)
    assert len(report["blocks"]) == len(blocks) >= 4
    assert sorted(p.name for p in work.iterdir()) == []  # the page writes to a temporary folder
    for block in blocks:
        if "EXAMPLES" in block["code"]:  # the examples were read, and checked
            assert report["blocks"][block["index"] - 1]["status"] == "ok"
    assert sum("EXAMPLES" in block["code"] for block in blocks) == 2
