"""Cron schedules: `check` passes what a Kubernetes CronJob accepts and nothing else."""

from __future__ import annotations

import pytest

from intentc.ir.cron import cron_problem

# What robfig/cron's standard parser (Kubernetes' CronJob validation) accepts.
ACCEPTED = [
    "0 2 * * *", "*/15 * * * *", "0 0 1 1 *", "30 2 ? JAN-DEC MON-FRI", "0 0 * * sun", "5/10 * * * *",
    "0 9-17/2 * * 1-5", "0,15,30,45 * * * *", "59 23 31 12 6", "*/100 * * * *",
    "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
    "@every 1h30m", "@every 90s", "@every 1.5h", "  0 2 * * *  ",
]

REJECTED = {
    "99 25 32 13 8": "minute '99', hour '25', day-of-month '32', month '13', day-of-week '8'",
    "*/0 * * * *": "minute '*/0'",
    "60 * * * *": "minute '60'",
    "0 24 * * *": "hour '24'",
    "0 0 0 * *": "day-of-month '0'",
    "5-3 * * * *": "minute '5-3'",
    "0 0 * * 7": "7 is out of range",
    "0 0 * * 1-7": "7 is out of range",
    "0 0 L * *": "day-of-month field cannot be read",
    "0 0 15W * *": "day-of-month field cannot be read",
    "0 0 * * 5L": "day-of-week field cannot be read",
    "0 0 * * MON#2": "day-of-week field cannot be read",
    "0 0 2 * * *": "5 fields",
    "0 2 * *": "5 fields",
    "": "5 fields",
    "every day": "5 fields",
    "TZ=UTC 0 2 * * *": "TZ= or CRON_TZ=",
    "CRON_TZ=Europe/Paris 0 2 * * *": "TZ= or CRON_TZ=",
    "@DAILY": "unknown macro",
    "@reboot": "unknown macro",
    "@every 0s": "Go duration",
    "@every soon": "Go duration",
    "0 0 31 2 *": "never run",
    "1," * 600 + "1 * * * *": "longer than 1024",
}


@pytest.mark.parametrize("expr", ACCEPTED)
def test_accepted(expr: str) -> None:
    assert cron_problem(expr) is None


@pytest.mark.parametrize("expr", sorted(REJECTED), ids=lambda e: e[:30] or "empty")
def test_rejected(expr: str) -> None:
    problem = cron_problem(expr)
    assert problem is not None and REJECTED[expr] in problem, problem
