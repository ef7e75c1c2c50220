"""What `/healthz` and `/readyz` answer, from facts the reactor gathers.

Pure: the reactor passes the Lease holder (when it is not the leader), the
commit in force, what is in flight and which watches are down; the answer
is the same for the same facts, and tested without a cluster or a thread.
"""

from __future__ import annotations

from collections.abc import Iterable

STALL_SECONDS = 60.0      # a reactor that has not turned for this long is stuck: restart it


def liveness(age: float) -> tuple[bool, str]:
    """(alive, why) for a reactor that last turned `age` seconds ago."""
    return (age < STALL_SECONDS, f"reactor last turned {age:.0f}s ago")


def readiness(*, holder: str | None, in_force: str | None, busy: str, down: Iterable[str]) -> tuple[bool, str, str]:
    """(ready, why for the log, what the body may say: no URLs, no RBAC errors).

    `holder` is the Lease holder when another replica leads (None: this one may
    act); the holder's name is the Lease's word, so it is cut and cleaned
    before it reaches a response body."""
    if holder is not None:
        shown = "".join(c for c in holder[:253] if c.isprintable()) or "nobody yet"
        said = f"not leader (lease held by {shown})"
        return False, said, said
    if in_force is None:
        return False, "no plan in force yet", ""
    commit = in_force[:12]
    if busy:
        # a rollout is applied but its health not yet confirmed: what runs may be about to be rolled back
        said = ("rollout of the head commit not verified yet" if busy == "rollout" else "rolling back")
        return False, f"{said} ({busy} of {commit} in progress)", said
    watching = sorted(down)
    if watching:
        return False, "not watching: " + "; ".join(watching), ""
    return True, f"ok: commit {commit}", ""
