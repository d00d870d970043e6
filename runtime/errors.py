"""Errors the kernel raises to callers. Each message says what happened and what to do."""

from __future__ import annotations

from runtime.messages import Address


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
    """An ask's request was dead-lettered (dropped by a rule or crashed its handler)."""

    def __init__(self, address: Address, reason: str) -> None:
        super().__init__(f"request to {address} was not handled: {reason}")
        self.address = address
        self.reason = reason


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
