"""The PAOR machine: a table of legal moves, every move reported, every other move refused."""

from __future__ import annotations

import itertools

import pytest

from conclave.actors.paor.events import PaorStateChanged
from conclave.actors.paor.state import TRANSITIONS, IllegalTransition, PaorMachine, PaorPhase
from conclave.runtime import dumps, loads
from conclave.ui.timeline import describe

P = PaorPhase
# In the enum's order, not the frozensets': under xdist every worker must collect the same ids.
LEGAL = [
    (source, target)
    for source, targets in TRANSITIONS.items()
    for target in PaorPhase
    if target in targets
]
ILLEGAL = [
    (source, target)
    for source, target in itertools.product(PaorPhase, PaorPhase)
    if target not in TRANSITIONS[source]
]

# The shortest walk from Idle to each phase, so a test can stand the machine anywhere.
_PATHS: dict[PaorPhase, tuple[PaorPhase, ...]] = {
    P.IDLE: (),
    P.PLANNING: (P.PLANNING,),
    P.ACTING: (P.PLANNING, P.ACTING),
    P.OBSERVING: (P.PLANNING, P.ACTING, P.OBSERVING),
    P.REFLECTING: (P.PLANNING, P.ACTING, P.OBSERVING, P.REFLECTING),
    P.AWAITING_USER: (P.PLANNING, P.ACTING, P.OBSERVING, P.REFLECTING, P.AWAITING_USER),
    P.COMPLETE: (P.PLANNING, P.ACTING, P.OBSERVING, P.REFLECTING, P.COMPLETE),
    P.FAILED: (P.PLANNING, P.FAILED),
}


def _at(phase: PaorPhase) -> tuple[PaorMachine, list[tuple[PaorPhase, PaorPhase, int]]]:
    moves: list[tuple[PaorPhase, PaorPhase, int]] = []
    machine = PaorMachine(on_move=lambda s, t, i: moves.append((s, t, i)))
    for step in _PATHS[phase]:
        machine.move(step)
    moves.clear()
    return machine, moves


def test_the_table_is_the_one_the_issue_names() -> None:
    assert dict(TRANSITIONS) == {
        P.IDLE: {P.PLANNING},
        P.PLANNING: {P.ACTING, P.FAILED},
        P.ACTING: {P.OBSERVING, P.FAILED},
        P.OBSERVING: {P.REFLECTING},
        P.REFLECTING: {P.PLANNING, P.COMPLETE, P.FAILED, P.AWAITING_USER},
        P.AWAITING_USER: {P.PLANNING, P.FAILED},
        P.COMPLETE: set(),
        P.FAILED: set(),
    }


@pytest.mark.parametrize(("source", "target"), LEGAL, ids=lambda p: p.value)
def test_every_legal_move_is_taken_and_reported(source: PaorPhase, target: PaorPhase) -> None:
    machine, moves = _at(source)
    iteration = machine.iteration
    machine.move(target)
    assert machine.phase is target
    expected = iteration + 1 if target is P.PLANNING else iteration
    assert moves == [(source, target, expected)]


@pytest.mark.parametrize(("source", "target"), ILLEGAL, ids=lambda p: p.value)
def test_every_illegal_move_raises_and_changes_nothing(
    source: PaorPhase, target: PaorPhase
) -> None:
    machine, moves = _at(source)
    with pytest.raises(IllegalTransition, match=f"{source.value} -> {target.value}"):
        machine.move(target)
    assert machine.phase is source
    assert moves == []


def test_each_plan_starts_a_new_iteration() -> None:
    machine = PaorMachine()
    for _ in range(3):
        for phase in (P.PLANNING, P.ACTING, P.OBSERVING, P.REFLECTING):
            machine.move(phase)
    assert machine.iteration == 3
    machine.move(P.COMPLETE)
    assert machine.ended


def test_a_move_out_of_an_end_names_that_nothing_follows() -> None:
    machine, _ = _at(P.COMPLETE)
    with pytest.raises(IllegalTransition, match="nothing"):
        machine.move(P.PLANNING)


def test_the_event_round_trips_and_shows_phase_and_iteration() -> None:
    event = PaorStateChanged(
        at=1.0, agent="a1", source=P.OBSERVING, target=P.REFLECTING, iteration=2
    )
    assert loads(dumps(event), PaorStateChanged) == event
    assert describe(event) == "a1 paor iteration 2: observing -> reflecting"
