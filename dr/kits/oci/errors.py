"""What the registry client raises. Errors carry their retry intent in their type:
`TemporaryError` (5xx, 429, connection failures: a dr.kits.retrying.Transient) is retried with
dr's one policy, honouring Retry-After; every other `RegistryError` is permanent."""

from __future__ import annotations

from dr.kits.retrying import Transient


class RegistryError(Exception):
    """Permanent: retrying the same request gives the same answer."""


class NotFound(RegistryError):
    pass


class Unauthorized(RegistryError):
    pass


class DigestMismatch(RegistryError):
    """A registry served bytes that do not hash to the digest they were asked for."""


class TemporaryError(RegistryError, Transient):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
