"""The codec round-trips every message and event the domain registers, as it does the
kernel's (tests/runtime/test_codec.py): the event log, replay and the websocket rely on it."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conclave.actors.events import DomainEvent
from conclave.runtime import Event, Message, dumps, loads
from conclave.runtime.messages import registered_kinds
from tests.events.strategies import DOMAIN_CLASSES, strategy_for_class


@pytest.mark.parametrize("kind", sorted(DOMAIN_CLASSES))
@given(data=st.data())
def test_every_domain_message_and_event_round_trips_through_the_codec(
    kind: str, data: st.DataObject
) -> None:
    original = data.draw(strategy_for_class(DOMAIN_CLASSES[kind]))

    decoded = loads(dumps(original), Message)

    assert type(decoded) is type(original)
    assert decoded == original


@pytest.mark.parametrize(
    "kind", sorted(k for k, c in DOMAIN_CLASSES.items() if issubclass(c, Event))
)
@given(data=st.data())
def test_every_domain_event_decodes_as_an_event(kind: str, data: st.DataObject) -> None:
    original = data.draw(strategy_for_class(DOMAIN_CLASSES[kind]))

    assert loads(dumps(original), Event) == original


def test_the_suite_knows_the_domain_kinds() -> None:
    assert {"answer_added", "submit_vote", "run_ended", "text_delta", "subscriber_dropped"} <= set(
        DOMAIN_CLASSES
    )
    assert DomainEvent.kind in DOMAIN_CLASSES


def test_every_module_of_the_domain_that_defines_kinds_is_registered_by_actors_kinds() -> None:
    import conclave.actors
    import conclave.actors.kinds

    for info in pkgutil.walk_packages(conclave.actors.__path__, "conclave.actors."):
        importlib.import_module(info.name)
    defining = {
        cls.__module__
        for cls in registered_kinds().values()
        if cls.__module__.startswith("conclave.actors.")
    }

    assert defining <= {module.__name__ for module in conclave.actors.kinds.DOMAIN_MODULES}
