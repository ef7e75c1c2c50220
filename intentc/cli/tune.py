"""`intentc tune`: batch recommendations from live metrics written into the intent files.

The recommendations are the daemon's (`status.batchRecommendation` of the
Intent objects, read with --kubeconfig / --context) or made here from
Prometheus (--prometheus-url: the same rule over the last observations,
`tune/observe.look_back`).  The files change only in the batch values
(`tune/rewrite.py`), so the result goes to review as a pull request like
any other change; the command never touches the cluster.
"""

from __future__ import annotations

import difflib
import time
from pathlib import Path
from typing import Any, Mapping

import typer

from intentc.cli.app import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, app, emit_diagnostics, usage_error
from intentc.cli.common import (DiagnosticsFormat, Exclude, Jobs, KubeContext, Kubeconfig, OptionalTopologyFile,
                                Paths, PrometheusUrl, Seed, TuneConfigFile, cannot_write, declared,
                                no_intents_or_exit, paths_or_exit, prometheus_or_exit, read_cluster_or_exit,
                                tune_config_or_exit)
from intentc.diagnostics import OutputFormat, has_errors, sorted_diagnostics


@app.command(epilog="""Examples:

  intentc tune intents/ --context prod-eu            # the daemon's recommendations, into the files

  intentc tune intents/ --context prod-eu --dry-run  # show the diff, write nothing

  intentc tune intents/ -t clusters/prod.yaml --prometheus-url http://prometheus:9090

Per serving intent that declares a batch: a fixed `batch: N` becomes the
recommended number.  `batch: auto` keeps being sized by the planner: a
shrink writes `auto(max M)` (the cap the plan clamps to), a grow raises a
cap the plan's size had reached, and otherwise `auto` is kept and the
recommendation printed; --pin-auto writes the number instead.  Only the
batch values change: comments and layout stay as they are (DSL and YAML).
With --prometheus-url, `batch: auto` intents need the topology (-t, or the
one Topology among PATH) for the size the plan gives them.  Files with
errors are never touched (exit 1); exit 2 when the cluster or Prometheus
cannot be read.
""")
def tune(
    paths: Paths,
    topology: OptionalTopologyFile = None,
    kubeconfig: Kubeconfig = None,
    context: KubeContext = None,
    prometheus_url: PrometheusUrl = None,
    tune_config: TuneConfigFile = None,
    dry_run: bool = typer.Option(False, "--dry-run", help="Print a unified diff of the files; write nothing."),
    pin_auto: bool = typer.Option(False, "--pin-auto",
                                  help="Write the recommended number into `batch: auto` intents too."),
    seed: Seed = 0,
    diagnostics_format: DiagnosticsFormat = OutputFormat.TEXT,
    jobs: Jobs = 0,
    exclude: Exclude = None,
) -> None:
    """Write the batch recommended from live metrics (the daemon's, or Prometheus') into the intent files,
    keeping their comments and layout."""
    from intentc.pipeline import Driver, Request, Stage

    paths_or_exit(paths, diagnostics_format, to_stderr=True)
    config = tune_config_or_exit(tune_config)
    if prometheus_url is not None and (kubeconfig is not None or context is not None):
        usage_error("--prometheus-url reads the metrics here; --kubeconfig/--context read the daemon's "
                    "recommendations: give one of them")
    if prometheus_url is None and kubeconfig is None and context is None:
        usage_error("where the recommendations come from is needed: --kubeconfig/--context (the daemon's) or "
                    "--prometheus-url")
    driver = Driver(paths, jobs or None, exclude or ())
    plan = None
    if topology is None and prometheus_url is not None and len(driver.topology_files()) == 1:
        topology = Path(driver.topology_files()[0])
    if topology is not None:
        topo = driver.topology(str(topology))
        if topo.loaded is None:
            sources = {topology.as_posix(): topo.text} if topo.text is not None else {}
            emit_diagnostics(sorted_diagnostics(topo.diagnostics), diagnostics_format, sources, to_stderr=True)
            raise typer.Exit(EXIT_USAGE if topo.unreadable else EXIT_FINDINGS)
        result = driver.run(Request(str(topology), seed=seed), Stage.PLAN).result
        assert result is not None and result.program is not None
        program, diags, sources, plan = result.program, list(result.diagnostics), result.sources, result.plan
    else:
        checked = driver.check()
        program, diags, sources = checked.program, list(checked.diagnostics), checked.sources
    emit_diagnostics(diags, diagnostics_format, sources, to_stderr=True)
    no_intents_or_exit(paths, declared(program), diags)
    if has_errors(diags):
        typer.echo("intentc: the intents have errors: no file is tuned", err=True)
        raise typer.Exit(EXIT_FINDINGS)
    if prometheus_url is not None:
        recs = _from_prometheus(prometheus_url, config, program, plan)
    else:
        recs = _from_cluster(kubeconfig, context, program)
    _write(program, recs, pin_auto, dry_run)
    raise typer.Exit(EXIT_OK)


