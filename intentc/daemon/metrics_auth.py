"""Who may read `/metrics`: the API server decides, as for controller-runtime's secure metrics.

A scraper sends a bearer token (Prometheus: its ServiceAccount's).  The
daemon asks the API server who that is (TokenReview, authentication.k8s.io/v1)
and whether that user may `get` the non-resource URL `/metrics`
(SubjectAccessReview, authorization.k8s.io/v1) — the same two questions
`filters.WithAuthenticationAndAuthorization` asks, with the same answers:
401 without a token or with one the API server does not accept, 403 when
RBAC does not allow it, 500 when the API server could not be asked, 200
otherwise.  Bodies are one word; the user and RBAC's reason go to the log,
the token never does (it is kept only as a salted hash, as a cache key).

Results are cached, with controller-runtime's TTLs and the reasons for them:
an authentication (either way) for 60 s, so a deleted ServiceAccount's token
stops working within a minute; an allow for 5 min and a deny for 30 s, so a
scraper that was just granted access waits at most 30 s while a revoked one
keeps reading counters (nothing secret) for at most 5 min.  A scrape every
15 s per replica thus costs the API server about one review per scraper per
minute instead of two per scrape.  An API server that could not answer is not
cached (the next scrape asks again).  The caches are bounded (least recently
used out first), so a flood of random tokens costs reviews but not memory.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Generic, Hashable, Mapping, TypeVar

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
METRICS_PATH = "/metrics"
# A service account token is about 1 KiB; OIDC tokens with many groups run to a few.
MAX_TOKEN_BYTES = 16 * 1024

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True)
class Ttls:
    """Seconds a review's answer is reused (controller-runtime's values; see the module docstring)."""
    authenticated: float = 60.0
    unauthenticated: float = 60.0
    allowed: float = 300.0
    denied: float = 30.0


@dataclass(frozen=True)
class User:
    """What TokenReview said about a token: everything SubjectAccessReview needs to be asked."""
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Answer:
    """The HTTP status and one-word body for a request, and what the log may say (never the token)."""
    status: int
    body: str
    why: str = ""


class ReviewError(Exception):
    """The API server did not answer a review (unreachable, or refused us): a 500, not cached."""


class TtlCache(Generic[K, V]):
    """A bounded map whose entries expire; least recently used out first when full."""

    def __init__(self, max_entries: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries = max_entries
        self.clock = clock
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            if hit[0] <= self.clock():
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return hit[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        with self._lock:
            self._items[key] = (self.clock() + ttl, value)
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def bearer_token(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None when absent, of another
    scheme, empty, or longer than any real token (not worth a review)."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_BYTES or " " in token:
        return None
    return token


def _user(status: Mapping[str, Any]) -> User | None:
    if status.get("authenticated") is not True:
        return None
    raw = status.get("user") or {}
    name = str(raw.get("username") or "")
    if not name:
        return None
    extra = raw.get("extra") or {}
    return User(name, str(raw.get("uid") or ""), tuple(str(g) for g in raw.get("groups") or ()),
                tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in extra.items())))


class Reviewer:
    """TokenReview and SubjectAccessReview through `post(path, body) -> response`, cached.
    `post` raises ReviewError when the API server does not answer."""

    def __init__(self, post: Callable[[str, dict[str, Any]], Mapping[str, Any]], ttls: Ttls = Ttls(),
                 max_entries: int = 1024, clock: Callable[[], float] = time.monotonic) -> None:
        self.post = post
        self.ttls = ttls
        self._salt = secrets.token_bytes(16)
        self.users: TtlCache[bytes, tuple[User | None]] = TtlCache(max_entries, clock)
        self.decisions: TtlCache[User, tuple[bool, str]] = TtlCache(max_entries, clock)

    def _key(self, token: str) -> bytes:
        return hashlib.sha256(self._salt + token.encode("utf-8", "surrogateescape")).digest()

    def authenticate(self, token: str) -> User | None:
        key = self._key(token)
        cached = self.users.get(key)
        if cached is not None:
            return cached[0]
        review = self.post(TOKEN_REVIEWS, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                           "spec": {"token": token}})
        user = _user(review.get("status") or {})
        self.users.put(key, (user,), self.ttls.authenticated if user else self.ttls.unauthenticated)
        return user

    def authorize(self, user: User) -> tuple[bool, str]:
        """(allowed, RBAC's reason) for `get` on the non-resource URL /metrics."""
        cached = self.decisions.get(user)
        if cached is not None:
            return cached
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups),
                                "nonResourceAttributes": {"path": METRICS_PATH, "verb": "get"}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        review = self.post(ACCESS_REVIEWS, {"apiVersion": "authorization.k8s.io/v1",
                                            "kind": "SubjectAccessReview", "spec": spec})
        status = review.get("status") or {}
        decision = (status.get("allowed") is True, str(status.get("reason") or status.get("evaluationError") or ""))
        self.decisions.put(user, decision, self.ttls.allowed if decision[0] else self.ttls.denied)
        return decision

    def answer(self, authorization: str | None) -> Answer:
        """What a GET /metrics with this Authorization header gets (before the body)."""
        token = bearer_token(authorization)
        if token is None:
            return Answer(401, "Unauthorized", "no bearer token")
        try:
            user = self.authenticate(token)
        except ReviewError as e:
            return Answer(500, "Internal Server Error", f"TokenReview failed: {e}")
        if user is None:
            return Answer(401, "Unauthorized", "the API server did not accept the token")
        try:
            allowed, reason = self.authorize(user)
        except ReviewError as e:
            return Answer(500, "Internal Server Error", f"SubjectAccessReview for {user.name} failed: {e}")
        if not allowed:
            return Answer(403, "Forbidden", f"{user.name} may not get {METRICS_PATH}" + (f": {reason}" if reason else ""))
        return Answer(200, "", user.name)
