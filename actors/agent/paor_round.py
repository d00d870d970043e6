"""An answer round run as Plan-Act-Observe-Reflect (an agent with ``loop: paor``).

Only rounds that may answer and not vote run PAOR: a vote is one judgement, not a task to
work through. The round's transcript starts from the usual round prompt, with a note on how
the iterations work; :class:`~actors.paor.driver.PaorLoop` runs them with the agent's own
tools (``ask_user`` among them when the agent may ask). Its summary is submitted as the
round's ``new_answer``: the concise one by default. Peers' answers that arrive meanwhile enter
at its step boundaries (it follows ``inject``, :mod:`actors.agent.policy`), as in a free
round, so they neither restart it nor go unseen. A round that hit ``max_iterations``
submits its progress report, and the run ends ``max_iterations`` when that answer wins
(exit 5). A round that failed (its model unreachable, its tries spent) fails as any round
does: the agent is excluded.

Cancellation: as for any round (see :mod:`actors.agent.rounds`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from conclave.actors.agent.asking import AskingTools, may_ask, own_tools
from conclave.actors.agent.progress_report import submit_answer
from conclave.actors.agent.protocol import RoundOutcome
from conclave.actors.agent.round_tools import RoundTools
from conclave.actors.agent.settled import Settled
from conclave.actors.human.questions import Question, reply_text
from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.paor.driver import PaorLoop
from conclave.actors.paor.events import CorrectionApplied, PaorFinished, PaorStateChanged
from conclave.actors.paor.prompts import PAOR_NOTE
from conclave.actors.paor.report import PaorEnd
from conclave.actors.paor.state import PaorPhase
from conclave.actors.paor.subagents import SubAgents, SubAgentSetup
from conclave.config.schema import InFlightPolicy

if TYPE_CHECKING:
    from conclave.actors.agent.rounds import Rounds

__all__ = ["paor_round"]


async def paor_round(rounds: Rounds, policy: InFlightPolicy) -> Settled:
    """Run the round's iterations, then submit the summary as its answer."""
    setup, memory, context = rounds.setup, rounds.memory, rounds.context
    transcript = memory.transcript
    assert transcript is not None
    if not any(m.content == PAOR_NOTE for m in transcript.messages):
        transcript.append(ChatMessage(role="user", content=PAOR_NOTE))
    own = own_tools(setup, context, presenting=False)

    def moved(source: PaorPhase, target: PaorPhase, iteration: int) -> None:
        context.record(
            PaorStateChanged(
                at=trio.current_time(),
                agent=setup.agent,
                source=source,
                target=target,
                iteration=iteration,
            )
        )

    async def ask(question: Question) -> str:
        assert isinstance(own, AskingTools)
        return reply_text(await own.ask(question))

    def corrected(iteration: int, step: int) -> list[str]:
        box = setup.corrections
        texts = box.take(setup.agent) if box is not None else []
        for text in texts:
            context.record(
                CorrectionApplied(
                    at=trio.current_time(),
                    agent=setup.agent,
                    iteration=iteration,
                    step=step,
                    correction=text,
                )
            )
        return texts

    asks = isinstance(own, AskingTools) and may_ask(setup, presenting=False)
    # Where record_assumption stands for ask_user, a reflection's question is assumed too.
    assume = own.assume if isinstance(own, AskingTools) and not own.may_ask else None
    loop = PaorLoop(
        delegate=_subagents(rounds),
        tokens=setup.paor.max_tokens,
        seconds=setup.paor.max_seconds,
        backend=rounds.backend,
        tools=RoundTools((), own, context=context, agent=setup.agent),
        budget=rounds.budget,
        settings=setup.paor,
        on_move=moved,
        ask=ask if asks else None,
        assume=assume,
        observer=rounds.observer(),
        sink=rounds.stream,
        corrections=corrected,
        updates=rounds.updates if policy is InFlightPolicy.INJECT else None,
    )
    outcome = await loop.run(transcript)
    summary = outcome.summary()
    context.record(
        PaorFinished(
            at=trio.current_time(),
            agent=setup.agent,
            end=outcome.end,
            iterations=outcome.iterations,
            summary=summary,
            detail=outcome.summary(verbose=True).removeprefix(summary).strip("\n"),
        )
    )
    if outcome.end is PaorEnd.FAILED:
        return Settled(outcome=RoundOutcome.FAILED, reason=outcome.error)
    return await submit_answer(rounds, summary, "paor", policy, "the PAOR round ended")


def _subagents(rounds: Rounds) -> SubAgents | None:
    """The round's sub-agents, under the agent's own supervisor; ``None`` when its plans
    may not delegate (``paor.max_depth: 0``). They have the agent's tools, not ``ask_user``:
    only the agent talks to the user. Their tool and LLM calls are recorded under their paths."""
    setup, context = rounds.setup, rounds.context
    if setup.paor.max_depth < 1:
        return None
    shared = SubAgentSetup(
        agent=setup.agent,
        backend=rounds.backend,
        tools=setup.tools,
        budget=rounds.budget,
        settings=setup.paor,
        observed=rounds.observer,
        wrap=setup.subagent_wrap,
        recorded=lambda path, tools: RoundTools((), tools, context=context, agent=path),
    )
    return SubAgents(context, shared, parent=setup.agent)
