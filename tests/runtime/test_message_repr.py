"""A message's repr is the one attrs would write, though it is not compiled per class.

Each spec compares a message with its twin declared with plain ``attrs.frozen``, whose repr
attrs generates, field feature by field feature.
"""

from __future__ import annotations

import attrs

import conclave.actors.kinds  # noqa: F401  (registers every kind the domain defines)
from conclave.runtime import Message, message
from conclave.runtime.messages import registered_kinds
from tests.runtime.helpers import Note


@message(kind="rt_test.repr_shown")
class Shown(Message):
    text: str
    hidden: str = attrs.field(default="h", repr=False)
    count: int = attrs.field(default=3, repr=lambda n: f"<{n}>")
    derived: int = attrs.field(init=False, default=7)
    inner: Message | None = None


@message(kind="rt_test.repr_cyclic")
class Cyclic(Message):
    items: list[object] = attrs.field(factory=list)


def _twins() -> tuple[type, type]:
    """``Shown`` and ``Cyclic`` as attrs writes them (same names, same fields)."""

    @attrs.frozen(kw_only=True)
    class Shown:
        text: str
        hidden: str = attrs.field(default="h", repr=False)
        count: int = attrs.field(default=3, repr=lambda n: f"<{n}>")
        derived: int = attrs.field(init=False, default=7)
        inner: Message | None = None

    @attrs.frozen(kw_only=True)
    class Cyclic:
        items: list[object] = attrs.field(factory=list)

    return Shown, Cyclic


def test_a_message_repr_shows_its_fields_as_attrs_writes_them() -> None:
    twin, _ = _twins()

    shown = repr(Shown(text="a\n'b'", inner=Note(text="n")))

    assert shown == repr(twin(text="a\n'b'", inner=Note(text="n")))
    assert shown == "Shown(text=\"a\\n'b'\", count=<3>, derived=7, inner=Note(text='n'))"


def test_a_message_that_contains_itself_is_written_with_an_ellipsis_inside() -> None:
    _, twin = _twins()
    cyclic, its_twin = Cyclic(), twin()
    cyclic.items.append(cyclic)
    its_twin.items.append(its_twin)

    assert repr(cyclic) == repr(its_twin) == "Cyclic(items=[...])"


def test_no_registered_kind_carries_a_repr_compiled_for_it() -> None:
    # Compiling one cost a third of defining the class. A class between a kind and Message
    # with a compiled repr would also show only that class's fields.
    compiled = [
        kind
        for kind, cls in registered_kinds().items()
        if cls.__repr__.__code__.co_filename.startswith("<attrs generated")
    ]

    assert compiled == []
