"""How a failed model call is classified: retryable or not (`is_retryable`, by exception class
name, status code and message, whether it came from litellm, the direct path or a custom
backend), whether the endpoint failed rather than the request (`is_endpoint_failure`), and how
long the server asked us to wait (`retry_after_s`). Kept apart from the client so backends can
raise `LLMError` without importing it."""

from __future__ import annotations

import contextlib
import email.utils
import time

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})
_RETRYABLE_NAMES = frozenset({
    "RateLimitError", "Timeout", "APITimeoutError", "APIConnectionError",
    "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
})
_FATAL_NAMES = frozenset({
    "ContextWindowExceededError", "ContentPolicyViolationError", "AuthenticationError",
    "PermissionDeniedError", "NotFoundError", "BadRequestError", "UnprocessableEntityError",
    "UnsupportedParamsError", "BudgetExceededError", "InvalidRequestError",
    "PaymentRequiredError", "RejectedRequestError",
})
_FATAL_MESSAGES = ("Missing credentials", "api_key client option must be set")
"""Missing API keys, which litellm reports as an InternalServerError (a 500): no retry fixes
them."""


_ENDPOINT_NAMES = frozenset({
    "AuthenticationError", "PermissionDeniedError", "NotFoundError", "PaymentRequiredError",
    "BudgetExceededError",
})
ENDPOINT_STATUS = frozenset({401, 402, 403, 404})
"""Refusals of the endpoint itself (credentials, quota, an unknown model): the evaluator's
configuration, not anything the agent asked."""


class LLMError(Exception):
    """An LLM call that failed (after retries when the failure was transient)."""

    def __init__(self, message: str, retryable: bool, *, attempts: int = 1,
                 status_code: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.attempts = attempts
        self.status_code = status_code
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


def _headers_of(exc: BaseException) -> dict[str, str]:
    out: dict[str, str] = {}
    for source in (getattr(getattr(exc, "response", None), "headers", None),
                   getattr(exc, "headers", None),
                   getattr(exc, "litellm_response_headers", None)):
        if source is None:
            continue
        with contextlib.suppress(Exception):
            out.update({str(k).lower(): str(v) for k, v in source.items()})
    return out


def retry_after_s(exc: BaseException) -> float | None:
    """The server's `retry-after-ms` / `Retry-After` (seconds or an HTTP date), if any."""
    if isinstance(exc, LLMError) and exc.retry_after is not None:
        return exc.retry_after
    headers = _headers_of(exc)
    ms = headers.get("retry-after-ms")
    if ms is not None:
        with contextlib.suppress(ValueError):
            return max(0.0, float(ms) / 1000.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    return None


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_endpoint_failure(exc: BaseException, retryable: bool) -> bool:
    """Whether a call that failed for good failed at the model endpoint — unreachable,
    overloaded or timing out after every retry (`retryable`), or refusing the credentials,
    account or model it was given — rather than on what was asked of it (a context window
    exceeded, a content policy, a malformed request: those answer the agent's own request).
    The endpoint is the evaluator's infrastructure: a session it ended is not the agent's
    failure (`chains.run_one`)."""
    if retryable:
        return True
    if any(m in str(exc) for m in _FATAL_MESSAGES):
        return True
    if any(cls.__name__ in _ENDPOINT_NAMES for cls in type(exc).__mro__):
        return True
    return status_of(exc) in ENDPOINT_STATUS


def is_retryable(exc: BaseException) -> bool:
    """Transient failures worth another attempt; see the module docstring."""
    if isinstance(exc, LLMError):
        return exc.retryable
    if any(m in str(exc) for m in _FATAL_MESSAGES):
        return False
    for cls in type(exc).__mro__:
        if cls.__name__ in _FATAL_NAMES:
            return False
        if cls.__name__ in _RETRYABLE_NAMES:
            return True
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    status = status_of(exc)
    # an error for a 200 answer is a body that could not be parsed (litellm's own HTTP handler
    # reports it so; through the openai SDK it is a 500): an unusable response, retried
    return status is not None and (status in RETRYABLE_STATUS or status == 200)
