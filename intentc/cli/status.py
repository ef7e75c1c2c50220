"""`intentc status`: every intent's phase and ETA, read from the cluster and re-planned on it.

Works without the daemon: the intents are compiled and planned here as
`intentc plan` plans them (the preview `apply` released them by), the
cluster is read through `intentc/kube` (Jobs, Kueue Workloads, Pods,
Nodes), and `intentc.forecast` — pure — says what happened and re-plans
what has not started on the live state.  The clock is read here, once per
round, and handed to the forecast.
"""

from __future__ import annotations

import enum
import json
import time
from typing import Any, Callable

import typer

from intentc.cli.app import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, app, emit_diagnostics
from intentc.cli.common import (DiagnosticsFormat, Exclude, Jobs, KubeContext, Kubeconfig, OnlyTopologyNodes, Paths,
                                Seed, TopologyFile, declared, duration_option, format_option, no_intents_or_exit,
                                paths_or_exit, read_cluster_or_exit)
from intentc.diagnostics import OutputFormat, has_errors, sorted_diagnostics


class StatusFormat(str, enum.Enum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"


@app.command(epilog="""Examples:

  intentc status intents/ -t clusters/prod.yaml --context prod-eu

  intentc status intents/ -t clusters/prod.yaml --kubeconfig ~/.kube/prod -o json

  intentc status intents/ -t clusters/prod.yaml --context prod-eu --watch --interval 10s

Per intent: PHASE (Queued, Admitted, Running, Succeeded, Failed, Blocked),
PLANNED START, START (actual; `~` marks the expected start of one that has
not started), ETA (expected end), BEHIND (how far behind the plan; `-` is
ahead) and REASON.  Times are plan time, as `intentc plan` prints them,
counted from when the first of the intents' Jobs was created; -o json and
-o yaml give them as UTC times.  A job running past its declared
`duration` is schedule drift: its end is taken as now and the intents that
wait for it are pushed.  What has not started is planned again on the
cluster as it is (nodes NotReady, cordoned or tainted, GPUs held by other
pods).  Exit 1 when an intent failed or is blocked, or the intents have
errors; 2 when the cluster cannot be read.
""")
def status(
    paths: Paths,
    topology: TopologyFile,
    format: StatusFormat = format_option(StatusFormat.TABLE, "table: one row per intent; json, yaml: "
                                                             "the forecast with UTC times."),
    kubeconfig: Kubeconfig = None,
    context: KubeContext = None,
    watch: bool = typer.Option(False, "--watch", help="Read the cluster again and print again every --interval."),
    interval: float = duration_option("5s", "--interval", "Time between two reads with --watch.", minimum=0.1),
    seed: Seed = 0,
    only_topology_nodes: OnlyTopologyNodes = False,
    diagnostics_format: DiagnosticsFormat = OutputFormat.TEXT,
    jobs: Jobs = 0,
    exclude: Exclude = None,
) -> None:
    """Show every intent's phase, planned and actual start, ETA and how far behind plan it is, from
    the cluster, re-planning what has not started on what the cluster has now."""
    from intentc.pipeline import Driver, Request, Stage

    paths_or_exit(paths, diagnostics_format, to_stderr=True)
    driver = Driver(paths, jobs or None, exclude or ())
    topo = driver.topology(str(topology))       # read before the check: an unreadable one ends the run
    if topo.loaded is None:
        sources = {topology.as_posix(): topo.text} if topo.text is not None else {}
        emit_diagnostics(sorted_diagnostics(topo.diagnostics), diagnostics_format, sources, to_stderr=True)
        raise typer.Exit(EXIT_USAGE if topo.unreadable else EXIT_FINDINGS)
    result = driver.run(Request(str(topology), seed=seed), Stage.PLAN).result
    assert result is not None and result.program is not None and result.plan is not None
    assert result.topology is not None and result.policies is not None
    program, the_plan, loaded, policies = result.program, result.plan, result.topology, result.policies
    diags = list(result.diagnostics)
    emit_diagnostics(diags, diagnostics_format, result.sources, to_stderr=True)
    no_intents_or_exit(paths, declared(program), diags)

    def once() -> int:
        forecast = _read_and_forecast(kubeconfig, context, only_topology_nodes, program, the_plan, loaded,
                                      seed, policies)
        typer.echo(_render(forecast, format), nl=False)
        troubled = any(f.phase.value in ("Failed", "Blocked") for f in forecast.intents)
        return EXIT_FINDINGS if troubled or has_errors(diags) else EXIT_OK

    code = once()
    if watch:
        _repeat(once, interval, time.sleep, separator=lambda: typer.echo("---" if format is StatusFormat.YAML else ""))
    raise typer.Exit(code)


def _repeat(once: Callable[[], int], interval: float, sleep: Callable[[float], None],
            separator: Callable[[], None], rounds: int | None = None) -> None:
    """--watch: wait, print a separator and the forecast again, until interrupted (or `rounds`)."""
    done = 0
    while rounds is None or done < rounds:
        sleep(interval)
        separator()
        once()
        done += 1


def _read_and_forecast(kubeconfig: str | None, context: str | None, only_topology_nodes: bool, program: Any,
                       the_plan: Any, loaded: Any, seed: int, policies: Any) -> Any:
    """Read the cluster once (exit 2 when it cannot be read) and forecast on it, `now` being
    the moment the read ended."""
    from intentc.forecast.core import on_cluster
    from intentc.kube.forecast_state import read_forecast_state

    state = read_cluster_or_exit(kubeconfig, context, read_forecast_state, "")
    return on_cluster(program, the_plan, loaded, state.nodes, state.pods, state.jobs, state.workloads, time.time(),
                      seed, policies, only_topology_nodes)


def _render(forecast: Any, format: StatusFormat) -> str:
    from intentc.forecast.text import document, render_table

    if format is StatusFormat.JSON:
        return json.dumps(document(forecast), indent=2) + "\n"
    if format is StatusFormat.YAML:
        import yaml
        return str(yaml.safe_dump(document(forecast), sort_keys=False, width=120))
    return render_table(forecast)
