"""Where an agent's round and presentation transcripts come from, and where they are logged.

A transcript starts from a prompt, or, in a resumed run, from the point where the paused run
asked its question (:class:`~actors.agent.resume.ResumePoint`): the paused transcript with the
question answered now, its workspace paths moved to this run's. Each message appended is
written to the agent's transcript file (when the run keeps one), the messages appended together
on one line; a prompt built again shorter
after a context overflow replaces the transcript's first messages and is written again.

The transcript file outlives the incarnation that opened it (it lives in the agent's memory),
so a restarted agent goes on writing the same file.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import trio

from conclave.actors.agent.events import TranscriptFailed
from conclave.actors.agent.memory import AgentMemory, AgentSetup
from conclave.actors.agent.resume import ResumePoint
from conclave.actors.agent.transcript_log import TranscriptLog
from conclave.actors.human.events import QuestionAnswered
from conclave.actors.human.questions import ReplySource
from conclave.actors.llm.protocol import CallPurpose, ChatMessage
from conclave.actors.loop import Transcript
from conclave.runtime import ActorContext

__all__ = ["Transcripts"]


class Transcripts:
    """One incarnation's maker of transcripts, over the agent's memory."""

    def __init__(self, context: ActorContext, setup: AgentSetup, memory: AgentMemory) -> None:
        self.context = context
        self.setup = setup
        self.memory = memory

    def new(self, prompt: list[ChatMessage], purpose: CallPurpose) -> Transcript:
        """A transcript from ``prompt`` on, each message written to the transcript file."""
        log = self._log()
        if log is None:
            return Transcript(prompt)
        return Transcript(prompt, on_append=partial(_write, log, self.memory.round, purpose))

    def reprompt(
        self, transcript: Transcript, prompt: list[ChatMessage], length: int, purpose: CallPurpose
    ) -> None:
        """Replace the transcript's prompt (its first ``length`` messages), keeping what
        followed it; the transcript file gets the new prompt."""
        transcript.messages[:length] = prompt
        log = self._log()
        if log is not None:
            log.write(self.memory.round, purpose, *prompt)

    def take_resumed(self, purpose: CallPurpose) -> ResumePoint | None:
        """The paused run's point to go on from, once, if it paused in work of ``purpose``."""
        resumed = self.memory.resumed
        if resumed is None or resumed.purpose is not purpose:
            return None
        self.memory.resumed = None
        return resumed

    def resumed(self, resumed: ResumePoint) -> Transcript:
        """The paused round's or presentation's transcript, its question answered now."""
        self.context.record(
            QuestionAnswered(
                at=trio.current_time(),
                agent=self.setup.agent,
                question_id=resumed.question_id,
                answer=resumed.answer,
                source=ReplySource.USER,
            )
        )
        workspace = self.setup.workspace
        messages = (
            resumed.messages if workspace is None else resumed.moved_to(workspace.layout.root)
        )
        return self.new(list(messages), resumed.purpose)

    def _log(self) -> TranscriptLog | None:
        memory, file = self.memory, self.setup.transcript
        if file is None:
            return None
        if memory.transcript_log is None:
            memory.transcript_log = TranscriptLog(
                file,
                agent=self.setup.agent,
                on_failure=partial(_transcript_failed, self.context, self.setup.agent),
            )
        return memory.transcript_log


def _write(
    log: TranscriptLog, round_: int, purpose: CallPurpose, messages: Sequence[ChatMessage]
) -> None:
    log.write(round_, purpose, *messages)


def _transcript_failed(context: ActorContext, agent: str, error: str) -> None:
    """The transcript file outlives the incarnation that opened it; recording through its
    context still works then (see :meth:`ActorContext.record`)."""
    context.record(TranscriptFailed(at=trio.current_time(), agent=agent, error=error))
