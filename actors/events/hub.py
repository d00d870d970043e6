"""EventHub: any number of live watchers of a run, none of which can slow or break it.

The hub is an event tap (it has ``record(event)``), so it goes wherever taps go:
``open_run(spec, taps=[hub])``, or ``drive(spec, hub)``, which binds it to the run (it then
hears plain deliveries only while a subscriber asks for them:
:attr:`EventHub.hears_deliveries`). Each event is offered to the subscribers that asked for
its class, in the recording actor's task, without ever waiting:

* a **channel subscriber** (:meth:`EventHub.subscribe`) gets a bounded trio receive channel.
  When its buffer is full it is dropped on the spot: its channel ends (after the events
  already buffered) and a :class:`SubscriberDropped` event is recorded. A watcher that
  falls behind loses its stream; the run never waits for it.
* a **synchronous subscriber** (:meth:`EventHub.subscribe_sync`) is a callable run inline,
  for UIs in the same thread that render quickly (stdout, a prompt-toolkit app). A callable
  that raises is removed and recorded the same way; the error never reaches the actor.

One hub serves one run or a whole session. It is used from the trio thread only.
"""

from __future__ import annotations

import enum
import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, Generic, Self, TypeVar, overload

import attrs
import trio

from conclave.actors.events.base import DomainEvent
from conclave.runtime import Delivered, Event, message

__all__ = [
    "DEFAULT_BUFFER",
    "DropCause",
    "EventHub",
    "HubStatistics",
    "SubscriberDropped",
    "Subscription",
    "SyncSubscription",
]

E = TypeVar("E", bound=Event)

DEFAULT_BUFFER = 1024
"""Events a channel subscriber may have unread before it is dropped."""


class DropCause(enum.Enum):
    FELL_BEHIND = "fell_behind"
    """Its buffer was full: it read more slowly than the run produced events."""
    RAISED = "raised"
    """A synchronous subscriber raised."""


@message()
class SubscriberDropped(Event):
    """The hub stopped serving a subscriber. Not a :class:`DomainEvent`: it is about who
    watches the run, not about the run; ask for it by class to see it."""

    subscriber: str
    cause: DropCause
    detail: str
    """The buffer size that overflowed, or the error the subscriber raised."""
    delivered: int
    """Events it received before it was dropped."""


@attrs.frozen(kw_only=True)
class HubStatistics:
    subscribers: int
    """Subscribers being served now."""
    recorded: int
    """Events offered to the hub, whether anyone wanted them or not."""
    delivered: int
    """Events handed to subscribers (one event to three subscribers counts three)."""
    dropped: int
    """Subscribers dropped because their buffer was full."""
    failed: int
    """Synchronous subscribers removed because they raised."""
    closed: bool


