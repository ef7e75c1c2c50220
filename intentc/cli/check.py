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
    from intentc.policy.load import load_policies
    from intentc.policy.tags import with_rules
    from intentc.sources import texts_for_carets
    from intentc.summary import Summary, summarize

    checked = None
    policies, policy_diags, policy_texts = load_policies(paths)
    with StderrProgress() as progress:
        if topology is None and not policies.cel:   # findings and counts are all that is printed: remembered
            result = summarize(paths, jobs=jobs or None, progress=progress, exclude=exclude or ())
        else:                       # the plan, and the organisation's rules, need the program itself
            from intentc.pipeline import check as run_check

            checked = run_check(paths, jobs=jobs or None, progress=progress, exclude=exclude or ())
            result = Summary.of(checked)
    diags = list(result.diagnostics)
    sources = dict(result.sources)
    diags = with_rules(diags, policies, checked.program if checked is not None else None) + policy_diags
    if topology is None and checked is not None:    # without a plan: the rules that do not read the placement
        from intentc.policy.cel_check import evaluate

        diags += evaluate(checked.program, policies.cel)
    sources.update(policy_texts)
    if topology is not None:
        from intentc.plan.planner import make_plan
        from intentc.topology.load import load_topology

        loaded, topo_diags = load_topology(str(topology))
        diags += topo_diags
        try:
            sources[topology.as_posix()] = topology.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass
        if loaded is None and (not topology.is_file() or any(d.code.startswith("E00") for d in topo_diags)):
            emit_diagnostics(sorted_diagnostics(diags), format, sources)
            raise typer.Exit(EXIT_USAGE)
        if loaded is not None and checked is not None:
            diags += make_plan(checked.program, loaded, 0, policies=policies)[1]
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
