"""Outputs for machines and operators: drift as GitHub annotations, the daemon's
JSON log lines, and what `apply` reports while it waits (no cluster needed)."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from intentc.cli import app
from intentc.cli.drift import report_github
from intentc.daemon.logformat import JsonFormatter, LogFormat, LogLevel, configure
from intentc.drift.detect import Change, DriftClass, Finding, Report
from intentc.pipeline import check
from intentc.reconcile.health import Health, HealthStatus
from intentc.reconcile.diff import Pair
from intentc.reconcile.sync import ApplyOptions, Reconciler, _Run, _State, _Unit
from intentc.objectmeta import ObjectRef

ROOT = Path(__file__).parents[1]


# -- drift --format github -----------------------------------------------------

def test_drift_annotations_sit_on_the_declarations() -> None:
    program = check([str(ROOT / "intents")], jobs=1, use_cache=False).program
    intent = program.intents[0]
    tenant = program.tenants[0]
    job = ObjectRef("batch/v1", "Job", tenant.name, intent.name)
    quota = ObjectRef("v1", "ResourceQuota", tenant.name, "quota")
    stray = ObjectRef("v1", "ConfigMap", "default", "left-over")
    report = Report((
        Finding(job, DriftClass.MODIFIED, "changed by kubectl-edit", intent=intent.name, tenant=tenant.name,
                changes=(Change("spec.parallelism", 1, 4, "kubectl-edit"),)),
        Finding(quota, DriftClass.MISSING, "not on the cluster", tenant=tenant.name),
        Finding(stray, DriftClass.ORPHAN, "labelled managed-by=intentc, not desired"),
        Finding(ObjectRef("v1", "Namespace", "", tenant.name), DriftClass.IN_SYNC, "in sync"),
    ))
    lines = report_github(report, "prod", "a" * 40, program).splitlines()
    assert lines[0] == ("::notice title=intentc drift%3A target prod%2C commit aaaaaaaaaaaa::"
                        "drift: 1 modified, 1 missing, 1 orphan; 1 in sync")
    assert len(lines) == 4                                   # in-sync objects are not annotated
    s = intent.span
    assert lines[1].startswith(f"::error file={s.file},line={s.line},col={s.column},title=intentc drift%3A modified")
    assert lines[1].endswith("changed by kubectl-edit%0Aspec.parallelism: 1 -> 4 (by kubectl-edit)")
    t = tenant.span
    assert lines[2].startswith(f"::error file={t.file},line={t.line},col={t.column},title=intentc drift%3A missing")
    assert lines[3].startswith("::warning title=intentc drift%3A orphan ConfigMap")     # no declaration: on the run


# -- daemon --log-format json --------------------------------------------------

def test_json_log_lines() -> None:
    record = logging.LogRecord("intentc.daemon", logging.WARNING, __file__, 1, "apply failed: %s", ("timeout",), None)
    record.commit = "abc123"
    doc = json.loads(JsonFormatter().format(record))
    assert doc["level"] == "warning" and doc["logger"] == "intentc.daemon"
    assert doc["msg"] == "apply failed: timeout" and doc["commit"] == "abc123"
    assert doc["time"].endswith("+00:00")
    try:
        raise ValueError("boom")
    except ValueError:
        import sys
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    assert "ValueError: boom" in json.loads(JsonFormatter().format(record))["exception"]


def test_configure_installs_one_stderr_handler(monkeypatch: Any) -> None:
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure(LogLevel.INFO, LogFormat.JSON)
        logging.getLogger("intentc.daemon").debug("hidden")
        logging.getLogger("intentc.daemon").info("serving on port %d", 9090)
        lines = stream.getvalue().splitlines()
        assert len(lines) == 1 and json.loads(lines[0])["msg"] == "serving on port 9090"
        configure(LogLevel.DEBUG, LogFormat.TEXT)
        logging.getLogger("intentc.daemon").debug("now shown")
        assert stream.getvalue().splitlines()[-1].endswith("DEBUG intentc.daemon: now shown")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])


def test_daemon_rejects_an_unknown_log_format() -> None:
    res = CliRunner().invoke(app, ["daemon", "--repo", ".", "-t", "t.yaml", "--log-format", "xml"])
    assert res.exit_code == 2 and "xml" in res.output


# -- apply: what it says while waiting ------------------------------------------

class _Jobs:
    """A cluster where the n-th Job completes at its n-th look."""

    def __init__(self, refs: list[ObjectRef]) -> None:
        self.refs = refs
        self.looks = {r: 0 for r in refs}

    def get(self, ref: ObjectRef) -> dict[str, Any]:
        self.looks[ref] += 1
        done = self.looks[ref] > self.refs.index(ref)
        conditions = [{"type": "Complete", "status": "True"}] if done else []
        return {"kind": "Job", "spec": {"completions": 1}, "status": {"conditions": conditions}}


def test_apply_reports_progress_while_it_waits() -> None:
    """Created intents that are not healthy yet: every poll reports how many have ended."""
    refs = [ObjectRef("batch/v1", "Job", "team-a", n) for n in ("a", "b", "c")]
    heard: list[tuple[str, int, int]] = []
    clock = [0.0]
    reconciler = Reconciler(_Jobs(refs), ApplyOptions(workers=1), sleep=lambda s: clock.__setitem__(0, clock[0] + s),
                            monotonic=lambda: clock[0], progress=lambda *a: heard.append(a))  # type: ignore[arg-type]
    units = {}
    for r in refs:
        u = _Unit(r.name, r.name, 4, [Pair(r, None, None, False)])
        u.state, u.deadline = _State.RUNNING, 100.0
        units[r.name] = u
    run = _Run(None, None, None, [])  # type: ignore[arg-type]   # nothing is written: every intent is created
    run.health = {r: Health(HealthStatus.PROGRESSING) for r in refs}
    assert reconciler._release(units, run) == ""
    assert [done for _, done, _ in heard] == [0, 1, 2]
    assert {total for _, _, total in heard} == {3}
    assert heard[0][0] == "waves: 3 running" and heard[-1][0] == "waves: 1 running"
