"""MassGen configs, converted to Conclave's: the pure half of ``conclave import massgen``.

:func:`convert_massgen` takes a MassGen config as loaded from YAML and returns Conclave's
config as plain data (ready to dump as YAML and to load with :mod:`config.loader`), with one
:class:`Note` for every key that changed meaning on the way and every key that was dropped.
No I/O here: reading, validating and writing the result is :mod:`ui.import_command`'s job.

What maps where (MassGen's documented YAML schema, ``docs/source/reference/yaml_schema.rst``):

- ``agent`` (one) or ``agents`` (a list): ``id``, ``system_message`` → ``system_prompt``.
- Backends that speak OpenAI's Chat Completions protocol (``chatcompletion``, ``vllm``,
  ``sglang``, ``lmstudio``, ``grok``, ``zai``, ``gemini``, ``azure_openai``, ...) → ``openai``
  with the provider's ``base_url`` and key variable; MassGen's ``openai`` type (the Responses
  API there) → ``openai`` (Chat Completions here); ``claude`` → ``anthropic``.
  ``claude_code`` and ``ag2`` agents are frameworks of their own and are dropped.
- ``orchestrator`` and ``timeout_settings``: the keys Conclave shares.
- A backend's ``mcp_servers`` (and the MCP tools its ``exclude_tools`` names) → the agent's
  ``mcp_servers`` (:mod:`config.massgen_mcp`).
- A backend's command-line execution (``enable_mcp_command_line``, ``command_line_*``: docker
  mode, its image, memory and network) → ``orchestrator.tools`` and ``orchestrator.sandbox``
  (:mod:`config.massgen_sandbox`).

- ``${cwd}``, in any value: MassGen's name for the directory it runs in, written as ``.``
  (a relative path is taken from the directory the run starts in; a protected path, from
  its context path), with a note.

Everything else (built-in provider tools, workspaces, UI and memory settings) has no Conclave
equivalent and is dropped, each with a note saying why.
"""

from __future__ import annotations

import enum
import posixpath
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from conclave.config.massgen_mcp import STDIO_ENVIRONMENT, convert_servers
from conclave.config.massgen_sandbox import (
    SANDBOX_KEYS,
    SandboxRequest,
    merge_requests,
    sandbox_request,
)
from conclave.config.schema.orchestrator import OrchestratorConfig

__all__ = [
    "AZURE_API_VERSION",
    "MASSGEN_CWD",
    "OPENAI_COMPATIBLE",
    "RUN_DIRECTORY",
    "Conversion",
    "MassGenError",
    "Note",
    "NoteKind",
    "convert_massgen",
]


class MassGenError(ValueError):
    """The input is not a MassGen config at all (nothing could be converted)."""


class NoteKind(enum.Enum):
    CHANGED = "changed"
    """Carried over, with a different name or meaning."""
    DROPPED = "dropped"
    """Not carried over: Conclave has no equivalent."""


@attrs.frozen(kw_only=True)
class Note:
    kind: NoteKind
    path: str
    """Where the key was in the MassGen config, e.g. ``agents[1].backend.mcp_servers``."""
    message: str

    def line(self) -> str:
        return f"{self.kind.value}: {self.path}: {self.message}"


@attrs.frozen(kw_only=True)
class Conversion:
    config: dict[str, Any]
    """Conclave's config as plain data, in the order a person would write it."""
    notes: tuple[Note, ...]


@attrs.frozen(kw_only=True)
class Provider:
    """A MassGen backend type that Conclave reaches through its ``openai`` backend."""

    base_url: str | None
    """``None``: MassGen requires ``base_url`` in the config (``chatcompletion``)."""
    key_env: str
    """The provider's standard environment variable for its key."""
    max_tokens: bool = False
    """Send the limit as ``max_tokens``: servers other than OpenAI's own know that name."""


