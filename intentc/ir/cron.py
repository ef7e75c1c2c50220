"""Cron schedules as a Kubernetes CronJob reads them.

Kubernetes parses `spec.schedule` with robfig/cron's standard parser: five
fields (minute hour day-of-month month day-of-week), `*`, `?`, ranges,
lists, steps, month and weekday names, the macros @yearly, @annually,
@monthly, @weekly, @daily, @midnight and @hourly, and `@every <duration>`.  A `TZ=` or `CRON_TZ=`
prefix is refused for new CronJobs ("use timeZone field instead").

Ranges and steps are checked by cronsim (a maintained parser), not by a
regex of ours.  cronsim also reads extensions that Kubernetes' parser does
not (`L`, `W`, `#`, a sixth field, 7 for Sunday): those are refused here
first, so `check` passes exactly what the API server takes.  One deliberate
difference: a day that never comes (`0 0 31 2 *`) is refused, since such a
CronJob would never run.
"""

from __future__ import annotations

import re
from datetime import datetime

from cronsim import CronSim, CronSimError

from intentc.diagnostics import excerpt

MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
MAX_LENGTH = 1024
FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")

_NUM = r"[0-9]+"
_MONTHS = r"JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC"
_DAYS = r"SUN|MON|TUE|WED|THU|FRI|SAT"


def _field(value: str) -> re.Pattern[str]:
    """robfig/cron's grammar of one field: comma-separated `*`, `?`, `a`, `a-b`, each with `/step`."""
    item = rf"(?:\*|\?|(?:{value})(?:-(?:{value}))?)(?:/[0-9]+)?"
    return re.compile(rf"{item}(?:,{item})*+", re.IGNORECASE)


_GRAMMAR = (_field(_NUM), _field(_NUM), _field(_NUM), _field(f"{_NUM}|{_MONTHS}"), _field(f"{_NUM}|{_DAYS}"))
_SEVEN = re.compile(r"(?<![0-9])7(?![0-9])")
_FIXED = datetime(2000, 1, 1)
_GO_DURATION = re.compile(r"(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|ms|s|m|h))++")      # cronsim needs a start; the verdict does not depend on it


def cron_problem(expr: str) -> str | None:
    """None when Kubernetes accepts `expr` as a CronJob schedule, else why not."""
    text = expr.strip()
    if len(text) > MAX_LENGTH:
        return f"a schedule longer than {MAX_LENGTH} characters is not read"
    if text.upper().startswith(("TZ=", "CRON_TZ=")):
        return "Kubernetes refuses a TZ= or CRON_TZ= prefix in a CronJob schedule"
    if text.startswith("@every"):
        every = text[len("@every"):].strip()
        return None if _GO_DURATION.fullmatch(every) and any(c in "123456789" for c in every) else \
            '@every takes a Go duration such as "1h30m" or "90s"'
    if text.startswith("@"):           # robfig/cron matches macros case-sensitively
        return None if text in MACROS else f"unknown macro; use one of {', '.join(sorted(MACROS))}"
    fields = text.split()
    if len(fields) != 5:
        return f"a schedule has 5 fields (minute hour day-of-month month day-of-week), found {len(fields)}"
    for name, grammar, value in zip(FIELDS, _GRAMMAR, fields):
        if not grammar.fullmatch(value):
            return f"the {name} field cannot be read by Kubernetes' cron parser"
    if _SEVEN.search(fields[4]):
        return "day-of-week runs from 0 (Sunday) to 6 in Kubernetes; 7 is out of range"
    standard = [f.replace("?", "*") for f in fields]      # robfig/cron reads `?` as `*`
    bad = [f"{name} {excerpt(value, 16)!r}" for i, (name, value) in enumerate(zip(FIELDS, fields))
           if not _valid([v if j == i else "*" for j, v in enumerate(standard)])]
    if bad:
        return "out of range or malformed: " + ", ".join(bad)
    if not _valid(standard):
        return "no date has this day of the month in these months: the CronJob would never run"
    return None


def _valid(fields: list[str]) -> bool:
    try:
        CronSim(" ".join(fields), _FIXED)
    except (CronSimError, ValueError, OverflowError):
        return False
    return True
