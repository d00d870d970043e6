"""A message's repr, equality and hash are the ones attrs would write, though none is
compiled per class (compiling them was over half the cost of defining one).

Each spec compares a message with its twin declared with plain ``attrs.frozen``, whose
methods attrs generates, field feature by field feature.
"""

from __future__ import annotations

import attrs
import pytest

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


@message(kind="rt_test.compared")
class Compared(Message):
    name: str
    noted: str = attrs.field(default="", eq=False)
    word: str = attrs.field(default="", eq=str.lower)


@message(kind="rt_test.compared_more")
class ComparedMore(Compared):
    pass


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


def _compared_twin() -> type:
    @attrs.frozen(kw_only=True)
    class Compared:
        name: str
        noted: str = attrs.field(default="", eq=False)
        word: str = attrs.field(default="", eq=str.lower)

    return Compared


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


PAIRS = [
    ({"name": "a"}, {"name": "a"}),
    ({"name": "a"}, {"name": "b"}),
    ({"name": "a", "noted": "x"}, {"name": "a", "noted": "y"}),
    ({"name": "a", "word": "Yes"}, {"name": "a", "word": "yES"}),
    ({"name": "a", "word": "yes"}, {"name": "a", "word": "no"}),
]
"""Pairs of field values: the same, a compared field apart, a field left out of equality
apart, a field compared through its key alike and apart."""


@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_two_messages_are_equal_exactly_when_attrs_would_say_so(
    first: dict[str, str], second: dict[str, str]
) -> None:
    twin = _compared_twin()

    assert (Compared(**first) == Compared(**second)) is (twin(**first) == twin(**second))
    assert (Compared(**first) != Compared(**second)) is (twin(**first) != twin(**second))


@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_equal_messages_hash_alike(first: dict[str, str], second: dict[str, str]) -> None:
    one, other = Compared(**first), Compared(**second)

    assert one != other or hash(one) == hash(other)


def test_a_message_equals_no_message_of_another_class_with_the_same_fields() -> None:
    assert Compared(name="a") != ComparedMore(name="a")
    assert Compared(name="a") != _compared_twin()(name="a")
    assert {Compared(name="a"), ComparedMore(name="a")} == {
        ComparedMore(name="a"),
        Compared(name="a"),
    }


def test_no_registered_kind_carries_methods_compiled_for_it() -> None:
    # A class between a kind and Message with compiled methods would also show, compare or
    # hash only that class's fields.
    compiled = [
        (kind, method)
        for kind, cls in registered_kinds().items()
        for method in ("__repr__", "__eq__", "__hash__")
        if getattr(cls, method).__code__.co_filename.startswith("<attrs generated")
    ]

    assert compiled == []