OPENAI_COMPATIBLE: Mapping[str, Provider] = {
    "chatcompletion": Provider(base_url=None, key_env="OPENAI_API_KEY", max_tokens=True),
    "grok": Provider(base_url="https://api.x.ai/v1", key_env="XAI_API_KEY"),
    "zai": Provider(
        base_url="https://api.z.ai/api/paas/v4", key_env="ZAI_API_KEY", max_tokens=True
    ),
    "gemini": Provider(
        base_url="https://generativelanguage.googleapis.com/v1beta/openai/",
        key_env="GEMINI_API_KEY",
        max_tokens=True,
    ),
    "lmstudio": Provider(
        base_url="http://localhost:1234/v1", key_env="LMSTUDIO_API_KEY", max_tokens=True
    ),
    "vllm": Provider(base_url="http://localhost:8000/v1", key_env="VLLM_API_KEY", max_tokens=True),
    "sglang": Provider(
        base_url="http://localhost:30000/v1", key_env="SGLANG_API_KEY", max_tokens=True
    ),
    "ollama": Provider(
        base_url="http://localhost:11434/v1", key_env="OLLAMA_API_KEY", max_tokens=True
    ),
    "cerebras": Provider(
        base_url="https://api.cerebras.ai/v1", key_env="CEREBRAS_API_KEY", max_tokens=True
    ),
    "azure_openai": Provider(base_url=None, key_env="AZURE_OPENAI_API_KEY"),
}
"""MassGen's backend types that speak the Chat Completions protocol, and where they live."""

_KEY_BY_HOST = {
    "api.openai.com": "OPENAI_API_KEY",
    "api.x.ai": "XAI_API_KEY",
    "api.z.ai": "ZAI_API_KEY",
    "generativelanguage.googleapis.com": "GEMINI_API_KEY",
    "api.cerebras.ai": "CEREBRAS_API_KEY",
    "api.groq.com": "GROQ_API_KEY",
    "api.together.xyz": "TOGETHER_API_KEY",
    "api.fireworks.ai": "FIREWORKS_API_KEY",
    "openrouter.ai": "OPENROUTER_API_KEY",
    "api.deepseek.com": "DEEPSEEK_API_KEY",
    "api.moonshot.ai": "MOONSHOT_API_KEY",
    "dashscope-intl.aliyuncs.com": "DASHSCOPE_API_KEY",
    "dashscope.aliyuncs.com": "DASHSCOPE_API_KEY",
    "api.studio.nebius.ai": "NEBIUS_API_KEY",
}
"""A ``chatcompletion`` backend's provider, known by its host: its standard key variable."""

_FRAMEWORKS = {
    "claude_code": "a Claude Code agent runs its own tool loop and tools; Conclave drives "
    "every agent's loop itself. Re-create it as a 'claude' (anthropic) agent if you want it",
    "ag2": "an AG2 agent is a framework of its own; Conclave drives every agent's loop itself",
}

_BUILT_IN_TOOLS = (
    "provider built-in tools are not offered by Conclave's backends; Conclave's agents use "
    "their own tools"
)
_MCP_KEYS = ("mcp_servers", "exclude_tools")
"""Backend keys about MCP servers: they become the agent's ``mcp_servers``."""
_BACKEND_DROPS = {
    "allowed_tools": "it filters Claude Code's tools; Conclave's agents use their own tools",
    "disallowed_tools": "it filters Claude Code's tools; Conclave's agents use their own tools",
    "enable_web_search": _BUILT_IN_TOOLS,
    "enable_code_execution": _BUILT_IN_TOOLS,
    "enable_code_interpreter": _BUILT_IN_TOOLS,
    "cwd": "Conclave gives each agent its own workspace in every run",
    "text": "'text' (verbosity) belongs to OpenAI's Responses API; Conclave uses Chat Completions",
}
_SAMPLING = ("top_p", "top_k", "frequency_penalty", "presence_penalty", "seed", "stop")
"""Request fields MassGen passes through to the API: carried over in ``extra_body``."""

_ORCHESTRATOR_DROPS = {
    "snapshot_storage": "Conclave keeps workspaces and answer snapshots under each run's directory",
    "agent_temporary_workspace": "Conclave keeps workspaces and answer snapshots under each "
    "run's directory",
    "session_storage": "Conclave keeps each run under its own log directory",
    "context_paths": "context paths are not in Conclave's config yet",
    "voting_sensitivity": "Conclave's agents vote without a sensitivity setting",
    "answer_novelty_requirement": "Conclave refuses exact duplicate answers only",
    "debug_final_answer": "a MassGen debugging switch",
}
_CONTEXT_PATH_KEYS = ("path", "permission", "protected_paths")
_COORDINATION_DROPS = {
    "enable_planning_mode": "plan mode is chosen per run in Conclave (Shift+Tab or /mode in "
    "the REPL), not in the config",
    "planning_mode_instruction": "Conclave's plan mode has its own instructions",
    "max_orchestration_restarts": "Conclave has no post-evaluation restarts",
}
_TOP_LEVEL_DROPS = {
    "ui": "Conclave picks its display itself (text, json or stream-json: --output-format)",
    "memory": "Conclave has no conversation or persistent memory settings",
}

