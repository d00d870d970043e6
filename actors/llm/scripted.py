"""The embedded backend: deterministic, offline, with latency and failure injection.

It reads the same prompt a real model would (see :mod:`actors.prompts`) and answers with
real tool calls, so the agents' loop cannot tell it from a network model. Everything random
comes from one ``random.Random`` seeded by ``(seed, agent id)``: the same config gives the
same run, call for call.

Text replies stream: the reply's text reaches the call's sink in :data:`STREAM_CHUNKS`
pieces spread over the last :data:`STREAMED_SHARE` of the call's latency, as a model's
tokens do, so ``--include-partial-messages`` and the REPL see typing. The call takes the same
time as without a sink, and a reply of tool calls (most of a run's) streams nothing.

The interactive agent (``orchestrator.interactive_mode``) has a policy of its own
(:mod:`actors.llm.scripted_interactive`): short questions answered, other work launched.

Tool-using policies: before its workflow call (and before a presentation's text) the script
makes its configured tool steps, one per call. Which step is next is counted from the step
results already in the transcript, not kept in the backend, so an agent restarted mid-round
(its transcript survives in its memory) goes on with the next step, never repeats one.
In a PAOR round (``loop: paor``) the same steps are planned, made and reflected on
(:mod:`actors.llm.scripted_paor`); configured ``subtasks`` are delegated to sub-agents,
whose transcripts the script plays too (:mod:`actors.llm.scripted_delegation`).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

import orjson
import trio

from conclave.actors.coordination.label import Label
from conclave.actors.llm.protocol import (
    CallPurpose,
    ChatMessage,
    Completion,
    CompletionRequest,
    CompletionSink,
    LLMError,
    ToolCall,
    Usage,
)
from conclave.actors.llm.scripted_delegation import delegation_reply, scripted_steps
from conclave.actors.llm.scripted_interactive import interactive_reply
from conclave.actors.llm.scripted_paor import answered, paor_phase_reply, reflections
from conclave.actors.llm.scripted_summary import summary_reply
from conclave.actors.llm.scripted_timer import sleep_until
from conclave.actors.paor.prompts import PAOR_NOTE
from conclave.actors.planning.progress import UPDATE_PLAN
from conclave.actors.planning.scripted_plans import as_plan_reply, plan_marks
from conclave.actors.prompts.coordination import PromptView, parse_prompt
from conclave.actors.prompts.interactive import is_interactive
from conclave.config.schema import Misbehaviour, ScriptedBackendConfig
from conclave.config.schema.backends import ToolStep

__all__ = ["STREAMED_SHARE", "STREAM_CHUNKS", "ScriptedBackend", "answer_score"]

STREAM_CHUNKS = 4
"""The pieces a text reply streams in: a few, not one per token, because the load
benchmarks run thousands of scripted agents and each piece is a call into the sink."""
STREAMED_SHARE = 0.5
"""The part of a call's latency over which its text streams; the rest is time to the first
piece, as a model thinks before its first token."""


def answer_score(content: str) -> int:
    """The deterministic quality score every scripted voter agrees on."""
    return int.from_bytes(hashlib.sha256(content.encode()).digest()[:8], "big")


_IDEAS = (
    "start from the simplest case that works and say why it works",
    "name the trade-off explicitly so the reader can choose",
    "give one concrete example before the general rule",
    "check the edge cases: empty input, huge input, hostile input",
    "prefer the option that is cheapest to undo",
    "measure before optimising, and state what was measured",
    "split the problem so each part can be verified alone",
    "say what is out of scope so nobody waits for it",
    "reuse what already exists before building anew",
    "write the failure mode down next to the plan",
)


class ScriptedBackend:
    """One scripted model for one agent."""

    def __init__(
        self, *, agent_id: str, persona: str, policy: ScriptedBackendConfig, seed: int = 0
    ) -> None:
        self.agent_id = agent_id
        self.persona = persona
        self.policy = policy
        self._rng = random.Random(f"{seed}:{agent_id}")
        self.calls = 0

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.calls += 1
        policy = self.policy
        delay = policy.latency
        if policy.jitter and delay:
            delay *= 1 + self._rng.uniform(-policy.jitter, policy.jitter)
        misbehave = policy.misbehave if self.calls <= policy.misbehave_calls else None
        if misbehave is Misbehaviour.HANG or (
            policy.hang_rate and self._rng.random() < policy.hang_rate
        ):
            await trio.sleep_forever()
        # Deadlines, not durations: the reply comes at exactly start + delay, streamed or not.
        start = trio.current_time()
        end = start + delay
        first = start + delay * (1 - STREAMED_SHARE)
        if policy.error_rate or policy.malformed_rate:
            # The reply draws from the random state: it is made when its first piece is due,
            # so a call cancelled before then draws nothing, as it never did.
            await sleep_until(first)
            reply = self._reply(request, misbehave)
        else:
            # Nothing random: the reply is made now, and one that does not stream (tool
            # calls, most of a run's) waits once, until it is due, not twice (a task resumed
            # once fewer per call: 2 per agent of a big run's ~26).
            try:
                reply = self._reply(request, misbehave)
            except Exception:
                await sleep_until(first)  # a bug fails the call when it always did
                raise
            if isinstance(reply, LLMError) or sink is None or not reply.content:
                await sleep_until(end)  # a checkpoint even without latency, as ever
                if isinstance(reply, LLMError):
                    raise reply
                return Completion(message=reply, usage=_usage(request, reply))
            await sleep_until(first)
        if isinstance(reply, LLMError):
            await sleep_until(end)  # a failure takes the whole latency, as it always did
            raise reply
        await _stream(reply.content if sink is not None else "", end, sink)
        return Completion(message=reply, usage=_usage(request, reply))

    def _reply(
        self, request: CompletionRequest, misbehave: Misbehaviour | None
    ) -> ChatMessage | LLMError:
        """What the call answers (an injected failure is returned, for the call to raise
        when it is due)."""
        policy = self.policy
        if request.purpose is CallPurpose.COMPACT:
            return summary_reply(request.messages)
        if misbehave is Misbehaviour.ERROR or (
            policy.error_rate and self._rng.random() < policy.error_rate
        ):
            return LLMError(f"scripted failure injected for {self.agent_id} (call {self.calls})")
        if _plays_interactive(request.messages):
            return interactive_reply(request.messages, self._call_id())
        view = parse_prompt(request.messages)
        offered = {t.name for t in request.tools}
        done, retries, paor = _tally(request.messages)
        if view.presentation is None and paor:
            steps, _ = scripted_steps(policy, request.messages)
            results = [m.content for m in request.messages if _is_step_result(m)]
            failed = sum(1 for result in results if result.startswith("Error:"))
            return (
                delegation_reply(
                    policy, request.messages, offered, results, failed, self._call_id()
                )
                or paor_phase_reply(
                    steps,
                    offered,
                    done,
                    failed,
                    self._call_id(),
                    self.compose(view, revision=1),
                    "" if answered(request.messages) else policy.paor_question,
                    reflections(request.messages) < policy.paor_stuck,
                )
                or self._step(steps, offered, done, view, 1)
                or ChatMessage(role="assistant", content="Nothing more to do.")
            )
        if view.presentation is not None:
            won = Label.parse(view.own_label).seq if view.own_label else 1
            step = self._step(policy.presentation_tool_steps, offered, done, view, won)
            message = step or ChatMessage(role="assistant", content=self._present(view))
        else:
            if policy.malformed_rate and self._rng.random() < policy.malformed_rate:
                misbehave = Misbehaviour.MALFORMED
            message = self._round(view, offered, misbehave, retries, done)
        if policy.answer_text is None:
            # In plan mode a model answers with plans: so does this one (actors.planning);
            # a configured answer_text is given exactly as written, plan or not.
            message = as_plan_reply(request.messages, message)
        return message

    def _step(
        self,
        steps: Sequence[ToolStep],
        offered: set[str],
        done: int,
        view: PromptView,
        revision: int,
    ) -> ChatMessage | None:
        """The next tool step after ``done`` of them, or ``None`` when all are made."""
        usable = [s for s in steps if s.tool in offered or self.policy.call_unoffered_tools]
        if done >= len(usable):
            return None
        step = usable[done]
        fill = {"{agent}": self.agent_id, "{me}": view.me, "{revision}": str(revision)}
        arguments = _filled(step.arguments, fill)
        call = ToolCall(
            id=f"{_STEP}{done}_{self._call_id()}",
            name=step.tool,
            arguments=orjson.dumps(arguments).decode(),
        )
        return ChatMessage(role="assistant", tool_calls=(call,))

    def _round(
        self,
        view: PromptView,
        offered: set[str],
        misbehave: Misbehaviour | None,
        retries: int,
        done: int,
    ) -> ChatMessage:
        # Prompts show each agent's latest answer only, so how many answers this agent has
        # given is the M of its own label agentN.M, not how many of its labels are shown.
        given = max(
            (label.seq for label in map(Label.parse, view.answers) if label.author == view.me),
            default=0,
        )

        # Composed only when the reply carries it: half the rounds of a run are votes.
        def answer() -> str:
            return self.compose(view, revision=given + 1, retries=retries)

        if misbehave is Misbehaviour.NO_CALL:
            return ChatMessage(role="assistant", content="I think the answers look fine.")
        if misbehave is Misbehaviour.BOTH_CALLS:
            return _calls(
                ("new_answer", {"content": answer()}),
                ("vote", {"agent_id": view.me, "reason": "both"}),
            )
        if misbehave is Misbehaviour.UNKNOWN_TOOL:
            return _calls(("search_web", {"query": view.task}))
        if misbehave is Misbehaviour.VOTE_WITHOUT_ANSWER:
            return _calls(("vote", {"agent_id": "agent999", "reason": "no such answer"}))
        if misbehave is Misbehaviour.DUPLICATE:
            existing = next(iter(view.answers.values()), None)
            if existing is None:
                existing = answer()
            return _calls(("new_answer", {"content": existing}))
        if misbehave is Misbehaviour.MALFORMED:
            return ChatMessage(
                role="assistant",
                tool_calls=(
                    ToolCall(
                        id=self._call_id(), name="new_answer", arguments='{"content": "unterminated'
                    ),
                ),
            )
        wants_to_answer = given < self.policy.answers
        if "new_answer" in offered and (wants_to_answer or "vote" not in offered):
            steps = self.policy.tool_steps
            if not any(step.tool == UPDATE_PLAN for step in steps):
                steps = plan_marks(view.task, offered) + steps
            step = self._step(steps, offered, done, view, given + 1)
            return step or _calls(("new_answer", {"content": answer()}), call_id=self._call_id())
        if "vote" in offered and (vote_target := self._choose_vote(view)) is not None:
            step = self._step(self.policy.vote_tool_steps, offered, done, view, given)
            if step is not None:
                return step
            reason = f"{vote_target} is the most complete"
            return _calls(
                ("vote", {"agent_id": vote_target, "reason": reason}), call_id=self._call_id()
            )
        return ChatMessage(role="assistant", content="Nothing to do.")

    def _choose_vote(self, view: PromptView) -> str | None:
        if not view.answers:
            return None
        wanted = self.policy.vote
        if wanted == "self":
            return view.me
        if wanted != "best":
            return wanted
        latest: dict[str, str] = {}
        for label, content in sorted(view.answers.items(), key=lambda kv: Label.parse(kv[0])):
            latest[Label.parse(label).author] = content
        return max(sorted(latest), key=lambda a: answer_score(latest[a]))

    def compose(self, view: PromptView, *, revision: int, retries: int = 0) -> str:
        """This agent's ``revision``-th answer to the prompt ``view``.

        Canned text that does not depend on the answers it was shown, only on the task, the
        agent and the revision; a retry (``retries`` errors fed back) writes differently.
        The anonymous id in the first line makes the answers of a run distinct at any N: the
        coordinator refuses exact duplicates, and ten ideas in three slots and a handful of
        personas give only a few thousand texts.
        """
        if self.policy.answer_text is not None:
            return self.policy.answer_text
        salt = f":{retries}" if retries else ""  # first tries stay as they always were
        rng = random.Random(f"{view.task}:{self.agent_id}:{revision}{salt}")
        ideas = rng.sample(_IDEAS, 3)
        perspective = f" as {self.persona}" if self.persona else ""
        lines = [f"On “{view.task.strip()[:200]}”, {view.me}'s view{perspective}:"]
        lines += [f"{i}. {idea.capitalize()}." for i, idea in enumerate(ideas, 1)]
        if revision > 1:
            lines.append(f"(revision {revision}, after reading {len(view.answers)} answers)")
        return "\n".join(lines)

    def _present(self, view: PromptView) -> str:
        own = view.answers.get(view.own_label or "", "")
        if view.presentation != "synthesize":
            return own or self.compose(view, revision=1)
        others = [
            label for label in sorted(view.answers, key=Label.parse) if label != view.own_label
        ]
        base = own or next(iter(view.answers.values()), "")
        if not others:
            return base
        gathered = "; ".join(
            f"{label}: {view.answers[label].splitlines()[0][:80]}" for label in others
        )
        merged = ", ".join(others)
        return f"{base}\n\nSynthesis: this merges the strongest points of {merged} ({gathered})."

    def _call_id(self) -> str:
        return f"call_{self.agent_id}_{self.calls}"


_STEP = "step"
"""How the ids of tool-step calls begin: their results in a transcript count the steps done."""


async def _stream(text: str, end: float, sink: CompletionSink | None) -> None:
    """Hand ``text`` to ``sink`` in :data:`STREAM_CHUNKS` pieces from now until ``end``: the
    first at once, the others evenly spaced, and the reply at ``end``. Without text (or a
    sink) it only waits. With no latency left the pieces come at once and no checkpoint is
    added: a call costs what it did."""
    now = trio.current_time()
    if not text or sink is None:
        if end > now:
            await sleep_until(end)
        return
    size = -(-len(text) // STREAM_CHUNKS)  # ceiling: never more than STREAM_CHUNKS pieces
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    step = (end - now) / len(pieces)
    for index, piece in enumerate(pieces, 1):
        sink.text(piece)
        if end > now:
            await sleep_until(end if index == len(pieces) else now + step * index)


def _plays_interactive(messages: Sequence[ChatMessage]) -> bool:
    """The interactive agent's conversation (its policy: :mod:`actors.llm.scripted_interactive`)."""
    return bool(messages) and messages[0].role == "system" and is_interactive(messages[0].content)


