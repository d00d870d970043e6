"""JSON paths: every long string is found, left out of a copy without touching the
original, and found again by its pointer, whatever the keys hold (``~`` and ``/`` too)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conclave.runtime.json_paths import PointerError, locate, long_strings, pointer, without

_KEYS = st.text(alphabet="ab~/01", max_size=4)
_VALUES = st.recursive(
    st.text(alphabet="xy", max_size=6) | st.integers(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=12,
)


@given(st.dictionaries(_KEYS, _VALUES, max_size=4))
def test_every_long_string_is_found_by_its_pointer_and_left_out_of_a_copy(
    data: dict[str, Any],
) -> None:
    found = long_strings(data, 3)
    copy = without(data, [path for path, _ in found])

    for path, text in found:
        container, key = locate(data, pointer(path))
        assert container[key] == text
        copied, copied_key = locate(copy, pointer(path))
        assert copied[copied_key] is None
    assert [text for _, text in long_strings(copy, 3)] == []


@pytest.mark.parametrize("bad", ["no/slash", "/missing", "/list/9", "/list/x"])
def test_a_pointer_that_names_nothing_in_the_line_is_refused(bad: str) -> None:
    with pytest.raises(PointerError):
        locate({"list": ["a"]}, bad)
