"""Running the reader's code: seeded, quiet (what it prints is captured, not
shown), within a time limit per call, with dropout optionally switched off,
and with every torch call it makes optionally recorded."""

from __future__ import annotations

import contextlib
import io
import signal
import threading
import warnings
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode

from .lang import tr

__all__ = [  # the checker's own interface; its public one is attention_src.check's
    "CALL_LIMIT_S",
    "OUTPUT",
    "Event",
    "Recorder",
    "Timeout",
    "guarded",
    "call_quietly",
    "describe_error",
    "devices",
]

_DROPOUTS = {
    "dropout",
    "dropout_",
    "alpha_dropout",
    "feature_alpha_dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
}


@dataclass
class Event:
    """One torch call made by the reader's code."""

    name: str
    args: tuple
    kwargs: dict
    out: object


class Recorder(TorchFunctionMode):
    """Records every torch function and tensor method called inside it, and
    can turn dropout into the identity (``neutralize=True``), so that the
    other checks still run on code that leaves dropout on in ``eval()``."""

    def __init__(self, *, record: bool = True, neutralize: bool = False):
        super().__init__()
        self.record, self.neutralize = record, neutralize
        self.events: list[Event] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        if self.neutralize and name in _DROPOUTS:
            out = args[0] if args else kwargs["input"]
            return out
        if self.neutralize and name == "scaled_dot_product_attention":
            if len(args) > 4:
                args = (*args[:4], 0.0, *args[5:])
            kwargs["dropout_p"] = 0.0
        out = func(*args, **kwargs)
        if self.record:
            self.events.append(Event(name, tuple(args), kwargs, out))
        return out


CALL_LIMIT_S = 10.0  # seconds one call of the reader's code may take


class Timeout(BaseException):
    """A call of the reader's code ran past its time limit. A
    ``BaseException``, so that an ``except Exception`` in that code cannot
    swallow it and loop on."""


class _Output(io.TextIOBase):
    """Where the reader's code prints while it is checked: the lines are
    counted, and neither shown nor kept (pages of them cost nothing)."""

    def __init__(self):
        super().__init__()
        self.lines = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.lines += text.count("\n")
        return len(text)


OUTPUT = _Output()


@contextlib.contextmanager
def guarded(what: str, limit: float | None = None):
    """Run the reader's code: its prints go to ``OUTPUT``, and past
    ``limit`` seconds (default ``CALL_LIMIT_S``) it is interrupted with
    ``Timeout("WHAT did not return within N s")``. The limit needs the
    main thread (a signal); elsewhere ``call_quietly`` runs the reader's
    call in a worker thread and stops waiting for it instead, and an import
    or a constructor runs without a limit."""
    limit = CALL_LIMIT_S if limit is None else limit
    timed = limit > 0 and threading.current_thread() is threading.main_thread()
    message = tr(
        "{what} did not return within {limit:g} s (the time limit per call)",
        what=what,
        limit=limit,
    )

    def expire(signum, frame):
        raise Timeout(message)

    previous = signal.signal(signal.SIGALRM, expire) if timed else None
    if timed:
        signal.setitimer(signal.ITIMER_REAL, limit)
    quiet = contextlib.redirect_stdout(OUTPUT)
    try:
        with quiet, contextlib.redirect_stderr(OUTPUT):
            yield
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if previous is not None:  # None: a handler set outside Python
                signal.signal(signal.SIGALRM, previous)


def describe_error(error: BaseException) -> str:
    """``'RuntimeError: first line of the message'``, at most 160 chars."""
    lines = str(error).strip().splitlines()
    text = f"{type(error).__name__}: {lines[0] if lines else ''}".strip()
    return text if len(text) <= 160 else text[:157] + "..."


def devices() -> list[int]:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return list(range(torch.cuda.device_count()))
    return []


def call_quietly(
    fn,
    args,
    kwargs=None,
    *,
    seed: int = 0,
    neutralize: bool = False,
    recorder: Recorder | None = None,
    what: str | None = None,
    limit: float | None = None,
):
    """``(result, None)`` or ``(None, 'ErrorType: message')``.

    The global random state is seeded with ``seed`` for the call and restored
    afterwards; warnings from the reader's code are silenced, what it prints
    is captured. Past the time limit it raises ``Timeout`` naming ``what``.
    """
    mode = recorder or Recorder(record=False, neutralize=neutralize)
    what = tr("the call") if what is None else what
    with torch.random.fork_rng(devices=devices()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        limit = CALL_LIMIT_S if limit is None else limit

        def body():
            with mode:  # a torch function mode is per thread: entered where fn runs
                return fn(*args, **(kwargs or {}))

        try:
            main = threading.current_thread() is threading.main_thread()
            if limit > 0 and not main:
                with guarded(what, 0):  # quiet; the limit is the worker's join
                    return _in_worker(body, what, limit), None
            with guarded(what, limit):
                return body(), None
        except Exception as error:  # the reader's code may raise anything
            return None, describe_error(error)


def _in_worker(body, what: str, limit: float):
    """``body()`` in a daemon thread, waited for ``limit`` seconds: outside the
    main thread there is no SIGALRM, so a call that runs past the limit is
    left running in its thread and ``Timeout`` is raised here."""
    box = {}

    def target():
        try:
            box["out"] = body()
        except BaseException as error:  # handed over to the caller's thread
            box["error"] = error

    worker = threading.Thread(target=target, name="attention-check", daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        raise Timeout(
            tr(
                "{what} did not return within {limit:g} s "
                "(the time limit per call)",
                what=what,
                limit=limit,
            )
        )
    if "error" in box:
        raise box["error"]
    return box["out"]
