"""`intentc diff` and `intentc schema-diff`: what a pull request changes, for reviewers.

Both read two revisions through `intentc.vcs.gitrepo` (object database, no
checkout; the working tree when --head is omitted) and hand plain data to
`intentc.diff`.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from intentc import collector
from intentc.collector import After
from intentc.cli.app import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    app,
    emit_diagnostics,
    usage_error,
)
from intentc.cli.common import (BaseRevision, Exclude, HeadRevision, Jobs, Kubeconfig, KubeContext, MergeBase,
                                OnlyTopologyNodes, RenderTarget, Seed, STDIN, check_render_target, format_option,
                                paths_or_exit, the_topology)
from intentc.diagnostics import OutputFormat, has_errors
from intentc.frontend.sources import DSL_SUFFIXES, SOURCE_SUFFIXES, decode
from intentc.render.targets import DEFAULT_TARGET

if TYPE_CHECKING:
    from intentc.diff.binding_diff import LiveBindingDiff
    from intentc.pipeline import Driver

# The diff machinery (GitPython, deepdiff, jsonschema, the renderer, the planner)
# is imported inside the commands: every `intentc` invocation imports this
# module, and start-up time is part of each command's latency.


class SchemaDiffFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"
    GITHUB = "github"
    SARIF = "sarif"


class DiffFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"
    GITHUB = "github"


class FailOn(str, enum.Enum):
    ERR = "ERR"
    WARN = "WARN"
    INFO = "INFO"


def _live_binding(driver: "Driver", topology: str, kubeconfig: str | None, context: str | None,
                  render_target: str, seed: int, only_topology_nodes: bool, commit: str) -> "LiveBindingDiff":
    """The head's preview (its program and tag rules are `driver`'s) compiled and bound on the
    cluster as `apply --dry-run` binds it; exit 2 when the cluster cannot be read."""
    from intentc.cli.common import connect_or_exit
    from intentc.diff.binding_diff import LiveBindingDiff, Rebinding, Waiting
    from intentc.kube.cluster_state import read_cluster_state
    from intentc.kube.errors import KubeError
    from intentc.pipeline import Request
    from intentc.reconcile.live_binding import LiveBinder
    from intentc.reconcile.sync import ApplyOptions, Reconciler

    client, version = connect_or_exit(kubeconfig, context, None)
    cluster = context or client.host
    try:
        if render_target == "kueue":      # as apply: Kueue admits on live state itself
            return LiveBindingDiff(cluster, bound=False, notes=("the kueue target binds nothing: Kueue admits "
                                                                "each workload on live state itself",))
        compiled = driver.compile(Request(topology, commit, version, render_target, seed, hold_back=False))
        program, preview, rendered = compiled.program, compiled.plan, compiled.rendered
        assert program is not None and preview is not None and rendered is not None
        assert compiled.topology is not None and compiled.policies is not None
        binder = LiveBinder(program, compiled.topology, preview, rendered, version,
                            lambda: read_cluster_state(client), compiled.policies, seed,
                            cluster_nodes=not only_topology_nodes)
        b = Reconciler(client, ApplyOptions(dry_run=True), binder=binder).live_binding(rendered)
    except KubeError as e:
        usage_error(f"cannot bind on the live cluster: {e.message}")
    finally:
        client.close()
    spans = {i.name: i.span for i in program.intents}
    return LiveBindingDiff(cluster, b.live, tuple(Rebinding(c, spans.get(c.intent)) for c in b.changes),
                           tuple(Waiting(x, spans.get(x.intent)) for x in b.blocked),
                           tuple(sorted((str(ref), why) for ref, why in b.kept.items())), b.remarks, b.notes,
                           len(preview.placements))


def _policies_at(root: Path, sha: str | None, prefixes: tuple[str, ...]) -> dict[str, Any]:
    """The tag rules of one revision (None: the working tree), found as `compile` finds
    them (the nearest `policies/` at or above the first path), as `Tree` fields."""
    from intentc.policy.load import policies_of, policy_folders
    from intentc.vcs import gitrepo

    start = prefixes[0] if prefixes else "intents"
    for folder in policy_folders(start):
        snap = gitrepo.snapshot(root, sha, (folder,))
        if not snap.listing:
            continue        # no such folder in that revision (git keeps no empty folder)
        names = sorted(p for p in snap.listing if p.endswith((".yaml", ".yml")) and "/" not in p[len(folder) + 1:])
        data = snap.read(names)
        files, found = [], []
        for name in names:
            text, diags = decode(name, data[name])
            found += diags
            if text is not None:
                files.append((name, text))
        policies, rule_diags, texts = policies_of(files)
        return {"policies": policies, "policy_findings": tuple(found + rule_diags), "policy_texts": texts}
    return {}


def _label(rev: str | None, sha: str | None) -> str:
    if rev is None:
        return "working tree"
    return rev if sha is None or rev == sha else f"{rev} ({sha[:12]})"


def _revisions(root: Path, base: str, head: str | None, merge_base: bool) -> tuple[str, str | None, str, str]:
    """(base sha, head sha or None for the working tree, base label, head label)."""
    from intentc.vcs import gitrepo

    head_sha = gitrepo.resolve(root, head) if head is not None else None
    base_sha = gitrepo.resolve(root, base)
    base_label = _label(base, base_sha)
    if merge_base:
        base_sha = gitrepo.merge_base(root, base_sha, head_sha or "HEAD")
        base_label = f"merge-base of {base} ({base_sha[:12]})"
    return base_sha, head_sha, base_label, _label(head, head_sha)


def _paths_at_either(root: Path, given: List[str], base_sha: str, head_sha: str | None, base_label: str,
                     head_label: str) -> None:
    """Exit 2 when a path is in neither revision: a typo would otherwise compare nothing
    with nothing and report no change.  A path the change adds or deletes is in one of
    them, and that is a legitimate diff."""
    from intentc.frontend.sources import no_such_path
    from intentc.vcs import gitrepo

    head_named = head_label if head_sha is not None else f"the {head_label}"
    missing = [no_such_path(raw, f" (in neither {base_label} nor {head_named})") for raw in given
               if not any(gitrepo.exists_at(root, sha, gitrepo.repo_relative(root, [raw])[0])
                          for sha in (base_sha, head_sha))]
    if missing:
        emit_diagnostics(missing, OutputFormat.TEXT, {}, to_stderr=True)
        raise typer.Exit(EXIT_USAGE)


@app.command("schema-diff", epilog="""Examples:

  intentc schema-diff --base origin/main                      # working tree vs main

  intentc schema-diff --base v0.3.0 --head HEAD -o markdown

  intentc schema-diff --base origin/main -o github --fail-on WARN

  intentc schema-diff --base origin/main -o sarif > schema-diff.sarif   # code scanning upload

  intentc schema-diff --base origin/main --ack-file .intentc-acks   # acknowledged findings do not fail
