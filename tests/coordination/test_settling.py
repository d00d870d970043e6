"""How an agent's round settles: at once when the agent is idle (parked in its receive,
nothing queued), without a message; otherwise (mail queued, or handed to its receive and not
yet handled) it tells itself ``RoundSettled`` and settles behind that mail: which of the two
happens there depends on the order trio runs the round and the agent's loop in, so the
run-level suites cover it under both (the RunView property test; a PAOR round saw a peer's
answer injected twice in about 4 runs of 10 when mail handed over was taken for none:
tests/paor/test_peer_answers.py)."""

from __future__ import annotations

from conclave.actors.agent.events import RoundStarted
from conclave.actors.agent.protocol import RoundSettled
from conclave.actors.coordination.bus import agent_address
from conclave.runtime import Delivered
from tests.coordination.helpers import Run, agent, config, run_tapped


def _delivered(run: Run, payload: type, to: str) -> list[int]:
    """Where in the run's events the ``payload`` messages delivered to agent ``to`` are."""
    address = agent_address(to)
    return [
        i
        for i, e in enumerate(run.tap.events)
        if isinstance(e, Delivered)
        and isinstance(e.envelope.payload, payload)
        and e.envelope.recipient == address
    ]


async def test_a_round_with_no_mail_waiting_settles_without_a_message(
    autojump_clock: object,
) -> None:
    # "You may vote now" is held until answers are quiet, so nothing waits for the agent
    # whose answer is accepted: its round settles then and there.
    run = await run_tapped(config(agent("a", seed=1, latency=0.1), agent("b", seed=2, latency=0.3)))

    assert run.result.termination == "completed"
    assert _delivered(run, RoundSettled, "a") == []
    assert len([e for e in run.events(RoundStarted) if e.agent == "a"]) == 2
