"""The live models once per site: the Chinese edition, built inside the English one,
loads the English edition's MiniLM export instead of holding a second 45 MB copy
(site_tools.outputs.live_models.english_copy); built alone, it keeps its own."""

from __future__ import annotations

import json
from pathlib import Path

from site_tools.outputs import live_models

PAGE = (
    '<div class="live-minilm" data-live-model="../../assets/live/minilm/model.json" '
    'data-live-bytes="" data-live-first="a">\n</div>'
)


def _export(folder: Path, key: str) -> Path:
    folder.mkdir(parents=True)
    manifest = {"weights": f"weights-{key}.bin", "bytes": 12, "vocab_bytes": 3}
    (folder / "model.json").write_text(json.dumps(manifest))
    (folder / f"weights-{key}.bin").write_bytes(b"w" * 12)
    (folder / "vocab.txt").write_text("a\nb")
    return folder


def test_the_chinese_edition_uses_the_english_copy_only_when_it_is_the_same(tmp_path, monkeypatch):
    ours = _export(tmp_path / "cache", "k1")
    monkeypatch.setattr(live_models, "minilm_export", lambda: ours)
    site = tmp_path / "site"
    zh = site / "zh"
    zh.mkdir(parents=True)
    assert live_models.english_copy(zh) is None  # no English edition around it
    english = _export(site / live_models.MINILM_DIR, "k1")
    assert live_models.english_copy(zh) == english.resolve()
    (english / "weights-k1.bin").write_bytes(b"w" * 11)  # a damaged copy
    assert live_models.english_copy(zh) is None
    (english / "weights-k1.bin").write_bytes(b"w" * 12)
    (english / "model.json").write_text(json.dumps({"weights": "weights-k0.bin"}))
    assert live_models.english_copy(zh) is None  # another export (an older key)


def test_a_shared_copy_is_loaded_one_folder_up_and_not_written(tmp_path, monkeypatch):
    monkeypatch.setattr(live_models, "minilm_manifest", lambda: {"bytes": 12, "vocab_bytes": 3})
    alone = live_models.fill_sizes(PAGE)
    assert 'data-live-bytes="15"' in alone
    assert 'data-live-model="../../assets/live/minilm/model.json"' in alone
    shared = live_models.fill_sizes(PAGE, shared=True)
    assert 'data-live-model="../../../assets/live/minilm/model.json"' in shared
    assert shared.replace("../../../", "../../") == alone  # nothing else changed
    written = []
    monkeypatch.setattr(live_models, "write_minilm", lambda site: written.append(site) or [])
    import site_tools.outputs.live_small as small

    monkeypatch.setattr(small, "write_small_models", lambda site: [])
    stale = tmp_path / live_models.MINILM_DIR / "weights-old.bin"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"x")
    live_models.write_live_models(tmp_path, shared=True)
    assert written == [] and not stale.parent.exists()
    live_models.write_live_models(tmp_path)
    assert written == [tmp_path]
