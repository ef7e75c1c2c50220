"""What /healthz and /readyz answer (daemon/probes.py): pure, from plain facts."""

from __future__ import annotations

from intentc.daemon.probes import STALL_SECONDS, liveness, readiness

COMMIT = "0123456789abcdef" * 2 + "01234567"


def ready(holder: str | None = None, in_force: str | None = COMMIT, busy: str = "",
          down: tuple[str, ...] = ()) -> tuple[bool, str, str]:
    return readiness(holder=holder, in_force=in_force, busy=busy, down=down)


def test_a_reactor_that_stopped_turning_is_not_alive() -> None:
    assert liveness(3.4) == (True, "reactor last turned 3s ago")
    assert liveness(STALL_SECONDS - 0.5)[0]
    assert liveness(STALL_SECONDS) == (False, "reactor last turned 60s ago")


def test_a_follower_is_not_ready_and_says_who_leads() -> None:
    assert ready(holder="pod-b") == (False, "not leader (lease held by pod-b)", "not leader (lease held by pod-b)")
    assert ready(holder="")[2] == "not leader (lease held by nobody yet)"
    # the holder is the Lease's word: cut, and nothing unprintable reaches the body
    said = ready(holder="x\n\x1b[2J" + "y" * 400)[2]
    assert said == "not leader (lease held by x[2J" + "y" * 247 + ")"


def test_ready_only_with_a_plan_in_force_and_nothing_in_flight() -> None:
    assert ready(in_force=None) == (False, "no plan in force yet", "")
    assert ready(busy="rollout") == (False, "rollout of the head commit not verified yet (rollout of "
                                            "0123456789ab in progress)", "rollout of the head commit not verified yet")
    assert ready(busy="rollback") == (False, "rolling back (rollback of 0123456789ab in progress)", "rolling back")
    assert ready() == (True, "ok: commit 0123456789ab", "")


def test_a_watch_that_is_down_makes_it_unready_without_saying_why_in_the_body() -> None:
    # the reasons (URLs, RBAC errors) go to the log only, sorted so the line is stable
    assert ready(down=("v1/Service: 403", "apps/v1/Deployment: timed out")) == \
        (False, "not watching: apps/v1/Deployment: timed out; v1/Service: 403", "")