Key = tuple[str, str]


def _from_prometheus(url: str, config: Any, program: Any, plan: Any) -> dict[Key, Any]:
    """The rule over the last `goodObservations` observations, `sampleInterval` apart, ending now."""
    from intentc.tune.observe import look_back
    from intentc.tune.prometheus import PrometheusError
    from intentc.tune.recommend import recommend
    from intentc.tune.subjects import tunables

    prometheus = prometheus_or_exit(url)
    now = time.time()
    recs: dict[Key, Any] = {}
    if plan is None:
        for intent in program.intents:
            settings = intent.action.settings
            if intent.action.kind == "serve" and settings is not None and settings.batch is not None \
                    and settings.batch.auto:
                typer.echo(f"{intent.tenant}/{intent.name}: left out: `batch: auto` starts from the size the plan "
                           "gives it, and there is no plan without --topology", err=True)
    for t in tunables(program, plan):
        try:
            window = look_back(prometheus, config.queries, t.subject, now, config.good_observations,
                               config.sample_interval)
        except PrometheusError as e:
            usage_error(e.message)
        recs[(t.tenant, t.intent)] = recommend(window, t.current, config.bounds, config.rule(t.sla))
    return recs


def _from_cluster(kubeconfig: str | None, context: str | None, program: Any) -> dict[Key, Any]:
    """The `batchRecommendation` of every Intent object the daemon wrote one into."""
    from intentc.render.crd import GROUP, VERSION
    from intentc.tune.recommend import Direction, Recommendation

    objects = read_cluster_or_exit(kubeconfig, context, lambda c: c.list(f"{GROUP}/{VERSION}", "Intent"),
                                   " for the batch recommendations")
    recs: dict[Key, Any] = {}
    for obj in objects:
        meta: Mapping[str, Any] = obj.get("metadata") or {}
        doc = (obj.get("status") or {}).get("batchRecommendation")
        if not isinstance(doc, Mapping):
            continue
        try:
            recs[(str(meta.get("namespace")), str(meta.get("name")))] = Recommendation(
                int(doc["batch"]), int(doc["current"]), Direction(doc["direction"]), str(doc.get("reason", "")))
        except (KeyError, TypeError, ValueError):
            typer.echo(f"intentc: Intent {meta.get('namespace')}/{meta.get('name')}: a batchRecommendation "
                       "this version cannot read; left out", err=True)
    return recs


def _write(program: Any, recs: Mapping[Key, Any], pin_auto: bool, dry_run: bool) -> None:
    from intentc.atomic import write_atomic
    from intentc.tune.rewrite import rewrite, target

    by_file: dict[str, list[Any]] = {}
    notes: list[str] = []
    for intent in program.intents:
        rec = recs.get((intent.tenant, intent.name))
        settings = intent.action.settings
        if rec is None or settings is None or settings.batch is None:
            continue
        written = settings.batch
        if not written.auto and written.size != rec.current:
            notes.append(f"{intent.tenant}/{intent.name}: kept: the file's batch {written.size} is not the "
                         f"{rec.current} the recommendation was made for (not rolled out yet?)")
            continue
        goal = target(written, rec, pin_auto)
        if goal.batch is None:
            notes.append(f"{intent.tenant}/{intent.name}: {goal.why}")
            continue
        by_file.setdefault(intent.span.file, []).append((intent, goal.batch, goal.why))
    for file, changes in sorted(by_file.items()):
        try:
            text = Path(file).read_text(encoding="utf-8")
            new, edits = rewrite(text, file, changes)
        except OSError as e:
            usage_error(f"cannot read {file}: {e.strerror or e}")
        except ValueError as e:
            typer.echo(f"intentc: {e}", err=True)
            raise typer.Exit(EXIT_FINDINGS)
        if dry_run:
            typer.echo("".join(difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                                    fromfile=file, tofile=file)), nl=False)
        else:
            try:
                write_atomic(file, new)
            except OSError as e:
                usage_error(cannot_write(file, e))
        for edit in edits:
            typer.echo(f"{'would tune' if dry_run else 'tuned'} {edit.file}: {edit.tenant}/{edit.intent} batch "
                       f"{edit.old} -> {edit.new} ({edit.why})", err=dry_run)
    for note in notes:
        typer.echo(note, err=True)
    if not by_file:
        typer.echo("no batch to change", err=True)
