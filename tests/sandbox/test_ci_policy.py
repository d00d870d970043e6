"""A missing bubblewrap or Docker engine skips the tests that need it, saying why; under
CI (``CI=true``, set by .ci/run, which installs both) it fails them, so CI cannot pass by
skipping."""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import missing


def test_locally_a_missing_tool_skips_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Docker engine"):
        missing("no Docker engine")


def test_under_ci_a_missing_tool_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"no Docker engine \(CI=true"):
        missing("no Docker engine")
