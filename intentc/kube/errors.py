"""API errors as typed values the reconciler can act on, instead of HTTP codes.

`KubeError.from_status` reads the `Status` object the API server returns;
a 409 from server-side apply carries one cause per contested field whose
message names the other field manager (`conflict with "kubectl-edit"`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_MANAGER = re.compile(r'conflict with "([^"]+)"')


class KubeError(Exception):
    """Anything the API refused; `status` is the HTTP code (0 when none)."""

    def __init__(self, message: str, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason

    @staticmethod
    def from_status(status: int, body: bytes | str) -> "KubeError":
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            data: dict[str, Any] = json.loads(text)
        except ValueError:
            data = {"message": text.strip()[:500]}
        message = str(data.get("message") or f"HTTP {status}")
        reason = str(data.get("reason") or "")
        causes = (data.get("details") or {}).get("causes") or []
        if status == 404:
            return NotFound(message, status, reason)
        if status == 409 and reason == "Conflict" and causes:
            return ApplyConflict.from_causes(message, causes)
        if status == 409 and reason == "Conflict":
            return Outdated(message, status, reason)
        if status == 409:
            return AlreadyExists(message, status, reason)
        if status == 422:
            return Invalid(message, status, reason)
        if status in (401, 403):
            return AccessDenied(message, status, reason)
        return KubeError(message, status, reason)


class NotFound(KubeError):
    pass


class AlreadyExists(KubeError):
    pass


class Invalid(KubeError):
    @property
    def immutable(self) -> bool:
        """The change touches a field the API never lets change (e.g. a Job's
        pod template): the object has to be replaced, not patched."""
        return "field is immutable" in self.message


class AccessDenied(KubeError):
    pass


class Outdated(KubeError):
    """A write carried a resourceVersion the object no longer has: someone
    else wrote it first (optimistic concurrency); read again and retry."""


class Unreachable(KubeError):
    """No answer from the API server (refused, reset, timed out)."""


class ConfigError(KubeError):
    """The kubeconfig / context could not be loaded."""


@dataclass(frozen=True)
class FieldConflict:
    field: str
    managers: tuple[str, ...]
    message: str


class ApplyConflict(KubeError):
    """Server-side apply refused because other managers own fields we set."""

    def __init__(self, message: str, conflicts: tuple[FieldConflict, ...]) -> None:
        super().__init__(message, 409, "Conflict")
        self.conflicts = conflicts

    @property
    def managers(self) -> tuple[str, ...]:
        return tuple(sorted({m for c in self.conflicts for m in c.managers}))

    @classmethod
    def from_causes(cls, message: str, causes: list[dict[str, Any]]) -> "ApplyConflict":
        conflicts = tuple(
            FieldConflict(str(c.get("field", "")), tuple(_MANAGER.findall(str(c.get("message", "")))),
                          str(c.get("message", "")))
            for c in causes)
        return cls(message, conflicts)