""")
def schema_diff(
    base: BaseRevision,
    head: HeadRevision = None,
    paths: List[str] = typer.Argument(None, metavar="PATH", help="Where the documents (YAML and DSL) checked "
                                                                 "for breakage live (default: intents)."),
    schemas: str = typer.Option("schemas", "--schemas", metavar="DIR", help="Directory of the JSON Schemas."),
    format: SchemaDiffFormat = format_option(SchemaDiffFormat.TEXT),
    fail_on: FailOn = typer.Option(FailOn.ERR, "--fail-on", help="Exit 1 when a finding of this severity "
                                                                 "or higher is not acknowledged."),
    ack: List[str] = typer.Option([], "--ack", metavar="FINGERPRINT", help="Acknowledge a finding by fingerprint (repeatable)."),
    ack_file: Optional[Path] = typer.Option(None, "--ack-file", metavar="FILE", help="File of acknowledged fingerprints, "
                                                                     "one per line, # comments (-: standard input)."),
    merge_base: MergeBase = False,
) -> None:
    """Classify every change to the JSON Schemas between two revisions (ERR breaking,
    WARN maybe-breaking, INFO compatible) and count the base documents each one breaks."""
    from intentc.diff.schema_format import render as render_schema_report
    from intentc.diff.schema_report import parse_acknowledgements
    from intentc.diff.schema_report import schema_diff as run_schema_diff
    from intentc.diff.schema_rules import Level
    from intentc.policy import BUILTIN
    from intentc.vcs import gitrepo

    try:
        root = gitrepo.repo_root(".")
        base_sha, head_sha, base_label, head_label = _revisions(root, base, head, merge_base)
        # the schemas always (none: 0 findings would read as "compatible"); the documents when named,
        # since a repository of schemas alone has no intents/ and the report counts what it checked
        _paths_at_either(root, [schemas, *(paths or [])], base_sha, head_sha, base_label, head_label)
        schema_dirs = gitrepo.repo_relative(root, [schemas])
        doc_dirs = gitrepo.repo_relative(root, paths or ["intents"])
        base_schemas = gitrepo.read_tree(root, base_sha, schema_dirs, (".json",))
        head_schemas = gitrepo.read_tree(root, head_sha, schema_dirs, (".json",))
        documents = gitrepo.read_tree(root, base_sha, doc_dirs, (".yaml", ".yml") + DSL_SUFFIXES)
        # the organisation rules of each revision, found as `diff` (and `compile`) finds them
        base_rules, head_rules = _policies_at(root, base_sha, doc_dirs), _policies_at(root, head_sha, doc_dirs)
    except gitrepo.GitError as exc:
        usage_error(str(exc))
    acknowledged = set(ack)
    if ack_file is not None:
        if str(ack_file) != STDIN:
            paths_or_exit([ack_file], to_stderr=True)
        try:
            text = sys.stdin.read() if str(ack_file) == STDIN else ack_file.read_text(encoding="utf-8")
            acknowledged |= parse_acknowledgements(text)
        except OSError as exc:
            usage_error(f"cannot read {ack_file}: {exc.strerror or exc}")
    report = run_schema_diff(base_schemas, head_schemas, documents, base_label, head_label,
                             frozenset(acknowledged), base_policies=base_rules.get("policies", BUILTIN),
                             head_policies=head_rules.get("policies", BUILTIN))
    threshold = Level(fail_on.value)
    # a head rule that does not load is left out and would read as "removed": exit 2, as `diff` does
    broken = [d for d in head_rules.get("policy_findings", ()) if d.is_error]
    if report.diagnostics or broken:
        emit_diagnostics(list(report.diagnostics) + broken, OutputFormat.TEXT,
                         head_rules.get("policy_texts", {}), to_stderr=True)
        raise typer.Exit(EXIT_USAGE)
    typer.echo(render_schema_report(report, format.value, threshold), nl=False)
    raise typer.Exit(EXIT_FINDINGS if report.failing(threshold) else EXIT_OK)



@app.command("diff", epilog="""Examples:

  intentc diff --base origin/main                          # working tree vs main, text

  intentc diff --base origin/main --merge-base -o markdown > comment.md

  intentc diff --base HEAD~3 --head HEAD intents/nlp -o json

  intentc diff --base origin/main --merge-base -o github   # annotations on the PR

  intentc diff --base origin/main --topology examples/topologies/cluster.yaml   # plus the plan diff

  intentc diff --base origin/main -t examples/topologies/cluster.yaml --render-target kueue -o markdown

  intentc diff --base origin/main --context prod-eu     # plus where apply's live binding differs from the preview

