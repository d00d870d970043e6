"""Errors the kernel raises to callers. Each message says what happened and what to do."""

from __future__ import annotations

from conclave.runtime.messages import Address


class ConclaveRuntimeError(Exception):
    """Base of kernel errors."""


class MailboxFull(ConclaveRuntimeError):
    """A fail-fast mailbox was at capacity when a message arrived."""

    def __init__(self, address: Address, capacity: int) -> None:
        super().__init__(
            f"mailbox of {address} is full ({capacity} queued) and its overflow policy is "
            "fail_fast; slow the sender, raise the capacity, or use overflow='block'"
        )
        self.address = address
        self.capacity = capacity


class UnknownRecipient(ConclaveRuntimeError):
    def __init__(self, address: Address) -> None:
        super().__init__(f"no actor is registered at {address}; spawn it before sending to it")
        self.address = address


class RoutingRuleError(ConclaveRuntimeError):
    """A routing rule raised while deciding; the router itself keeps running."""

    def __init__(self, rule: str, exc: BaseException) -> None:
        super().__init__(f"routing rule {rule} failed: {type(exc).__name__}: {exc}")
        self.rule = rule


class RedirectLoop(ConclaveRuntimeError):
    pass


class AskTimeout(ConclaveRuntimeError):
    def __init__(self, address: Address, timeout: float) -> None:
        super().__init__(f"{address} did not reply within {timeout:g}s")
        self.address = address
        self.timeout = timeout


class Undeliverable(ConclaveRuntimeError):
    """A message will never be handled: an ask's request was dead-lettered (dropped by a rule,
    crashed its handler, its actor stopped), or a sender waited for room in a mailbox whose
    actor then retired."""

    def __init__(self, address: Address, reason: str) -> None:
        super().__init__(f"request to {address} was not handled: {reason}")
        self.address = address
        self.reason = reason


class CalleeStopped(Undeliverable):
    """The incarnation that took an ask's request out of its mailbox ended without replying.

    Like ``gen_server:call`` monitoring its callee: the ask fails as soon as the callee's
    incarnation ends (crash, graceful stop or cancellation) instead of waiting for a reply
    that cannot come. The request will not be handled again; asking again reaches the
    restarted incarnation, if any.
    """

    def __init__(self, address: Address, incarnation: int, ending: str) -> None:
        super().__init__(
            address,
            f"{address} (incarnation {incarnation}) {ending} without replying; the request "
            "was taken out of its mailbox and will not be handled again: ask again if the "
            "actor restarts, or treat it as failed",
        )
        self.incarnation = incarnation
        self.ending = ending


class SelfAsk(ConclaveRuntimeError):
    """An actor asked itself from the task that runs its ``started``/``handle``/``stopping``.

    The request would queue behind the message being handled, which waits for the reply:
    a deadlock. Raised at once instead.
    """

    def __init__(self, address: Address) -> None:
        super().__init__(
            f"{address} asked itself from inside its own started(), handle() or stopping(); "
            "the request would wait behind the message being handled forever. Call the code "
            "directly, tell yourself and continue when the message arrives, or ask from "
            "background work (context.start_soon), which your handler can answer"
        )
        self.address = address


class StartFailed(ConclaveRuntimeError):
    """An actor's ``started()`` (or its factory) raised: the incarnation never began
    handling mail.

    A restart would replay the same start from the same state, so it is not restarted: a
    temporary actor is retired, any other escalates (its supervisor gives up, like an OTP
    child whose ``init`` fails), up to :func:`open_actor_system`, which raises this.
    """

    def __init__(
        self, address: Address, incarnation: int, error: Exception, *, where: str = "started()"
    ) -> None:
        super().__init__(
            f"{address} crashed in {where} (incarnation {incarnation}): "
            f"{type(error).__name__}: {error}; fix what started() needs, or spawn it with "
            "restart=Restart.TEMPORARY if the system should go on without it"
        )
        self.address = address
        self.incarnation = incarnation
        self.error = error


class TeardownTimeout(ConclaveRuntimeError):
    """An incarnation's teardown hooks did not finish within their bound; they were cancelled."""

    def __init__(self, address: Address, incarnation: int, bound: float) -> None:
        super().__init__(
            f"the teardown hooks of {address} (incarnation {incarnation}) did not finish "
            f"within {bound:g}s and were cancelled; make them faster or raise the actor's "
            "kill_timeout"
        )
        self.address = address
        self.incarnation = incarnation
        self.bound = bound


class RestartIntensityExceeded(ConclaveRuntimeError):
    """A supervisor saw more restarts than its intensity allows and gave up (escalation)."""

    def __init__(self, supervisor: str, restarts: int, period: float, last: BaseException | None):
        cause = f"; last crash: {type(last).__name__}: {last}" if last is not None else ""
        super().__init__(
            f"supervisor {supervisor} exceeded {restarts} restarts in {period:g}s{cause}"
        )
        self.supervisor = supervisor
        self.last = last


class SystemClosed(ConclaveRuntimeError):
    pass
