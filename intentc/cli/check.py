"""`intentc check`: parse and validate intents, report diagnostics."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from intentc.cli.app import EXIT_USAGE, app, emit_diagnostics, exit_for
from intentc.cli.common import Exclude, Jobs, Paths, format_option, no_intents_or_exit
from intentc.cli.progress import StderrProgress
from intentc.diagnostics import OutputFormat, sorted_diagnostics


@app.command(epilog="""Examples:

  intentc check intents/

  intentc check intents/ -o github      # annotations on the PR

  intentc check intents/ -o junit > report.xml   # a test report for CI

  intentc check intents/nlp/ intents/tenants/ intents/datasets/ --strict   # warnings fail too

  intentc check intents/ --topology clusters/prod.yaml   # also plan: placement and tag rules
""")
def check(
    paths: Paths,
    format: OutputFormat = format_option(OutputFormat.TEXT, "Output format (junit: one test case per file)."),
    strict: bool = typer.Option(False, "--strict", help="Treat warnings as errors."),
    jobs: Jobs = 0,
    topology: Optional[Path] = typer.Option(
        None, "--topology", "-t", metavar="FILE", help="Also plan onto this Topology: placement errors, batch sizing and "
                                       "the tag rules that need a plan (docs/policies.md)."),
    exclude: Exclude = None,
) -> None:
    """Parse and validate intents; exit 1 when any error is found, 2 when a path cannot be read."""
    from intentc.frontend.sources import texts_for_carets
    from intentc.pipeline import Driver, Summary
    from intentc.policy.tags import with_rules

    with StderrProgress() as progress:
        driver = Driver(paths, jobs or None, exclude or (), progress=progress)
        policies, policy_diags, policy_texts = driver.policy
        # without --topology or organisation rules, findings and counts are all that is printed: remembered
        # from a run on the same inputs; the plan and the rules need the program itself
        checked = driver.check() if topology is not None or policies.cel else None
        result = driver.summary() if checked is None else Summary.of(checked)
    if topology is None:
        diags = with_rules(list(result.diagnostics), policies, checked.program if checked else None) + policy_diags
        if checked is not None:    # without a plan: the rules that do not read the placement
            from intentc.plan.cel_check import evaluate

            diags += evaluate(checked.program, policies.cel)
        sources = {**result.sources, **policy_texts}
    else:
        from intentc.pipeline import Request, Stage

        planned = driver.run(Request(str(topology)), Stage.PLAN).result
        assert planned is not None
        if planned.topology_unreadable:
            emit_diagnostics(list(planned.diagnostics), format, planned.sources)
            raise typer.Exit(EXIT_USAGE)
        diags, sources = list(planned.diagnostics), dict(planned.sources)
    diags = sorted_diagnostics(diags)
    sources = texts_for_carets(diags, sources)     # plan findings point into files parsing left unread
    if format is OutputFormat.JUNIT:       # one test case per file checked, clean ones too
        for f in result.files:
            sources.setdefault(f, "")
    emit_diagnostics(diags, format, sources)
    c = result.counts
    no_intents_or_exit(paths, c.intents + c.tenants + c.datasets, diags)
    if format is OutputFormat.TEXT and not diags:
        typer.echo(f"ok: {c.intents} intents, {c.tenants} tenants, {c.datasets} datasets, {c.topologies} topologies")
    exit_for(diags, strict)
