"""The commands on docs/contributing.md run.

Every line of every ```` ```bash ```` block of the page is one command (a comment
may follow ``#``; a line ending in ``\\`` is refused, so that a line is always a
whole command). A line ``export NAME=value`` is not a command: it sets the
environment of the commands after it in its block, as it would in the reader's
shell.

Each command is classified here, and a command on the page that is not fails
the test -- so a new command cannot slip onto the page unchecked, and a listed
command that left the page must leave these lists too:

- ``AS_WRITTEN``: run as the page writes it, from the repository root;
- ``INSTEAD``: too slow in full, so a cheaper variant documented on the page
  runs in its place (each entry says which, and why it stands in);
- ``ON_THE_BUILT_SITE``: reads ``site/``; runs against the session's strict
  build (the ``built_site`` fixture, which ``test_build.py`` and
  ``test_codeblocks.py`` share) instead of a ``site/`` folder in the tree;
- ``NOT_RUN``: must not run inside the test suite, each with the reason.

``./dev.sh test ARGS`` is set-up, ``ruff check .``, ``ruff format --check .``,
then ``pytest ARGS``, and ``./dev.sh test --fast ARGS`` the same with the fast
tier's marker expression before ARGS (:func:`test_dev_sh_test_is_ruff_then_pytest`
checks that ``dev.sh`` still runs exactly that). Here it runs as ``pytest ARGS``: the two
ruff commands are on the page and run as written (once, not once per
``./dev.sh test`` line), and set-up is left out because the suite runs after
it (``./dev.sh test`` and ``.ci/run`` set up first) and because, where
``pyproject.toml`` changed, it reinstalls the project with pip. ``.venv/bin/`` stands for the
folder of the interpreter running the tests (``$VENV/bin`` of ``dev.sh``).
Nested pytest runs get their own temporary root, so they never clean up this
session's folders.

Runtime: about 30 s for the commands on an idle two-core machine (more while
other builds share the cores), plus a few seconds on the built site. The build
itself is shared with the other site tests; run on its own, this file waits the
2-4 minutes of the build (``-k "not built_site"`` leaves that test out).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "contributing.md"
BIN = Path(sys.executable).parent
TIMEOUT = 180  # seconds per command; they take 1-15 s

AS_WRITTEN = {
    "./dev.sh test tests/test_house_rules.py",
    "./dev.sh test tests/site/test_diagrams.py tests/site_tools/test_numbering.py",
    "./dev.sh test tests/lessons/test_masks.py",
    "./dev.sh test tests/site/test_codeblocks.py -k masks --co -q",
    ".venv/bin/ruff check .",
    ".venv/bin/ruff format --check .",
    ".venv/bin/python -m attention_src.bench --help",
    ".venv/bin/python -m site_tools.edition stale",
    ".venv/bin/python -m site_tools.edition check chapters/masks.md",
}

# One test file of each tier, collected (not run) to check what a tier selects.
ONE_OF_EACH = (
    "tests/lessons/test_masks.py tests/site/test_build.py tests/browser/test_render.py --co -q"
)

INSTEAD = {
    "./dev.sh test --fast": (
        f"./dev.sh test --fast {ONE_OF_EACH}",
        "the fast tier takes minutes; collecting it from one file of each tier (further "
        "arguments go to pytest, as the page says) checks that it selects the package's "
        "tests and none of the site's",
    ),
    "./dev.sh test -m docs": (
        f"./dev.sh test -m docs {ONE_OF_EACH}",
        "the docs tier builds the site, as this suite does; collecting it from one file "
        "of each tier checks that it selects the site's tests and no other",
    ),
    "./dev.sh test -m browser": (
        f"./dev.sh test -m browser {ONE_OF_EACH}",
        "the browser tier opens every page in Chromium, as this suite does; collecting "
        "it from one file of each tier checks that it selects the browser's tests only",
    ),
    ".venv/bin/python -m attention_src.bench --quick --out .cache/bench-quick.json": (
        ".venv/bin/python -m attention_src.bench --quick --sections attention "
        "--sizes 16 --reps 1 --matmul-n 64 --max-wait-s 0 --out {tmp}/bench-quick.json",
        "the quick run takes up to a minute; the same command narrowed with the "
        "options the page names (--sections and the sizes, see --help) runs the "
        "same code path in seconds, and writes to a temporary folder",
    ),
    "./dev.sh test tests/site/test_codeblocks.py -k masks": (
        "./dev.sh test tests/site/test_codeblocks.py -k masks --co -q",
        "it builds the site and runs every page's copies (minutes) -- the work "
        "test_codeblocks.py does in this very suite; collecting it checks that "
        "-k masks selects what the page says",
    ),
}

ON_THE_BUILT_SITE = {
    ".venv/bin/python -m site_tools.engine.copyrun site/_copies/chapters--masks.json",
}

# The checklist of "Adding a chapter" scaffolds and checks a new chapter: run on the
# working tree it would add one. tests/site/test_new_chapter.py runs these lines, the
# page's two blocks, in a scratch copy of the repository.
NEW_CHAPTER = (
    "adds a chapter to the working tree: tests/site/test_new_chapter.py runs the "
    "checklist's blocks in a scratch copy of the repository"
)
NOT_RUN = {
    "cp templates/chapter.md docs/chapters/$STEM.md": NEW_CHAPTER,
    "cp templates/diagram.svg diagrams/$STEM.svg": NEW_CHAPTER,
    "cp templates/lesson.py attention_src/$MODULE.py": NEW_CHAPTER,
    "cp templates/test_lesson.py tests/lessons/test_$MODULE.py": NEW_CHAPTER,
    **{
        f'sed -i "$SUBST" {path}': NEW_CHAPTER
        for path in (
            "docs/chapters/$STEM.md",
            "diagrams/$STEM.svg",
            "attention_src/$MODULE.py",
            "tests/lessons/test_$MODULE.py",
        )
    },
    "./dev.sh test --fast tests/test_house_rules.py tests/lessons/test_$MODULE.py": NEW_CHAPTER,
    './dev.sh test tests/site/test_codeblocks.py -k "fences and $STEM"': NEW_CHAPTER,
    ".venv/bin/python -m site_tools.engine.copyrun site/_copies/chapters--$STEM.json": NEW_CHAPTER,
    "./dev.sh serve": "serves until stopped",
    "./dev.sh serve zh": "serves until stopped",
    "./dev.sh build": (
        "builds both editions into site/: the built_site and built_site_zh fixtures "
        "(tests/site/build.py) run the same two strict builds once per session"
    ),
    ".venv/bin/python -m site_tools.edition placeholder chapters/$STEM.md": NEW_CHAPTER,
    "./dev.sh test": "the whole suite, which this test is part of (recursion)",
    "python3 -m venv --system-site-packages .venv": (
        "set-up, not a check: it would rewrite the environment the suite runs in"
    ),
    ".venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu": (
        "a pip install: needs the network and changes the environment"
    ),
    "NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict": (
        "the strict build is what the built_site fixture (tests/site/build.py) "
        "runs, into a temporary folder, once per session; test_build.py checks it"
    ),
    ".venv/bin/python -m site_tools.engine.copyrun site/_copies/*.json": (
        "every page: test_codeblocks.py runs the same files through the same "
        "site_tools.engine.copyrun.run_page"
    ),
    ".venv/bin/python -m site_tools.engine.copyrun --device cuda site/_copies/*.json": (
        "every page on CUDA: test_codeblocks.py's cuda run does it where a GPU is "
        "present (the GPU workflow's runner)"
    ),
    ".venv/bin/python -m attention_src.bench --out docs/data/benchmark-cpu.json": (
        "the full benchmark: over ten minutes, and it rewrites the committed results"
    ),
}

# What the page says a command shows; checked in its output.
SHOWS = {
    "./dev.sh test tests/site/test_codeblocks.py -k masks --co -q": [
        "test_what_the_reader_copies_runs[cpu-chapters/masks.md]",
        "test_what_the_reader_copies_runs[cuda-chapters/masks.md]",
        "test_fences_are_written_so_that_the_build_sees_them[chapters/masks.md]",
        "test_figure_captions_and_alt_texts_are_prose_not_code[chapters/masks.md]",
        "4/",  # "4/N tests collected": those four and nothing else
    ],
    ".venv/bin/python -m attention_src.bench --help": ["--quick", "--out", "--sections"],
    ".venv/bin/python -m site_tools.edition check chapters/masks.md": ["no problems"],
    ".venv/bin/python -m site_tools.engine.copyrun site/_copies/chapters--masks.json": [
        " passed, 0 failed"
    ],
    f"./dev.sh test --fast {ONE_OF_EACH}": [
        "tests/lessons/test_masks.py::",
        "deselected",
    ],
    f"./dev.sh test -m docs {ONE_OF_EACH}": [
        "tests/site/test_build.py::",
        "deselected",
    ],
    f"./dev.sh test -m browser {ONE_OF_EACH}": [
        "tests/browser/test_render.py::",
        "deselected",
    ],
}
# What no line of a command's output may start with (each tier selects only its own tests).
NOT_SHOWN = {
    f"./dev.sh test --fast {ONE_OF_EACH}": ["tests/site/", "tests/browser/"],
    f"./dev.sh test -m docs {ONE_OF_EACH}": [
        "tests/lessons/",
        "tests/browser/test_render.py::",
    ],
    f"./dev.sh test -m browser {ONE_OF_EACH}": [
        "tests/lessons/",
        "tests/site/test_build.py::",
    ],
}

DEV_SH_TEST = re.compile(r"^\./dev\.sh test(?P<fast> --fast)?(?P<args>( .+)?)$")
FAST = '-m "not docs and not browser"'  # what --fast adds (dev.sh; the tiers: tests/conftest.py)
EXPORT = re.compile(r"^export (?P<name>[A-Z_][A-Z0-9_]*)=(?P<value>\S*)$")


def page_commands(text: str) -> list[tuple[str, dict[str, str]]]:
    """``(command, exported environment)`` for each command line of the page's
    top-level ```bash blocks, comments removed and spaces collapsed."""
    commands = []
    inside = None  # the fence that closes the current block
    is_bash = False
    env: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fence = re.match(r"^(`{3,})(.*)$", line)
        if inside is None:
            if fence:
                inside, is_bash, env = fence[1], fence[2].strip() == "bash", {}
            continue
        if fence and line.strip() == inside:
            inside = None
            continue
        if not is_bash:
            continue
        command = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not command:
            continue
        assert not command.endswith("\\"), f"line {number}: one command per line, please"
        if exported := EXPORT.match(command):
            env[exported["name"]] = exported["value"]
            continue
        commands.append((" ".join(command.split()), dict(env)))
    return commands


