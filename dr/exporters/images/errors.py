"""What the registry client raises. Errors carry their retry intent in their type:
`TemporaryError` (5xx, 429, connection failures) is retried with backoff, honouring
Retry-After; every other `RegistryError` is permanent."""

from __future__ import annotations


class RegistryError(Exception):
    """Permanent: retrying the same request gives the same answer."""


class NotFound(RegistryError):
    pass


class Unauthorized(RegistryError):
    pass


class DigestMismatch(RegistryError):
    """A registry served bytes that do not hash to the digest they were asked for."""


class TemporaryError(RegistryError):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
