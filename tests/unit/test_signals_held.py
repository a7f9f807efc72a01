"""Ctrl-C and SIGTERM held while a trial is created and named, then delivered (automil.tune.workers.processes)."""

import signal

import pytest

from automil.tune.workers.processes import signals_held


@pytest.fixture
def sigint():
    """Sets SIGINT's handler for the test (a test run may start with it ignored) and restores it."""
    previous = signal.getsignal(signal.SIGINT)
    yield lambda handler: signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGINT, previous)


def test_a_signal_inside_the_block_is_held_and_the_handlers_come_back(sigint):
    sigint(signal.default_int_handler)  # Python's Ctrl-C
    with signals_held() as held:
        signal.raise_signal(signal.SIGINT)  # a real signal to this process
        reached = True
    assert reached and held == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(held[0])  # delivered when the caller can act on it


def test_a_signal_this_process_ignores_stays_ignored(sigint):
    sigint(signal.SIG_IGN)
    with signals_held() as held:
        signal.raise_signal(signal.SIGINT)
    assert held == [] and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
