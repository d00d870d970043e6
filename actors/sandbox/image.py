"""The sandbox image: a busybox root filesystem imported into the local engine, never pulled.

A few MB, built in about a second from the host's static busybox (``busybox-static`` on
Debian/Ubuntu), so nothing is fetched from a registry and the image is the same on every
machine with the same busybox.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import docker
import docker.errors
from docker.utils import parse_repository_tag

from conclave.actors.sandbox.protocol import SandboxUnavailable

__all__ = ["DEFAULT_IMAGE", "build_image", "find_busybox", "image_present"]

DEFAULT_IMAGE = "conclave-sandbox:latest"

_BUSYBOX_HELP = (
    "install a static busybox (`apt-get install busybox-static`), or pass its path with --busybox"
)

_PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"
_GROUP = "root:x:0:\nnogroup:x:65534:\n"


def find_busybox() -> Path:
    """The host's busybox binary; raises :class:`SandboxUnavailable` if there is none."""
    found = shutil.which("busybox")
    if found is None:
        raise SandboxUnavailable(f"busybox is not installed; {_BUSYBOX_HELP}")
    return Path(found).resolve()


def _is_static(binary: Path) -> bool:
    """A dynamically linked busybox would need the host's libc inside the image."""
    with binary.open("rb") as f:
        head = f.read(4096)
    return b"/lib" not in head and b"ld-linux" not in head


def _rootfs(busybox: Path, root: Path) -> None:
    """Lay out a minimal root: every applet hard-linked into /bin (so the tar stays the size
    of one busybox), the usual directories pointing there, /tmp, and an /etc/passwd."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy2(busybox, bin_dir / "busybox")
    subprocess.run(
        [str(bin_dir / "busybox"), "--install", str(bin_dir)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    (root / "usr").mkdir()
    for link, target in (("sbin", "bin"), ("usr/bin", "../bin"), ("usr/sbin", "../bin")):
        (root / link).symlink_to(target)
    for directory in ("etc", "root", "home", "proc", "sys", "dev"):
        (root / directory).mkdir()
    (root / "tmp").mkdir(mode=0o1777)
    os.chmod(root / "tmp", 0o1777)
    (root / "etc" / "passwd").write_text(_PASSWD)
    (root / "etc" / "group").write_text(_GROUP)


def build_image(
    client: docker.DockerClient, *, tag: str = DEFAULT_IMAGE, busybox: Path | None = None
) -> str:
    """Build ``tag`` from a busybox root filesystem with ``docker import``; returns the image
    id. Blocking: run it in a thread. The tarball is sent as data, so the engine never
    fetches anything."""
    binary = (busybox or find_busybox()).resolve()
    if not binary.is_file():
        raise SandboxUnavailable(f"{binary} is not a file; {_BUSYBOX_HELP}")
    if not _is_static(binary):
        raise SandboxUnavailable(f"{binary} is dynamically linked; {_BUSYBOX_HELP}")
    repository, version = parse_repository_tag(tag)
    with tempfile.TemporaryDirectory(prefix="conclave-image-") as tmp:
        root = Path(tmp) / "rootfs"
        _rootfs(binary, root)
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            for entry in sorted(root.iterdir()):
                tar.add(entry, arcname=entry.name)
        with archive.open("rb") as data:
            client.api.import_image(
                src=data,
                repository=repository,
                tag=version or "latest",
                changes=['CMD ["/bin/sh"]', "LABEL conclave.image=sandbox"],
            )
    image = client.images.get(tag)
    return str(image.id)


def image_present(client: docker.DockerClient, tag: str = DEFAULT_IMAGE) -> bool:
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True
