# SPDX-License-Identifier: MIT
"""Ctrl-C held back while umtorch holds regions in a step.

A KeyboardInterrupt is raised between any two Python bytecodes. Inside a
step that would be between an acquire and the note that it was made, or
between an acquire ahead handed to another thread and the wait for it: a
region left acquired for good (close() then says EBUSY, and libum reports
the leak at exit). So while a step runs, SIGINT is only recorded; the
step stops at the next bucket boundary (interrupted()), puts everything
back, and the signal is raised again for the handler that was there,
which does what it would have done (the default one raises
KeyboardInterrupt from step()).

Only the main thread receives signals, so elsewhere this does nothing.
A handler that is not Python's (SIG_IGN, SIG_DFL, one a C library set) is
left alone: what it does is not ours to defer.
"""

import contextlib
import inspect
import signal
import threading

_HELD = threading.local()


def interrupted():
    """Whether a SIGINT arrived while held (the step should stop)."""
    return bool(getattr(_HELD, "pending", None))


@contextlib.contextmanager
def held():
    """Record SIGINT instead of raising for the with block; raise it
    again, to the handler that was there, when the block ends. Nested
    blocks are the outer one's."""
    if threading.current_thread() is not threading.main_thread() or \
            getattr(_HELD, "pending", None) is not None:
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    if not callable(before):
        yield
        return
    pending = _HELD.pending = []
    signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
        _HELD.pending = None
        if pending:	# here, not at some later bytecode
            before(signal.SIGINT, inspect.currentframe())