With --kubeconfig/--context the head revision's plan (the preview CI writes)
is also bound on what that cluster has free now, as `apply --dry-run` binds
it: per intent whose nodes/GPUs would differ, preview -> live and why; the
intents that fit nowhere now; the running Jobs kept where they run.  It
reads the cluster, writes nothing, and leaves the exit code to the revisions.
""")
def diff(
    base: BaseRevision,
    head: HeadRevision = None,
    paths: List[str] = typer.Argument(None, metavar="PATH", help="Files or directories to compare (default: intents)."),
    topology: Optional[str] = typer.Option(None, "--topology", "-t", metavar="FILE", help="Topology file: also diff the plans "
                                                                          "(both sides on this topology)."),
    format: DiffFormat = format_option(DiffFormat.TEXT),
    merge_base: MergeBase = False,
    cache_dir: Optional[str] = typer.Option(
        None, "--cache-dir", metavar="DIR", help="Parse cache directory (default: $INTENTC_CACHE_DIR or ~/.cache/intentc)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Parse every file, use and write no cache."),
    jobs: Jobs = 0,
    render_target: RenderTarget = DEFAULT_TARGET,
    exclude: Exclude = None,
    kubeconfig: Kubeconfig = None,
    context: KubeContext = None,
    only_topology_nodes: OnlyTopologyNodes = False,
    seed: Seed = 0,
) -> None:
    """Show what changes semantically between two revisions: intents, tenants and datasets
    (field by field, with positions), the dependency graph and, with --topology, the plan;
    with --kubeconfig/--context, where the live binding differs from the preview.
    Exit 0 when nothing changes, 1 when something does, 2 on errors."""
    from intentc.diff.format import render_report
    from intentc.diff.report import diff_trees
    from intentc.diff.sides import Tree
    from intentc.pipeline import Checked, Driver
    from intentc.pipeline.loading import default_cache_dir
    from intentc.vcs import gitrepo

    # A short-lived process holding two whole programs: the cyclic collector
    # would only rescan them (the IR has no cycles), during the run and at exit;
    # freezing them keeps the exit-time collection away too.
    check_render_target(render_target)
    with collector.paused(After.FREEZE):
        try:
            root = gitrepo.repo_root(".")
            base_sha, head_sha, base_label, head_label = _revisions(root, base, head, merge_base)
            _paths_at_either(root, paths or ["intents"], base_sha, head_sha, base_label, head_label)
            prefixes = gitrepo.repo_relative(root, paths or ["intents"])
            base_snap = gitrepo.snapshot(root, base_sha, prefixes, SOURCE_SUFFIXES, exclude or ())
            head_snap = gitrepo.snapshot(root, head_sha, prefixes, SOURCE_SUFFIXES, exclude or ())
            base_rules, head_rules = _policies_at(root, base_sha, prefixes), _policies_at(root, head_sha, prefixes)
            on_cluster = kubeconfig is not None or context is not None
            # the stamp only (spec hashes leave it out): what `apply` would stamp on the head
            commit = head_sha or (gitrepo.resolve(root, "HEAD") if on_cluster else "")
        except gitrepo.GitError as exc:
            usage_error(str(exc))
        loaded = None
        driver = Driver(paths or ["intents"], exclude=exclude or ())      # the working tree's
        if topology is None and on_cluster:
            topology = str(the_topology(driver))
        if topology is not None:
            topo = driver.topology(topology)
            loaded = topo.loaded
            if loaded is None or has_errors(topo.diagnostics):
                emit_diagnostics(list(topo.diagnostics), OutputFormat.TEXT, {}, to_stderr=True)
                raise typer.Exit(EXIT_USAGE)
        directory = None if no_cache else (cache_dir or default_cache_dir())
        report, _, head_side = diff_trees(Tree(base_label, base_snap.listing, base_snap.read, **base_rules),
                                          Tree(head_label, head_snap.listing, head_snap.read, **head_rules),
                                          loaded, directory, jobs or None, render_target, seed)
    if on_cluster and topology is not None and loaded is not None and not report.head_errors:
        head_driver = driver.revision(Checked(head_side.program, (), {}), (head_side.policies, [], {}))
        report = dataclasses.replace(report, binding=_live_binding(
            head_driver, topology, kubeconfig, context, render_target, seed, only_topology_nodes, commit))
    typer.echo(render_report(report, format.value), nl=False)
    if report.head_errors:
        errors = [d for d in report.head_diagnostics if d.is_error]
        # files served by the blob cache were not read: fetch the ones the carets need
        wanted = sorted({d.span.file for d in errors} & set(head_snap.listing) - set(head_side.sources))
        texts = dict(head_side.sources)
        texts.update({p: decode(p, b)[0] or "" for p, b in head_snap.read(wanted).items()})
        emit_diagnostics(errors, OutputFormat.TEXT, texts, to_stderr=True)
        typer.echo(f"intentc: error: {head_label} does not compile ({report.head_errors} error(s)); "
                   "the diff may be incomplete", err=True)
        raise typer.Exit(EXIT_USAGE)
    if report.base_errors:
        typer.echo(f"intentc: note: {base_label} has {report.base_errors} compile error(s); "
                   "declarations it could not read show as added", err=True)
    raise typer.Exit(EXIT_FINDINGS if report.changed else EXIT_OK)