COMMANDS = page_commands(PAGE.read_text(encoding="utf-8"))


def here(command: str) -> str:
    """The command as a shell line for this interpreter's environment."""
    match = DEV_SH_TEST.match(command)
    if match:  # set-up and ruff left out: see the module's docstring
        fast = f" {FAST}" if match["fast"] else ""
        command = f".venv/bin/python -m pytest{fast}{match['args'] or ''}"
    return command.replace(".venv/bin/", shlex.quote(str(BIN)) + "/")


_OUTPUTS: dict[tuple[str, tuple], str] = {}  # a shell line already run: its output


def run(command: str, env: dict[str, str], tmp_path: Path, replace=None) -> str:
    """Run the command as :func:`here` writes it (once per session: a cheaper
    variant that is also on the page as written is not run twice)."""
    shell = here(command)
    for old, new in (replace or {}).items():
        shell = shell.replace(old, new)
    key = (shell, tuple(sorted(env.items())))
    if key in _OUTPUTS:
        return _OUTPUTS[key]
    environment = dict(os.environ, **env, PYTEST_DEBUG_TEMPROOT=str(tmp_path))
    proc = subprocess.run(
        ["bash", "-c", shell],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{command!r} (run as {shell!r}) failed:\n{output[-4000:]}"
    _OUTPUTS[key] = output
    return output


def cases(listed) -> list:
    """The page's commands in ``listed``, as pytest parameters named by the command."""
    return [pytest.param(c, env, id=c) for c, env in COMMANDS if c in listed]


def test_every_command_on_the_page_is_run_or_excused():
    on_page = {command for command, _ in COMMANDS}
    assert on_page, "no ```bash commands found on docs/contributing.md"
    listed = [AS_WRITTEN, set(INSTEAD), ON_THE_BUILT_SITE, set(NOT_RUN)]
    unknown = sorted(on_page - set().union(*listed))
    assert not unknown, (
        "commands on docs/contributing.md that tests/site/test_contributing.py "
        f"neither runs nor lists with a reason: {unknown}"
    )
    stale = sorted(set().union(*listed) - on_page)
    assert not stale, f"listed here but no longer on the page: {stale}"
    for a in range(len(listed)):
        for b in range(a + 1, len(listed)):
            assert not listed[a] & listed[b], f"listed twice: {listed[a] & listed[b]}"
    assert all(reason.strip() for reason in NOT_RUN.values())
    assert all(variant and why.strip() for variant, why in INSTEAD.values())


def test_dev_sh_test_is_ruff_then_pytest():
    """What ``./dev.sh test ARGS`` runs: set-up, the two ruff commands of the
    page, then pytest with ARGS -- what ``here()`` relies on."""
    script = (ROOT / "dev.sh").read_text(encoding="utf-8")
    case = script[script.index("  test)") : script.index(";;", script.index("  test)"))]
    steps = [line.strip() for line in case.splitlines()[1:] if line.strip()]
    steps = [s for s in steps if not s.startswith(("echo", "#"))]
    assert steps == [
        "setup",
        'if [ "${2:-}" = --fast ]; then',
        f'set -- test {FAST} "${{@:3}}"',
        "else",
        "install_browser",
        "fi",
        '"$VENV/bin/ruff" check .',
        '"$VENV/bin/ruff" format --check .',
        "workers=$(nproc 2>/dev/null || echo 2)",
        'if [ "$workers" -gt 4 ]; then workers=4; fi',
        'exec "$VENV/bin/python" -m pytest -n "$workers" --dist loadscope --no-loadscope-reorder '
        '"${@:2}"',
    ], steps
    assert {".venv/bin/ruff check .", ".venv/bin/ruff format --check ."} <= AS_WRITTEN


@pytest.mark.parametrize(("command", "env"), cases(AS_WRITTEN))
def test_command_runs_as_written(command, env, tmp_path):
    output = run(command, env, tmp_path)
    for expected in SHOWS.get(command, []):
        assert expected in output, f"{command!r} should show {expected!r}:\n{output[-3000:]}"


@pytest.mark.parametrize(("command", "env"), cases(INSTEAD))
def test_cheaper_variant_runs(command, env, tmp_path):
    variant, _why = INSTEAD[command]
    output = run(variant.format(tmp=tmp_path), env, tmp_path)
    for expected in SHOWS.get(variant, []):
        assert expected in output, f"{variant!r} should show {expected!r}:\n{output[-3000:]}"
    for unexpected in NOT_SHOWN.get(variant, []):
        wrong = [line for line in output.splitlines() if line.startswith(unexpected)]
        assert not wrong, f"{variant!r} should select no {unexpected!r}: {wrong[:5]}"


@pytest.mark.parametrize(("command", "env"), cases(ON_THE_BUILT_SITE))
def test_command_runs_on_the_built_site(command, env, tmp_path, built_site):
    output = run(command, env, tmp_path, {" site/": f" {shlex.quote(str(built_site.dir))}/"})
    for expected in SHOWS.get(command, []):
        assert expected in output, f"{command!r} should show {expected!r}:\n{output[-3000:]}"
