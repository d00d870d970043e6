"""The whole suite runs on xdist workers (pyproject's addopts, ``--dist loadgroup``); specs
that must not overlap share an ``xdist_group``, which keeps them on one worker."""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl+C stays Ctrl+C for the commands the specs start, however the suite was started:
    one started in the background (``nohup``, ``&`` in a script) has SIGINT ignored, every
    process it starts inherits that, and a ``conclave`` still starting up (before it
    handles SIGINT itself) would then sit out the specs' SIGINT."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A spec marked ``xdist_group`` fails if ``--dist loadgroup`` did not group it. xdist
    marks a grouped spec by its node id, which pytest 9.2 no longer lets it change (xdist
    issue #1386): the groups would be ignored without a word, and the specs flake."""
    grouped = item.get_closest_marker("xdist_group") is not None
    if grouped and getattr(item.config.option, "loadgroup", False) and "@" not in item.nodeid:
        pytest.fail(
            "--dist loadgroup did not put this spec in its xdist_group: this pytest-xdist "
            "cannot group under this pytest; pip install -e '.[dev]' installs a pytest it can"
        )


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on the host's loopback that accepts connections (for specs showing a
    sandboxed command or server cannot reach it)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
