"""The SDKs are imported only when a config uses them: together they cost over a second and
60 MB to import, which a scripted run (demos, tests, load benchmarks) must never pay."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SDKS = ("openai", "anthropic", "httpx2")


def _loaded_after(tmp_path: Path, code: str) -> list[str]:
    """The SDK modules loaded by a fresh interpreter after running ``code``."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {SDKS!r} if m in sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = eval(done.stdout.splitlines()[-1])
    return loaded


def test_a_scripted_run_imports_no_sdk(tmp_path: Path) -> None:
    code = (
        "from conclave.ui.cli import main\n"
        "assert main(['run', '--agents', '2', 'Name a colour']) == 0\n"
    )
    assert _loaded_after(tmp_path, code) == []


def test_loading_a_config_that_names_both_sdks_imports_neither(tmp_path: Path) -> None:
    code = (
        "from conclave.config.loader import parse_config\n"
        "parse_config({'agents': [\n"
        "    {'id': 'a', 'backend': {'type': 'openai', 'model': 'm'}},\n"
        "    {'id': 'b', 'backend': {'type': 'anthropic', 'model': 'm'}},\n"
        "]})\n"
    )
    assert _loaded_after(tmp_path, code) == []


def test_a_pool_imports_an_sdk_when_an_agent_uses_it(tmp_path: Path) -> None:
    code = (
        "import trio\n"
        "from conclave.actors.llm.pool import open_backends\n"
        "from conclave.config.loader import parse_config\n"
        "config = parse_config({'agents': [\n"
        "    {'id': 'a', 'backend': {'type': 'anthropic', 'model': 'm', 'api_key': 'k'}},\n"
        "]})\n"
        "async def main() -> None:\n"
        "    async with open_backends() as pool:\n"
        "        await pool.backend(config.agents[0])\n"
        "trio.run(main)\n"
    )
    assert _loaded_after(tmp_path, code) == ["anthropic", "httpx2"]


def test_a_pool_for_an_openai_agent_imports_no_sdk_only_the_http_client(tmp_path: Path) -> None:
    # The openai backend speaks Chat Completions over httpx2 itself (actors/llm/chat_wire.py):
    # the SDK's import was half a second before the first request could leave.
    code = (
        "import trio\n"
        "from conclave.actors.llm.pool import open_backends\n"
        "from conclave.config.loader import parse_config\n"
        "config = parse_config({'agents': [\n"
        "    {'id': 'a', 'backend': {'type': 'openai', 'model': 'm', 'api_key': 'k'}},\n"
        "]})\n"
        "async def main() -> None:\n"
        "    async with open_backends() as pool:\n"
        "        await pool.backend(config.agents[0])\n"
        "trio.run(main)\n"
    )
    assert _loaded_after(tmp_path, code) == ["httpx2"]


def _transport_loaded(tmp_path: Path, module: str, **environ: str) -> bool:
    """Whether importing ``module`` (with ``environ`` added) imports httpx2's transport."""
    probe = f"import sys\nimport {module}\nprint('httpcore2' in sys.modules)\n"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **environ},
    )
    assert done.returncode == 0, done.stderr
    return bool(done.stdout.split() == ["True"])


NO_PROXY = {v: "" for v in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
NO_PROXY |= {v.lower(): "" for v in NO_PROXY}


def test_the_openai_backend_without_a_proxy_never_imports_httpx2s_transport(
    tmp_path: Path,
) -> None:
    # Its requests go out on connections of its own (actors/llm/http1.py).
    assert not _transport_loaded(tmp_path, "conclave.actors.llm.openai_backend", **NO_PROXY)


def test_the_openai_backend_behind_a_proxy_imports_httpx2s_transport_with_itself(
    tmp_path: Path,
) -> None:
    # httpx2 would import it at its first client: during a run, as the first request left.
    proxied = {**NO_PROXY, "HTTPS_PROXY": "http://proxy.invalid:3128"}
    assert _transport_loaded(tmp_path, "conclave.actors.llm.openai_backend", **proxied)


def test_the_anthropic_backend_imports_httpx2s_transport_with_itself(tmp_path: Path) -> None:
    assert _transport_loaded(tmp_path, "conclave.actors.llm.anthropic_backend", **NO_PROXY)
