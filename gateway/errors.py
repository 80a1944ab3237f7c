"""Duet's one error hierarchy. Each error knows its HTTP status and OpenAI error type;
``error_body`` below writes the OpenAI body in one place, which the HTTP layer
(``gateway.api.errors``) and the endpoint picker's immediate responses (``gateway.epp``) send.

DuetError
 ├── ConfigError                 invalid duet.yaml (never reaches a client)
 └── RequestError                something the client should see
      ├── InvalidRequest         400 invalid_request_error (param named)
      │    └── ContextTooLong    400 prompt + max_tokens exceeds every replica's context
      ├── AuthenticationFailed   401
      ├── PermissionDenied       403
      ├── ModelNotFound          404
      ├── BodyTooLarge           413
      ├── RateLimited            429 (Retry-After)
      ├── UpstreamFailed         502
      ├── NoHealthyReplica       503 (Retry-After)
      ├── KeyStoreUnavailable    503 (Retry-After): a key could not be checked
      └── DeadlineExceeded       504
"""

from __future__ import annotations

import orjson


class DuetError(Exception):
    """Base of every error Duet raises on purpose."""


class ConfigError(DuetError):
    """A config file is invalid. ``path`` names where (``models.smollm2.variants.fast.kind``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


class RequestError(DuetError):
    status: int = 500
    error_type: str = "internal_error"
    code: str | None = None

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        retry_after_s: float | None = None,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code
        self.retry_after_s = retry_after_s
        # More response headers (a 429's x-ratelimit-*: gateway.access.headroom).
        self.headers = headers


class InvalidRequest(RequestError):
    status = 400
    error_type = "invalid_request_error"


class ContextTooLong(InvalidRequest):
    code = "context_length_exceeded"


class AuthenticationFailed(RequestError):
    status = 401
    error_type = "authentication_error"
    code = "invalid_api_key"


class PermissionDenied(RequestError):
    status = 403
    error_type = "permission_error"


class ModelNotFound(RequestError):
    status = 404
    error_type = "invalid_request_error"
    code = "model_not_found"


class BodyTooLarge(RequestError):
    status = 413
    error_type = "invalid_request_error"
    code = "request_too_large"


class RateLimited(RequestError):
    status = 429
    error_type = "rate_limit_error"
    code = "rate_limit_exceeded"


class UpstreamFailed(RequestError):
    status = 502
    error_type = "upstream_error"
    code = "upstream_failed"


class NoHealthyReplica(RequestError):
    status = 503
    error_type = "service_unavailable"
    code = "no_healthy_replica"


class KeyStoreUnavailable(RequestError):
    status = 503
    error_type = "service_unavailable"
    code = "key_store_unavailable"


class DeadlineExceeded(RequestError):
    status = 504
    error_type = "timeout_error"
    code = "deadline_exceeded"


def error_body(message: str, error_type: str, param: str | None = None, code: str | int | None = None) -> bytes:
    """The OpenAI error body."""
    return orjson.dumps({"error": {"message": message, "type": error_type, "param": param, "code": code}})
