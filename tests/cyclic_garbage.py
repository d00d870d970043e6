"""What only the cycle collector can free: for specs that a finished run leaves nothing to it."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused", "cyclic_garbage"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic pass within (one could free the very cycles a spec looks for), and what
    was already garbage collected first, so a spec sees only what its own block left."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def cyclic_garbage() -> Counter[str]:
    """Collect now and count, by ``module.qualname`` of their class, the objects found
    unreachable (in reference cycles, or reachable only from them); they are then freed."""
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage)
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
    gc.collect()  # what DEBUG_SAVEALL kept is still cyclic: free it now
    return found
