"""attention_src.machinery.cache: results are reused for the same code and settings,
recomputed otherwise."""

from __future__ import annotations

import torch

from attention_src import machinery as cache
from attention_src.machinery import cache as cache_module


def _experiment(n: int, seed: int = 0):
    _experiment.calls += 1
    gen = torch.Generator().manual_seed(seed)
    return {"values": torch.randn(n, generator=gen), "mean": 0.5, "curve": [1.0, 2.0]}


_experiment.calls = 0


def test_second_call_reads_the_stored_result(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_CACHE_DIR", str(tmp_path))
    _experiment.calls = 0
    first = cache.cached("exp", {"n": 4}, _experiment)
    second = cache.cached("exp", {"n": 4}, _experiment)
    assert _experiment.calls == 1
    torch.testing.assert_close(first["values"], second["values"])
    assert second["curve"] == [1.0, 2.0]
    assert len(list(tmp_path.glob("exp-*.pt"))) == 1


def test_other_settings_recompute(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_CACHE_DIR", str(tmp_path))
    _experiment.calls = 0
    a = cache.cached("exp", {"n": 4, "seed": 0}, _experiment)
    b = cache.cached("exp", {"n": 4, "seed": 1}, _experiment)
    assert _experiment.calls == 2
    assert not torch.equal(a["values"], b["values"])


def test_key_depends_on_code(tmp_path):
    import attention_src.masks as masks
    import attention_src.softmax as softmax

    k1 = cache.cache_key("exp", {"n": 1}, [softmax])
    k2 = cache.cache_key("exp", {"n": 1}, [masks])
    k3 = cache.cache_key("exp", {"n": 2}, [softmax])
    assert len({k1, k2, k3}) == 3
    assert k1 == cache.cache_key("exp", {"n": 1}, [softmax])


def test_corrupt_file_is_recomputed(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_CACHE_DIR", str(tmp_path))
    _experiment.calls = 0
    cache.cached("exp", {"n": 3}, _experiment)
    (path,) = tmp_path.glob("exp-*.pt")
    path.write_bytes(b"not a torch file")
    result = cache.cached("exp", {"n": 3}, _experiment)
    assert _experiment.calls == 2
    assert result["values"].shape == (3,)


def test_off_disables_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_CACHE_DIR", "off")
    _experiment.calls = 0
    cache.cached("exp", {"n": 2}, _experiment)
    cache.cached("exp", {"n": 2}, _experiment)
    assert _experiment.calls == 2
    assert cache.cache_dir() is None


def _seeding_experiment(seed: int):
    torch.manual_seed(seed)  # as the training functions do
    return {"draw": torch.rand(3)}


def test_global_random_state_is_the_same_computed_or_read(tmp_path, monkeypatch):
    """The code after ``cached`` must draw the same numbers on a fresh build
    (the experiment runs and seeds torch) as on a cached one (it does not)."""
    monkeypatch.setenv("ATTENTION_CACHE_DIR", str(tmp_path))
    draws = []
    for _ in range(2):  # the first call computes, the second reads the file
        torch.manual_seed(123)
        cache.cached("seeding", {"seed": 0}, _seeding_experiment)
        draws.append(torch.rand(4))
    monkeypatch.setenv("ATTENTION_CACHE_DIR", "off")
    torch.manual_seed(123)
    cache.cached("seeding", {"seed": 0}, _seeding_experiment)
    draws.append(torch.rand(4))
    torch.manual_seed(123)
    expected = torch.rand(4)  # as if nothing had run in between
    for draw in draws:
        assert torch.equal(draw, expected)


_KEYS = """
import json
from attention_src.machinery import cache_key
from attention_src.scaling import saturation_sweep, variance_sweep
print(json.dumps({
    "saturation": cache_key("s", {}, saturation_sweep),
    "variance": cache_key("v", {}, variance_sweep),
}))
"""


def _keys_of(package_root) -> dict[str, str]:
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(package_root), CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, "-c", _KEYS],
        cwd=package_root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def test_keys_follow_the_code_the_experiment_reaches(tmp_path):
    """Edit softmax (called by saturation_sweep through two other functions, never
    named in a list) in a temporary copy of the package: the sweep's key changes,
    the variance sweep, which cannot reach softmax, keeps its key; a comment or a
    docstring changes nothing."""
    import shutil
    from pathlib import Path

    source = Path(cache.__file__).resolve().parents[1]
    copy = tmp_path / "attention_src"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert "softmax.softmax" in " ".join(cache.reachable_code(saturation_sweep()))
    before = _keys_of(tmp_path)

    softmax_py = copy / "softmax.py"
    text = softmax_py.read_text(encoding="utf-8")
    cosmetic = text.replace("    check_floating(", "    # a comment\n    check_floating(", 1)
    cosmetic = cosmetic.replace('"""Numerically stable', '"""Reworded: numerically stable', 1)
    assert cosmetic != text
    softmax_py.write_text(cosmetic, encoding="utf-8")
    assert _keys_of(tmp_path) == before

    edited = text.replace("return (e / total).to(x.dtype)", "return (e / total * 1).to(x.dtype)")
    assert edited != text, "the line to edit was not found in softmax.py"
    softmax_py.write_text(edited, encoding="utf-8")
    after = _keys_of(tmp_path)
    assert after["saturation"] != before["saturation"]
    assert after["variance"] == before["variance"]


def saturation_sweep():
    from attention_src.scaling import saturation_sweep as sweep

    return sweep


def test_experiments_defined_outside_the_package_are_keyed_on_their_code():
    from attention_src.softmax import softmax

    def page_experiment(n):
        return softmax(torch.ones(n))

    def other_experiment(n):
        return torch.ones(n)

    reached = cache.reachable_code(page_experiment)
    assert "attention_src.softmax.softmax" in reached
    assert "attention_src.softmax.softmax" not in cache.reachable_code(other_experiment)
    assert cache.cache_key("e", {}, page_experiment) != cache.cache_key("e", {}, other_experiment)


def test_files_and_packages_are_part_of_the_key(tmp_path):
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"one")
    first = cache.cache_key("e", {}, _experiment, files=[weights])
    weights.write_bytes(b"two")
    assert cache.cache_key("e", {}, _experiment, files=[weights]) != first
    assert cache.cache_key("e", {}, _experiment, packages=["numpy"]) != cache.cache_key(
        "e", {}, _experiment
    )


# ------------------------------------------------- where results go, and the size rule

_OVER_LIMIT = 12_500_001  # float32 elements: 50,000,004 bytes, just over 50 MB


def _large(n: int):
    _large.calls += 1
    return {"weights": torch.zeros(n), "name": "large"}


_large.calls = 0


def test_reader_default_is_the_users_cache_folder(tmp_path, monkeypatch):
    """Nothing set: the platform's user cache folder (``~/.cache/attention_src`` on
    Linux, or under ``$XDG_CACHE_HOME``), never the current directory."""
    import sys
    from pathlib import Path

    import platformdirs

    monkeypatch.delenv("ATTENTION_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    expected = Path(platformdirs.user_cache_dir("attention_src", appauthor=False))
    assert cache.cache_dir() == expected
    if sys.platform == "linux":
        assert cache.cache_dir() == tmp_path / ".cache" / "attention_src"
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert cache.cache_dir() == tmp_path / "xdg" / "attention_src"


def test_explicit_folder_and_off_override_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_CACHE_DIR", str(tmp_path / "build"))
    assert cache.cache_dir() == tmp_path / "build"
    for off in ("off", "OFF", "0", "none", ""):
        monkeypatch.setenv("ATTENTION_CACHE_DIR", off)
        assert cache.cache_dir() is None, off


def _reader_default(tmp_path, monkeypatch):
    """ATTENTION_CACHE_DIR unset; the user's cache folder is ``tmp_path/user``, and
    the current directory is ``tmp_path`` (so a file written there is seen too)."""
    import platformdirs

    monkeypatch.delenv("ATTENTION_CACHE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "user"
    monkeypatch.setattr(platformdirs, "user_cache_dir", lambda *a, **k: str(folder))
    return folder


def test_reader_default_keeps_a_small_result(tmp_path, monkeypatch):
    folder = _reader_default(tmp_path, monkeypatch)
    _experiment.calls = 0
    first = cache.cached("exp", {"n": 4}, _experiment)
    second = cache.cached("exp", {"n": 4}, _experiment)
    assert _experiment.calls == 1
    torch.testing.assert_close(first["values"], second["values"])
    assert len(list(folder.glob("exp-*.pt"))) == 1


def test_reader_default_returns_a_result_over_50_mb_but_never_writes_it(tmp_path, monkeypatch):
    _reader_default(tmp_path, monkeypatch)
    _large.calls = 0
    monkeypatch.setattr(cache_module, "_IN_MEMORY", {})  # a fresh interpreter
    for _ in range(2):
        result = cache.cached("large", {"n": _OVER_LIMIT}, _large)
        assert result["weights"].shape == (_OVER_LIMIT,)
        assert result["name"] == "large"
        assert float(result["weights"].sum()) == 0.0  # the edit below never comes back
        result["weights"][0] = 1.0
    assert _large.calls == 1  # kept in memory for the interpreter's life
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    monkeypatch.setattr(cache_module, "_IN_MEMORY", {})  # the next interpreter computes it again
    cache.cached("large", {"n": _OVER_LIMIT}, _large)
    assert _large.calls == 2


def _small_view_of_a_large_tensor():
    return {"head": torch.zeros(_OVER_LIMIT)[:10]}  # torch.save writes the whole storage


def test_the_size_counts_what_torch_save_writes(tmp_path, monkeypatch):
    """A 40-byte view of a 50 MB storage is 50 MB on disk: not written."""
    _reader_default(tmp_path, monkeypatch)
    result = cache.cached("view", {}, _small_view_of_a_large_tensor)
    assert result["head"].shape == (10,)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_folder_named_explicitly_keeps_results_of_any_size(tmp_path, monkeypatch):
    """The build names its folder and needs the large entry (SmolLM2's weights)."""
    monkeypatch.setenv("ATTENTION_CACHE_DIR", str(tmp_path))
    _large.calls = 0
    cache.cached("large", {"n": _OVER_LIMIT}, _large)
    cache.cached("large", {"n": _OVER_LIMIT}, _large)
    assert _large.calls == 1
    (path,) = tmp_path.glob("large-*.pt")
    assert path.stat().st_size > 50_000_000
