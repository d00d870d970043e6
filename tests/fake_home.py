"""A home directory holding the usual credential files, for the hostile-input specs of the
sandboxes and the confined MCP servers. It lives outside ``/tmp`` (bubblewrap's ``/tmp`` is
private anyway, which would hide a home under it for the wrong reason)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

CREDENTIALS = {
    ".ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY----- fake-ssh-key",
    ".aws/credentials": "[default]\naws_secret_access_key = fake-aws-secret",
    ".netrc": "machine example.com login me password fake-netrc-password",
    ".docker/config.json": '{"auths": {"registry": {"auth": "fake-docker-auth"}}}',
    ".config/gh/hosts.yml": "github.com:\n  oauth_token: fake-gh-token",
}
"""Credential files by path under the home directory; every secret starts ``fake-``."""


@contextlib.contextmanager
def fake_home() -> Iterator[Path]:
    """The home directory, with :data:`CREDENTIALS` and a ``project/README``; removed after."""
    root = Path(tempfile.mkdtemp(prefix="conclave-home-", dir="/var/tmp")).resolve()
    try:
        for name, secret in CREDENTIALS.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(secret)
        (root / "project").mkdir()
        (root / "project" / "README").write_text("the project's readme\n")
        yield root
    finally:
        shutil.rmtree(root)
