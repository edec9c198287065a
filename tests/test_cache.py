"""attention_src.cache: results are reused for the same code and settings, recomputed otherwise."""

from __future__ import annotations

import torch

from attention_src import cache


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
