"""A loop's transcript: the messages the model saw and said, and what the loop spent.

The transcript belongs to whoever runs the loop (an agent keeps its round's transcript in
its memory, which survives a crash of the actor), so a loop can be re-entered with the same
transcript: counters carry over, and a rejected submission's feedback is simply appended.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from conclave.actors.llm.protocol import ChatMessage, Usage

__all__ = ["Transcript"]


class Transcript:
    def __init__(
        self,
        messages: Iterable[ChatMessage] = (),
        *,
        on_append: Callable[[Sequence[ChatMessage]], None] | None = None,
    ) -> None:
        self.messages: list[ChatMessage] = list(messages)
        self.steps = 0
        """LLM calls made in this transcript's loops."""
        self.failed_tries = 0
        """Violations, backend errors and timeouts so far."""
        self.input_tokens = 0
        self.output_tokens = 0
        self._on_append = on_append
        if on_append is not None and self.messages:
            on_append(tuple(self.messages))

    def append(self, *messages: ChatMessage) -> None:
        """Append in order; ``on_append`` hears them together (e.g. to write the agent's
        transcript line): the starting messages, then each call's."""
        self.messages.extend(messages)
        if self._on_append is not None:
            self._on_append(messages)

    def spend(self, usage: Usage) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens
