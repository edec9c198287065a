"""The reader's disk stays clean: running the real-decoder page's copied blocks, as a
reader who set nothing would, writes under 50 MB in all.

The page loads SmolLM2, whose dequantised weights are about 540 MB of float32 and go
through ``cached``. The build keeps them (``ATTENTION_CACHE_DIR`` names its folder); a
reader's default folder, the user's cache folder, keeps only results under 50 MB. The
test runs the page's copy texts (the build's ``_copies`` file, as
``site_tools.engine.copyrun`` runs them) in a fresh interpreter whose current folder, home
folder and temporary folder are empty, with no ``ATTENTION_CACHE_DIR`` or
``XDG_*`` variables, then adds up every byte left in those three folders. It loads the
model several times over: expect a minute or more.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 50_000_000  # bytes: what a reader's run may leave on disk, all folders together
# Variables that point caches or settings somewhere other than the home folder: a reader
# who set nothing has none of them.
REDIRECTS = (
    "ATTENTION_CACHE_DIR",
    "HF_HOME",
    "HF_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "TORCH_HOME",
    "MPLCONFIGDIR",
)


def _bytes_under(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def run_as_a_reader(copies: Path, scratch: Path) -> tuple[dict, dict[str, int], float]:
    """Run one page's copy texts in empty folders; (report, bytes per folder, seconds)."""
    folders = {name: scratch / name for name in ("work", "home", "tmp")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in REDIRECTS and not key.startswith("XDG_")
    }
    env.update(
        HOME=str(folders["home"]),
        TMPDIR=str(folders["tmp"]),
        PYTHONPATH=str(ROOT),  # site_tools; attention_src is installed
        PYTHONHASHSEED="0",
        MPLBACKEND="Agg",
        CUDA_VISIBLE_DEVICES="",  # as the copy test runs pages: on the CPU
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "site_tools.engine.copyrun", "--one", str(copies)],
        cwd=folders["work"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    seconds = time.perf_counter() - start
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, (
        f"the copy run crashed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n"
        f"{proc.stderr[-3000:]}"
    )
    written = {name: _bytes_under(folder) for name, folder in folders.items()}
    return json.loads(lines[-1]), written, seconds


def test_copying_the_real_decoder_page_writes_under_50_mb(built_site, tmp_path):
    copies = built_site.dir / "_copies" / "chapters--real-decoder.json"
    assert copies.is_file(), f"the build wrote no {copies.name}"
    report, written, seconds = run_as_a_reader(copies, tmp_path)
    failed = [b for b in report["blocks"] if b["status"] == "failed"]
    assert failed == [], "\n".join(f"block {b['index']}:\n{b['error']}" for b in failed)
    assert len(report["blocks"]) >= 5
    # the results went to the user's cache folder under the empty home, the small ones
    # kept, SmolLM2's weights (the "smollm2-gguf" entry) not
    kept = sorted(p.name for p in (tmp_path / "home").rglob("*.pt"))
    assert any(name.startswith("smollm2-attention-") for name in kept), kept
    assert not any(name.startswith("smollm2-gguf-") for name in kept), kept
    print(f"real-decoder copy run: {seconds:.0f} s, bytes written: {written}")
    assert sum(written.values()) < LIMIT, written
