"""/healthz, /readyz and /metrics of the daemon's HTTP server (no cluster needed)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from intentc.daemon.http import HealthServer, parse_listen
from intentc.daemon.metrics import DaemonMetrics
from intentc.drift.detect import DriftClass


def get(port: int, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_probes_and_metrics() -> None:
    metrics = DaemonMetrics()
    state = {"ready": False}
    server = HealthServer("127.0.0.1:0", metrics, lambda: (True, "turning"),
                          lambda: (state["ready"], "ok" if state["ready"] else "no plan in force yet")).start()
    try:
        # terse bodies: the reasons go to the log, not to whoever reaches the port
        assert get(server.port, "/healthz")[::2] == (200, "ok\n")
        assert get(server.port, "/readyz")[::2] == (503, "not ready\n")
        state["ready"] = True
        assert get(server.port, "/readyz")[0] == 200
        assert get(server.port, "/other")[0] == 404

        metrics.set_counts({DriftClass.IN_SYNC: 7, DriftClass.MODIFIED: 2})
        metrics.reconcile_seconds.labels("event").observe(0.02)
        metrics.set_applied("a" * 40, "main", "git")
        metrics.rollbacks.inc()
        status, ctype, text = get(server.port, "/metrics")
        assert status == 200 and ctype.startswith("text/plain")
        got = samples(text)
        assert got[("intentc_drift_objects", (("drift_class", "modified"),))] == 2
        assert got[("intentc_drift_objects", (("drift_class", "in-sync"),))] == 7
        assert got[("intentc_drift_objects", (("drift_class", "orphan"),))] == 0
        assert got[("intentc_rollbacks_total", ())] == 1
        assert got[("intentc_last_applied_commit_info",
                    (("branch", "main"), ("commit", "a" * 40), ("source", "git")))] == 1
        assert got[("intentc_reconcile_duration_seconds_count", (("trigger", "event"),))] == 1
        assert got[("intentc_reconcile_duration_seconds_bucket", (("le", "0.05"), ("trigger", "event")))] == 1
    finally:
        server.stop()


def test_two_daemons_in_one_process_do_not_share_metrics() -> None:
    a, b = DaemonMetrics(), DaemonMetrics()
    a.rollbacks.inc()
    assert b"intentc_rollbacks_total 1.0" in a.exposition()
    assert b"intentc_rollbacks_total 0.0" in b.exposition()


@pytest.mark.parametrize("text,expected", [(":9090", ("0.0.0.0", 9090)), ("127.0.0.1:0", ("127.0.0.1", 0))])
def test_parse_listen(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["9090", "host:", ":http", ":70000"])
def test_parse_listen_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_listen(text)


def test_a_busy_listen_port_is_a_clear_exit_2(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """No traceback: the daemon says which address is taken and what to do."""
    import socket

    from typer.testing import CliRunner

    from intentc.cli import app

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n"
                          "users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                          "current-context: x\n")
    import logging
    handlers, level = logging.root.handlers[:], logging.root.level
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        try:
            res = CliRunner().invoke(app, ["daemon", "--repo", str(tmp_path), "--topology", "cluster.yaml",
                                           "--kubeconfig", str(kubeconfig), "--listen", f"127.0.0.1:{port}",
                                           "--workdir", str(tmp_path / "work")])
        finally:    # the daemon's logging setup wrote to the runner's stream, closed now
            logging.root.handlers[:], logging.root.level = handlers, level
    assert res.exit_code == 2, res.output
    assert f"127.0.0.1:{port}" in res.output and "Traceback" not in res.output


def test_readyz_body_carries_only_the_probes_public_phrase() -> None:
    """A follower says why it is not ready (an operator reads `/readyz`), but the
    logged detail (addresses, errors) stays out of the body."""
    said = {"answer": (False, "not watching: https://10.0.0.1:6443 refused", "")}
    server = HealthServer("127.0.0.1:0", DaemonMetrics(), lambda: (True, ""), lambda: said["answer"]).start()
    try:
        assert get(server.port, "/readyz")[::2] == (503, "not ready\n")
        said["answer"] = (False, "not leader (lease held by pod-b_1234)", "not leader (lease held by pod-b_1234)")
        assert get(server.port, "/readyz")[::2] == (503, "not ready: not leader (lease held by pod-b_1234)\n")
    finally:
        server.stop()


def test_leader_gauge_is_exposed() -> None:
    metrics = DaemonMetrics()
    metrics.leader.set(1)
    assert samples(metrics.exposition().decode())[("intentc_leader", ())] == 1