def _tally(messages: Sequence[ChatMessage]) -> tuple[int, int, bool]:
    """In one pass over a call's messages (it was three scans): the
    tool steps done (their results), the errors fed back to this round (like a model
    reading the error it got back, a retry writes differently; a tool step's error is about
    the step, not about the reply) and whether it is a PAOR round."""
    done = retries = 0
    paor = False
    for m in messages:
        if _is_step_result(m):
            done += 1
        elif m.content.startswith("Error:"):
            retries += 1
        elif m.role == "user" and m.content == PAOR_NOTE:
            paor = True
    return done, retries, paor


def _is_step_result(message: ChatMessage) -> bool:
    return message.role == "tool" and (message.tool_call_id or "").startswith(_STEP)


def _filled(value: Any, fill: dict[str, str]) -> Any:
    """``value`` with the placeholders of ``fill`` replaced in every string inside it."""
    if isinstance(value, str):
        for token, text in fill.items():
            value = value.replace(token, text)
        return value
    if isinstance(value, dict):
        return {k: _filled(v, fill) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_filled(v, fill) for v in value]
    return value


def _calls(*calls: tuple[str, dict[str, str]], call_id: str = "call") -> ChatMessage:
    return ChatMessage(
        role="assistant",
        tool_calls=tuple(
            ToolCall(id=f"{call_id}_{i}", name=name, arguments=orjson.dumps(args).decode())
            for i, (name, args) in enumerate(calls)
        ),
    )


def _usage(request: CompletionRequest, message: ChatMessage) -> Usage:
    prompt = sum(len(m.content) for m in request.messages)
    output = len(message.content) + sum(len(c.arguments) for c in message.tool_calls)
    return Usage(input_tokens=prompt // 4 + 1, output_tokens=output // 4 + 1)