class _ClosedOnExit(ABC):
    """``with x:`` closes ``x`` on leaving the block, however it ends."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class _Subscriber:
    """What the hub keeps per subscriber."""

    __slots__ = ("active", "delivered", "kinds", "name", "owner")

    def __init__(
        self,
        name: str,
        kinds: tuple[type[Event], ...],
        owner: _Served[Any],
    ) -> None:
        self.name = name
        self.kinds = kinds
        self.owner = owner
        self.active = True
        self.delivered = 0

    def wants(self, cls: type[Event]) -> bool:
        return issubclass(cls, self.kinds)


class EventHub(_ClosedOnExit):
    """Fans recorded events out to subscribers; see the module docstring.

    ``bind(record)`` says where the hub records its own events (:class:`SubscriberDropped`):
    the actor system's ``record``, so they reach the event log and come back through the
    hub to subscribers that asked for them. Unbound, they go to the hub's subscribers only.
    """

    def __init__(self) -> None:
        self._subscribers: list[_Subscriber] = []
        self._routes: dict[type[Event], tuple[_Subscriber, ...]] = {}
        self._names = itertools.count(1)
        self._sink: Callable[[Event], None] | None = None
        self._on_hearing_changed: Callable[[], None] | None = None
        self._closed = False
        self._recorded = 0
        self._delivered = 0
        self._dropped = 0
        self._failed = 0

    # ------------------------------------------------------------------ subscribing

    @overload
    def subscribe(
        self, kinds: None = None, *, buffer: int = DEFAULT_BUFFER, name: str | None = None
    ) -> Subscription[DomainEvent]: ...

    @overload
    def subscribe(
        self, kinds: Iterable[type[E]], *, buffer: int = DEFAULT_BUFFER, name: str | None = None
    ) -> Subscription[E]: ...

    def subscribe(
        self,
        kinds: Iterable[type[Event]] | None = None,
        *,
        buffer: int = DEFAULT_BUFFER,
        name: str | None = None,
    ) -> Subscription[Any]:
        """A receive channel of the events of ``kinds`` (classes; subclasses count; default:
        every :class:`DomainEvent`) from now on. Use it as a context manager: leaving it
        unsubscribes. The channel ends (``EndOfChannel`` after the buffered events) when the
        hub closes or drops it; :attr:`Subscription.dropped` then says why."""
        if type(buffer) is not int or buffer < 1:
            raise ValueError(
                f"buffer must be a whole number of events >= 1, got {buffer!r}; a subscriber "
                "that may fall behind needs room, and an unbounded one could grow without limit"
            )
        send, receive = trio.open_memory_channel[Event](buffer)
        subscription: Subscription[Any] = Subscription(self, receive, buffer)
        subscriber = self._add(kinds, name, subscription)
        subscription._attach(subscriber, send)
        self._subscribers_changed()
        return subscription

    @overload
    def subscribe_sync(
        self,
        callback: Callable[[DomainEvent], object],
        kinds: None = None,
        *,
        name: str | None = None,
    ) -> SyncSubscription[DomainEvent]: ...

    @overload
    def subscribe_sync(
        self,
        callback: Callable[[E], object],
        kinds: Iterable[type[E]],
        *,
        name: str | None = None,
    ) -> SyncSubscription[E]: ...

    def subscribe_sync(
        self,
        callback: Callable[[Any], object],
        kinds: Iterable[type[Event]] | None = None,
        *,
        name: str | None = None,
    ) -> SyncSubscription[Any]:
        """Call ``callback(event)`` inline for each event of ``kinds`` (as :meth:`subscribe`).
        It runs in the recording actor's task, so it must be quick and must not block; one
        that raises is removed and recorded. Use the result as a context manager, or
        ``close()`` it, to unsubscribe."""
        subscription: SyncSubscription[Any] = SyncSubscription(self, callback)
        subscription._subscriber = self._add(kinds, name, subscription)
        self._subscribers_changed()
        return subscription

    def _add(
        self,
        kinds: Iterable[type[Event]] | None,
        name: str | None,
        owner: _Served[Any],
    ) -> _Subscriber:
        if self._closed:
            raise trio.ClosedResourceError(
                "this event hub is closed (its run or session is over); subscribe to the hub "
                "of a live run"
            )
        wanted = (DomainEvent,) if kinds is None else tuple(kinds)
        for cls in wanted:
            if not (isinstance(cls, type) and issubclass(cls, Event)):
                raise TypeError(f"kinds must be event classes (subclasses of Event), got {cls!r}")
        subscriber = _Subscriber(name or f"subscriber-{next(self._names)}", wanted, owner)
        self._subscribers.append(subscriber)
        self._routes.clear()
        return subscriber

    def _remove(self, subscriber: _Subscriber) -> None:
        if not subscriber.active:
            return
        subscriber.active = False
        self._subscribers.remove(subscriber)
        self._routes.clear()
        subscriber.owner._end()
        self._subscribers_changed()

    def _subscribers_changed(self) -> None:
        """Called once a subscription is whole (attached, or ended)."""
        if self._on_hearing_changed is not None:
            self._on_hearing_changed()

    def bind(
        self,
        record: Callable[[Event], None],
        *,
        on_hearing_changed: Callable[[], None] | None = None,
    ) -> None:
        """Record the hub's own events with ``record`` (the actor system's), and call
        ``on_hearing_changed`` (the system's ``refresh_taps``) whenever a subscriber comes
        or goes, since :attr:`hears_deliveries` may then change."""
        self._sink = record
        self._on_hearing_changed = on_hearing_changed

    def unbind(self) -> None:
        """Let go of :meth:`bind`'s callables: the run they belong to has ended (a hub kept
        for the next run, the REPL's or a chat's, would otherwise keep the last run's actor
        system alive, and tell it of every subscriber that comes or goes)."""
        self._sink = None
        self._on_hearing_changed = None

    @property
    def hears_deliveries(self) -> bool:
        """Whether a subscriber asked for plain deliveries (:class:`~runtime.Delivered`, or
        a class above it): only then does a run build them for the hub
        (:func:`~runtime.eventlog.hears_deliveries`). None of Conclave's own subscribers does.
        A hub that cannot say when that changes (bound without ``on_hearing_changed``, or
        not bound: a plain tap) hears them all, as every tap did before."""
        if self._on_hearing_changed is None:
            return True
        return any(s.wants(Delivered) for s in self._subscribers)

    # ------------------------------------------------------------------ delivering

    def record(self, event: Event) -> None:
        """Offer ``event`` to its subscribers. Never blocks and never raises."""
        self._recorded += 1
        cls = type(event)
        subscribers = self._routes.get(cls)
        if subscribers is None:
            subscribers = self._routes[cls] = tuple(s for s in self._subscribers if s.wants(cls))
        if not subscribers:
            return
        drops: list[SubscriberDropped] = []
        for subscriber in subscribers:
            if not subscriber.active:
                continue  # removed by an earlier subscriber's callback, during this event
            drop = subscriber.owner._offer(event)
            if drop is None:
                subscriber.delivered += 1
                self._delivered += 1
                continue
            cause, detail = drop
            dropped = SubscriberDropped(
                at=event.at,
                subscriber=subscriber.name,
                cause=cause,
                detail=detail,
                delivered=subscriber.delivered,
            )
            if cause is DropCause.FELL_BEHIND:
                self._dropped += 1
            else:
                self._failed += 1
            subscriber.owner.dropped = dropped
            self._remove(subscriber)
            drops.append(dropped)
        # Recorded after the fan-out: through the system they come back into this method.
        for dropped in drops:
            (self._sink or self.record)(dropped)

    # ------------------------------------------------------------------ lifetime

    def statistics(self) -> HubStatistics:
        return HubStatistics(
            subscribers=len(self._subscribers),
            recorded=self._recorded,
            delivered=self._delivered,
            dropped=self._dropped,
            failed=self._failed,
            closed=self._closed,
        )

    def close(self) -> None:
        """End every subscription (channel subscribers read what they have buffered, then
        ``EndOfChannel``) and refuse new ones, and let go of :meth:`bind`'s ``record`` (the
        run's actor system, which a closed hub kept alive for as long as it was kept: a
        server's finished runs). Idempotent."""
        self._closed = True
        for subscriber in list(self._subscribers):
            self._remove(subscriber)
        self.unbind()


