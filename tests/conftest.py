"""The whole suite runs on xdist workers (pyproject's addopts, ``--dist loadgroup``); specs
that must not overlap share an ``xdist_group``, which keeps them on one worker."""

from __future__ import annotations

import pytest


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