AZURE_API_VERSION = "2024-02-15-preview"
"""The API version MassGen's ``azure_openai`` uses when its config names none."""
_FIELD_ORDER = {
    name: i
    for i, name in enumerate(
        (
            "type", "model", "base_url", "api_key", "api_key_env", "api_version", "deployment",
            "temperature", "max_output_tokens", "max_tokens_param", "reasoning_effort",
            "extra_body",
        )
    )
}  # fmt: skip
"""The order of a converted backend's keys: what a person reads first, first."""

_ROUND_TIMEOUTS = ("initial_round_timeout_seconds", "subsequent_round_timeout_seconds")

_AGENT_ID = re.compile(r"[^A-Za-z0-9_.-]")
_ENV_ONLY = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def _carry(orchestrator: str) -> str | None:
    """Conclave's name for an orchestrator key, if this version of the schema has it: the
    importer follows the schema rather than naming keys it may have dropped or renamed."""
    return orchestrator if orchestrator in attrs.fields_dict(OrchestratorConfig) else None


class _Converter:
    def __init__(self) -> None:
        self.notes: list[Note] = []
        self.sandbox_requests: list[SandboxRequest] = []
        """Each converted agent's command-line settings: one sandbox for the run."""

    def changed(self, path: str, message: str) -> None:
        self.notes.append(Note(kind=NoteKind.CHANGED, path=path, message=message))

    def dropped(self, path: str, message: str) -> None:
        self.notes.append(Note(kind=NoteKind.DROPPED, path=path, message=message))

    def convert(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise MassGenError(
                f"expected a MassGen config (a mapping with 'agents' or 'agent'), got {_kind(data)}"
            )
        if "agents" in data and "agent" in data:
            raise MassGenError(
                "the config has both 'agent' and 'agents'; MassGen takes one of them: keep one"
            )
        if "agents" in data:
            agents_path = "agents"
            given = data["agents"]
            if not isinstance(given, list):
                raise MassGenError(f"'agents' must be a list of agents, got {_kind(given)}")
            listed = [(f"agents[{i}]", a) for i, a in enumerate(given)]
        elif "agent" in data:
            agents_path = "agent"
            listed = [("agent", data["agent"])]
        else:
            raise MassGenError(
                "the config has neither 'agents' nor 'agent': is it a MassGen config?"
            )
        agents = [a for path, agent in listed if (a := self.agent(path, agent)) is not None]
        orchestrator: dict[str, Any] = {}
        for key, value in data.items():
            if key in ("agents", "agent"):
                continue
            if key == "orchestrator":
                orchestrator.update(self.orchestrator(value))
            elif key == "timeout_settings":
                orchestrator.update(self.timeouts("timeout_settings", value))
            elif key in _TOP_LEVEL_DROPS:
                self.dropped(key, _TOP_LEVEL_DROPS[key])
            else:
                self.dropped(key, "not a MassGen key Conclave knows")
        shell, sandbox = merge_requests(self, self.sandbox_requests)
        if shell and _carry("tools"):
            orchestrator["tools"] = True
        if sandbox and _carry("sandbox"):
            orchestrator["sandbox"] = sandbox
        if not agents:
            self.dropped(agents_path, "no agent could be converted, so the result has none")
        config: dict[str, Any] = {"agents": agents}
        if orchestrator:
            config["orchestrator"] = orchestrator
        return config

    def agent(self, path: str, data: Any) -> dict[str, Any] | None:
        if not isinstance(data, dict):
            self.dropped(path, f"expected an agent (a mapping), got {_kind(data)}")
            return None
        backend = data.get("backend")
        kind = backend.get("type") if isinstance(backend, dict) else None
        if isinstance(kind, str) and kind in _FRAMEWORKS:
            self.dropped(path, f"backend type {kind!r}: {_FRAMEWORKS[kind]}")
            return None
        agent: dict[str, Any] = {}
        for key, value in data.items():
            where = f"{path}.{key}"
            if key == "id":
                agent["id"] = self.agent_id(where, value)
            elif key == "system_message":
                agent["system_prompt"] = value
                self.changed(where, "now 'system_prompt' (added to Conclave's own instructions)")
            elif key != "backend":
                self.dropped(where, "not an agent setting Conclave has")
        if not isinstance(backend, dict):
            self.dropped(path, f"its backend must be a mapping with a 'type', got {_kind(backend)}")
            return None
        converted = self.backend(f"{path}.backend", backend)
        if converted is None:
            return None
        agent["backend"] = converted
        request = sandbox_request(self, f"{path}.backend", backend)
        if request is not None:
            self.sandbox_requests.append(request)
        servers = self.mcp_servers(f"{path}.backend", backend)
        if servers:
            agent["mcp_servers"] = servers
        return agent

    def mcp_servers(self, path: str, backend: dict[str, Any]) -> list[dict[str, Any]]:
        """The backend's MCP servers, now the agent's; its ``exclude_tools`` filters them."""
        exclude = backend.get("exclude_tools")
        if "mcp_servers" not in backend:
            if exclude is not None:
                self.dropped(
                    f"{path}.exclude_tools",
                    "it filters MCP tools, and the backend has no mcp_servers",
                )
            return []
        where = f"{path}.mcp_servers"
        first = len(self.notes)
        servers = convert_servers(
            where,
            backend["mcp_servers"],
            self,
            exclude=exclude,
            exclude_path=f"{path}.exclude_tools",
        )
        if servers:
            message = "now the agent's 'mcp_servers' (its tools offered to it alone)"
            if any(s.get("type", "stdio") == "stdio" for s in servers):
                message += f"; {STDIO_ENVIRONMENT}"
            self.notes.insert(first, Note(kind=NoteKind.CHANGED, path=where, message=message))
        return servers

    def agent_id(self, path: str, value: Any) -> Any:
        if not isinstance(value, str):
            return value  # the loader names what an id must be
        fixed = _AGENT_ID.sub("_", value)[:64]
        if fixed != value:
            self.changed(path, f"{value!r} is now {fixed!r} (letters, digits, '_', '.', '-')")
        return fixed

    def backend(self, path: str, data: dict[str, Any]) -> dict[str, Any] | None:
        kind = data.get("type")
        if kind == "claude":
            self.changed(f"{path}.type", "'claude' is now 'anthropic' (the Messages API)")
            return self.fields(path, data, {"type": "anthropic"}, provider=None)
        if kind == "openai":
            self.changed(
                f"{path}.type",
                "MassGen's 'openai' uses the Responses API; Conclave's 'openai' uses Chat "
                "Completions (same models, built-in tools not available)",
            )
            return self.fields(path, data, {"type": "openai"}, provider=None)
        provider = OPENAI_COMPATIBLE.get(kind) if isinstance(kind, str) else None
        if provider is None:
            known = ", ".join(["openai", "claude", *OPENAI_COMPATIBLE])
            self.dropped(
                path, f"backend type {kind!r} is not one Conclave can convert (known: {known})"
            )
            return None
        out: dict[str, Any] = {"type": "openai"}
        given_url = data.get("base_url")
        url = given_url if isinstance(given_url, str) else provider.base_url
        if url is not None:
            out["base_url"] = url
        out["api_key_env"] = _key_env(url, provider)
        if provider.max_tokens and "max_tokens" in data:
            out["max_tokens_param"] = "max_tokens"
        where = f"at {url}" if url else "(no base_url given: OpenAI's own API)"
        self.changed(f"{path}.type", f"{kind!r} is now 'openai' (Chat Completions {where})")
        converted = self.fields(path, data, out, provider=kind)
        if kind == "azure_openai" and "api_version" not in converted:
            converted["api_version"] = AZURE_API_VERSION
            self.changed(f"{path}.api_version", f"not given: MassGen's default {AZURE_API_VERSION}")
        if kind == "azure_openai" and "model" in converted:
            converted["deployment"] = converted["model"]
            self.changed(f"{path}.model", "on Azure it names the deployment too")
        return converted

    def fields(
        self, path: str, data: dict[str, Any], out: dict[str, Any], *, provider: str | None
    ) -> dict[str, Any]:
        extra_body: dict[str, Any] = {}
        for key, value in data.items():
            where = f"{path}.{key}"
            if key in ("type", "base_url"):
                if key == "base_url":
                    out["base_url"] = value
            elif key in ("model", "temperature"):
                out[key] = value
            elif key == "max_tokens":
                out["max_output_tokens"] = value
                self.changed(where, "now 'max_output_tokens'")
            elif key == "api_key":
                self.api_key(where, value, out)
            elif key == "api_version" and provider == "azure_openai":
                out["api_version"] = value
            elif key == "reasoning" and isinstance(value, dict) and "effort" in value:
                out["reasoning_effort"] = value["effort"]
                self.changed(where, "now 'reasoning_effort'")
                for other in value:
                    if other != "effort":
                        self.dropped(f"{where}.{other}", "Chat Completions has no such setting")
            elif key in _MCP_KEYS:
                continue  # the agent's mcp_servers: see mcp_servers()
            elif key in SANDBOX_KEYS or key.startswith("command_line"):
                continue  # the run's sandbox: see config.massgen_sandbox
            elif key in _SAMPLING:
                extra_body[key] = value
                self.changed(where, "sent as is, in 'extra_body'")
            elif key in _BACKEND_DROPS:
                self.dropped(where, _BACKEND_DROPS[key])
            else:
                self.dropped(where, "not a backend setting Conclave knows")
        if extra_body:
            out["extra_body"] = extra_body
        return {
            k: out[k] for k in sorted(out, key=lambda k: _FIELD_ORDER.get(k, len(_FIELD_ORDER)))
        }

    def api_key(self, path: str, value: Any, out: dict[str, Any]) -> None:
        """``${VAR}`` becomes ``api_key_env: VAR``, so no key is ever written out; anything
        else is carried as written (the loader expands ``${VAR:-default}``)."""
        match = _ENV_ONLY.match(value) if isinstance(value, str) else None
        if match:
            out["api_key_env"] = match.group(1)
            self.changed(path, f"now 'api_key_env: {match.group(1)}' (read when a run starts)")
            return
        out["api_key"] = value
        self.changed(
            path,
            "a key written in the file is carried over as is; prefer '${VAR}' or api_key_env, "
            "so the file holds no secret",
        )

    def orchestrator(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            self.dropped("orchestrator", f"expected a mapping, got {_kind(data)}")
            return {}
        out: dict[str, Any] = {}
        for key, value in data.items():
            where = f"orchestrator.{key}"
            if key == "max_new_answers_per_agent" and _carry(key):
                out[key] = value
            elif key == "skip_coordination_rounds" and _carry("skip_voting"):
                if value is True:
                    out["skip_voting"] = True
                    self.changed(where, "now 'skip_voting: true'")
                else:
                    self.dropped(where, "false is Conclave's default")
            elif key == "timeout":
                out.update(self.timeouts(where, value))
            elif key == "coordination" and isinstance(value, dict):
                for sub, _ in value.items():
                    reason = _COORDINATION_DROPS.get(sub, "not a coordination setting Conclave has")
                    self.dropped(f"{where}.{sub}", reason)
            elif key == "context_paths" and _carry(key):
                out[key] = self.context_paths(where, value)
            elif key in _ORCHESTRATOR_DROPS:
                self.dropped(where, _ORCHESTRATOR_DROPS[key])
            else:
                self.dropped(where, "not an orchestrator setting Conclave has")
        return out

    def context_paths(self, path: str, data: Any) -> Any:
        """The same shape in both tools (``path``, ``permission``, ``protected_paths``);
        anything else in an entry is dropped. Not a list: carried as is, for the loader to
        name what it expected."""
        if not isinstance(data, list):
            return data
        out = []
        for i, entry in enumerate(data):
            if not isinstance(entry, dict):
                out.append(entry)
                continue
            kept = {k: v for k, v in entry.items() if k in _CONTEXT_PATH_KEYS}
            if isinstance(kept.get("protected_paths"), list):
                kept["protected_paths"] = [
                    _protected(self, f"{path}[{i}].protected_paths[{j}]", p, kept.get("path"))
                    for j, p in enumerate(kept["protected_paths"])
                ]
            for key in entry.keys() - kept.keys():
                self.dropped(f"{path}[{i}].{key}", "not a context path setting Conclave has")
            out.append(kept)
        return out

    def timeouts(self, path: str, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            self.dropped(path, f"expected a mapping, got {_kind(data)}")
            return {}
        out: dict[str, Any] = {}
        rounds = [k for k in _ROUND_TIMEOUTS if data.get(k) is not None]
        if rounds and _carry("round_time_limit"):
            # MassGen warns at a soft limit (one for the first round, one for the rest) and
            # blocks tools after a grace period; Conclave has one hard limit for every round,
            # so it takes the longer one, grace included: no round is cut short that MassGen
            # would have let finish.
            limits = [data[k] for k in rounds]
            grace = data.get("round_timeout_grace_seconds") or 0
            numbers = all(_number(v) for v in [*limits, grace])
            out["round_time_limit"] = max(limits) + grace if numbers else limits[0]
            for key in rounds:
                self.changed(
                    f"{path}.{key}",
                    "folded into 'orchestrator.round_time_limit' (one limit for every round: "
                    "the longer of MassGen's two, grace included; no soft warning)",
                )
        for key, value in data.items():
            where = f"{path}.{key}"
            if key == "orchestrator_timeout_seconds" and _carry("run_timeout"):
                out["run_timeout"] = value
                self.changed(where, "now 'orchestrator.run_timeout' (seconds for the whole run)")
            elif "round_time_limit" in out and (
                key in rounds or key == "round_timeout_grace_seconds"
            ):
                continue  # noted above
            elif key in _ROUND_TIMEOUTS and value is None:
                self.dropped(where, "null (no limit) is Conclave's default")
            else:
                self.dropped(where, "not a timeout Conclave has")
        return out


def _field_rank(key: str) -> int:
    return _FIELD_ORDER.get(key, len(_FIELD_ORDER))


def _key_env(url: str | None, provider: Provider) -> str:
    host = (urlsplit(url).hostname or "") if url else ""
    return _KEY_BY_HOST.get(host, provider.key_env)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {value!r}"


MASSGEN_CWD = "${cwd}"
"""MassGen's name, in any value, for the directory it runs in (not an environment variable:
MassGen replaces it itself)."""

RUN_DIRECTORY = "."
"""What :data:`MASSGEN_CWD` becomes: Conclave takes a relative path (a context path, an MCP
server's command, arguments and ``cwd``) from the directory the run starts in, which is what
MassGen means by ``${cwd}``, on every machine the converted config is carried to."""


def _run_directory(converter: _Converter, data: Any, path: str) -> Any:
    """``data`` with :data:`MASSGEN_CWD` written as :data:`RUN_DIRECTORY` in every string,
    each with a note: left as it is, Conclave would read it as the environment variable
    ``cwd``, which nothing sets."""
    if isinstance(data, dict):
        return {
            key: _run_directory(converter, value, f"{path}.{key}" if path else str(key))
            if key != "protected_paths"  # taken from their context path: see _protected
            else value
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [_run_directory(converter, item, f"{path}[{i}]") for i, item in enumerate(data)]
    if isinstance(data, str) and MASSGEN_CWD in data:
        mapped = data.replace(MASSGEN_CWD, RUN_DIRECTORY)
        converter.changed(
            path,
            f"{data!r} is now {mapped!r}: MassGen's {MASSGEN_CWD} is the directory it runs "
            "in, and Conclave takes a relative path from the directory the run starts in",
        )
        return mapped
    return data


def _protected(converter: _Converter, path: str, value: Any, context: Any) -> Any:
    """A protected path naming :data:`MASSGEN_CWD`, relative to its context path (Conclave
    takes a relative protected path from the context path, not from the run's directory)
    when that is relative too; else as :func:`_run_directory` writes it."""
    if not isinstance(value, str) or MASSGEN_CWD not in value:
        return value
    mapped = posixpath.normpath(value.replace(MASSGEN_CWD, RUN_DIRECTORY))
    if isinstance(context, str) and not posixpath.isabs(context) and not posixpath.isabs(mapped):
        mapped = posixpath.relpath(mapped, posixpath.normpath(context))
    converter.changed(
        path,
        f"{value!r} is now {mapped!r}: MassGen's {MASSGEN_CWD} is the directory it runs in, and "
        "Conclave takes a relative protected path from its context path",
    )
    return mapped


def convert_massgen(data: Any) -> Conversion:
    """Conclave's config for the MassGen config ``data`` (as loaded from YAML), and a note
    for every key changed or dropped. Raises :class:`MassGenError` when ``data`` is not a
    MassGen config at all. The result is not validated here: load it to check it."""
    converter = _Converter()
    config = converter.convert(_run_directory(converter, data, ""))
    return Conversion(config=config, notes=tuple(converter.notes))