_Outcome = tuple[DropCause, str] | None
"""Why a subscriber cannot take an event, or ``None`` if it took it."""


class _Served(_ClosedOnExit, Generic[E]):
    """What every subscription is to the hub: it takes events (:meth:`_offer`), may be let
    go (:meth:`_end`), and unsubscribes on ``close()`` or on leaving ``with``."""

    def __init__(self, hub: EventHub) -> None:
        self._hub = hub
        self.dropped: SubscriberDropped | None = None
        """Why the hub stopped serving this subscription (its buffer was full, or its
        callback raised), if it did."""
        self._subscriber: _Subscriber | None = None

    @abstractmethod
    def _offer(self, event: Event) -> _Outcome:
        """Hand ``event`` over without waiting."""

    def _end(self) -> None:
        """The hub lets go of this subscription (it has nothing of its own to end)."""

    def close(self) -> None:
        """Unsubscribe. Idempotent."""
        if self._subscriber is not None:
            self._hub._remove(self._subscriber)


class Subscription(_Served[E], trio.abc.ReceiveChannel[E]):
    """A channel subscriber's receive channel. ``with sub:`` or ``async with sub:``, or
    ``close()``, unsubscribes. Iterating ends when the hub closes or drops it."""

    def __init__(self, hub: EventHub, receive: trio.MemoryReceiveChannel[E], buffer: int) -> None:
        super().__init__(hub)
        self._receive = receive
        self.buffer = buffer
        self._send: trio.MemorySendChannel[E] | None = None

    def _attach(self, subscriber: _Subscriber, send: trio.MemorySendChannel[E]) -> None:
        self._subscriber = subscriber
        self._send = send

    def _offer(self, event: Event) -> _Outcome:
        assert self._send is not None
        try:
            self._send.send_nowait(event)  # type: ignore[arg-type]
        except trio.WouldBlock:
            return DropCause.FELL_BEHIND, f"its buffer of {self.buffer} events was full"
        return None

    def _end(self) -> None:
        """The hub lets go: the reader gets what is buffered, then ``EndOfChannel``."""
        if self._send is not None:
            self._send.close()

    async def receive(self) -> E:
        return await self._receive.receive()

    def receive_nowait(self) -> E:
        return self._receive.receive_nowait()

    def close(self) -> None:
        """Unsubscribe and discard whatever is buffered. Idempotent."""
        super().close()
        self._receive.close()

    async def aclose(self) -> None:
        self.close()
        await trio.lowlevel.checkpoint()


class SyncSubscription(_Served[E]):
    """A synchronous subscriber; ``with sub:`` or ``close()`` unsubscribes."""

    def __init__(self, hub: EventHub, callback: Callable[[E], object]) -> None:
        super().__init__(hub)
        self._callback = callback

    def _offer(self, event: Event) -> _Outcome:
        try:
            self._callback(event)  # type: ignore[arg-type]
        except Exception as exc:
            return DropCause.RAISED, f"{type(exc).__name__}: {exc}"
        return None
