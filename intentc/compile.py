"""The compile driver: check → graph → plan → render → outputs.

`compile_paths` is pure given its inputs (the commit SHA and the target
Kubernetes version are parameters, not looked up), so CI and `apply` get
byte-identical results for the same tree.  `write_outputs` replaces
`DIR/manifests/` (with its `Kustomization`), `DIR/plan.json` and `DIR/graph.json` as a unit: all new
files are written beside the old ones first and then renamed into place,
so a failed or interrupted compile never leaves a half-written mix.

Errors that belong to one tenant hold back only that tenant
(`intentc.holdback`): the others are rendered and written, the result is
not `ok`, and the CLI exits 1 all the same (findings).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import networkx as nx

from intentc import graph
from intentc.atomic import output_dir, write_atomic
from intentc.diagnostics import Diagnostic, Span, has_errors, sorted_diagnostics
from intentc.holdback import holdback
from intentc.ir import Intent, Program
from intentc.frontend.batch import Reused
from intentc.pipeline import Checked, check, texts_for_carets
from intentc.plan.jsonio import plan_to_json
from intentc.plan.model import Plan
from intentc.plan.model import Occupancy
from intentc.plan.planner import make_plan
from intentc.policy.catalogue import Policies
from intentc.policy.load import load_policies
from intentc.policy.tags import with_rules
from intentc.render import render
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.model import Rendered
from intentc.render.output import KUSTOMIZATION, kustomization, manifest_files, manifest_names, to_yaml
from intentc.render.packed import BodyCodec
from intentc.render.targets import DEFAULT_TARGET
from intentc.sources import OUTPUT_MANIFESTS, mark_output, read_text
from intentc.topology.load import LoadedTopology, load_topology

_SHA = re.compile(r"^[0-9a-f]{40}$")
MANIFESTS_DIR = OUTPUT_MANIFESTS          # discovery skips it beside the output marker


class CommitError(ValueError):
    """No usable commit SHA: not in a git repository and no --commit given, or a malformed one."""


def resolve_commit(paths: Sequence[str], explicit: str | None = None) -> str:
    """The SHA to stamp: `explicit` if given (validated), else git HEAD of the
    repository holding the first path."""
    if explicit is not None:
        sha = explicit.strip().lower()
        if not _SHA.match(sha):
            raise CommitError(f"--commit must be a full 40-hex commit SHA, got {explicit!r}")
        return sha
    from intentc.gitrepo import head_commit    # importing GitPython is start-up every run pays; CI passes --commit

    where = Path(paths[0]) if paths else Path(".")
    sha_found = head_commit(where if where.is_dir() else where.parent)
    if sha_found is None:
        raise CommitError(f"{where.as_posix()} is not inside a git repository with a commit; "
                          f"pass --commit SHA to say which commit these files are")
    return sha_found



# (program, topology) -> (the topology with the cluster's GPU nodes, what is taken, why): reads a
# cluster; injected so this module stays pure.
LiveReader = Callable[[Program, LoadedTopology], tuple[LoadedTopology, Occupancy, tuple[str, ...]]]

@dataclass(frozen=True)
class CompileResult:
    diagnostics: tuple[Diagnostic, ...]
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    program: Program | None = None
    plan: Plan | None = None
    rendered: Rendered | None = None
    topology_unreadable: bool = False
    # What the plan was made with, for callers that plan again (apply's live binding).
    topology: LoadedTopology | None = field(default=None, compare=False)
    policies: Policies | None = field(default=None, compare=False)
    # graph.json names the files relative to this folder (a revision's export, `compile_revision`)
    files_under: str = field(default="", compare=False)

    @functools.cached_property
    def dag(self) -> nx.DiGraph | None:
        """The dependency graph with its attributes, built when first asked for (graph.json):
        applying a commit never needs it.  The daemon's git mode built it
        for every commit and copied it to relabel its files: two graphs of the whole
        program, beside the plan in force."""
        if self.rendered is None or self.program is None:
            return None
        g = graph.build(self.program)[0]
        if self.files_under:
            for _u, _v, data in g.edges(data=True):
                span = data.get("span")
                if isinstance(span, Span) and span.file.startswith(self.files_under):
                    data["span"] = dataclasses.replace(span, file=span.file[len(self.files_under):])
        return g

    @property
    def plan_json(self) -> str:
        return plan_to_json(self.plan) if self.plan is not None else ""

    @property
    def graph_json(self) -> str:
        """Made on demand: `apply` never needs the JSON documents."""
        return graph.to_json(self.dag, graph.waves(self.dag)) if self.dag is not None else ""

    @property
    def ok(self) -> bool:
        return self.rendered is not None and not has_errors(self.diagnostics)

    @property
    def held_tenants(self) -> tuple[str, ...]:
        """Tenants whose errors held them back while the others were rendered."""
        return self.rendered.held_tenants if self.rendered is not None else ()

    def files(self) -> dict[str, str]:
        """Relative path → text of every output file."""
        if self.rendered is None:
            return {}
        out = {f"{MANIFESTS_DIR}/{name}": text for name, text in manifest_files(self.rendered.manifests).items()}
        out[f"{MANIFESTS_DIR}/{KUSTOMIZATION}"] = kustomization(manifest_names(self.rendered.manifests))
        out["plan.json"] = self.plan_json
        out["graph.json"] = self.graph_json
        return out


def compile_paths(paths: Sequence[str], topology: str, commit: str,
                  kube_version: KubeVersion = DEFAULT_KUBE_VERSION, target: str = DEFAULT_TARGET,
                  seed: int = 0, jobs: int | None = None, exclude: Sequence[str] = (),
                  live: LiveReader | None = None, only: Callable[[Intent], bool] | None = None,
                  pack: BodyCodec | None = None, reuse: Reused | None = None,
                  previous: Plan | None = None) -> CompileResult:
    """Check, plan and render (files matching `exclude` left out).  `live`, when given, reads
    what a cluster has free for the checked program and topology; the plan is then made on
    that ("basis": live).  `only`, when given, keeps the intents it accepts (a fleet
    cluster's selection, `intentc.fleet.select.for_cluster`).  `pack`: see `render`;
    `reuse`: see `frontend.batch.load`; `previous`: see `make_plan`."""
    checked = check(paths, jobs=jobs, exclude=exclude, reuse=reuse)
    if only is not None:
        program = dataclasses.replace(checked.program, intents=tuple(filter(only, checked.program.intents)))
        checked = dataclasses.replace(checked, program=program)
    return compile_checked(checked, load_policies(paths), topology, commit, kube_version, target, seed, live, pack,
                           previous)


def compile_checked(checked: Checked, policy: tuple[Policies, list[Diagnostic], dict[str, str]], topology: str,
                    commit: str, kube_version: KubeVersion = DEFAULT_KUBE_VERSION, target: str = DEFAULT_TARGET,
                    seed: int = 0, live: LiveReader | None = None, pack: BodyCodec | None = None,
                    previous: Plan | None = None) -> CompileResult:
    """Plan and render an already checked program (`compile_paths` after parsing; a fleet
    parses once and calls this per cluster) with the repository's policies
    (`load_policies`: catalogue, diagnostics, texts)."""
    sources: dict[str, str] = {}
    loaded, topo_diags = load_topology(topology)
    topo_text = read_text(topology)
    if topo_text is not None:
        sources[Path(topology).as_posix()] = topo_text
    sources.update(checked.sources)
    policies, policy_diags, policy_texts = policy
    sources.update(policy_texts)
    diags = with_rules(checked.diagnostics, policies, checked.program) + topo_diags + policy_diags
    if loaded is None:
        unreadable = any(d.code.startswith("E00") for d in topo_diags) or not Path(topology).is_file()
        return CompileResult(tuple(sorted_diagnostics(diags)), sources, checked.program,
                             topology_unreadable=unreadable)
    occupied: Occupancy | None = None
    notes: tuple[str, ...] = ()
    if live is not None:
        loaded, occupied, notes = live(checked.program, loaded)
    plan, plan_diags = make_plan(checked.program, loaded, seed, occupied, policies, previous)
    if occupied is not None:
        plan = dataclasses.replace(plan, basis="live", basis_notes=notes)
    # the dependency findings are `check`'s already (`pipeline.global_findings`)
    diags = sorted_diagnostics(diags + plan_diags)
    sources = texts_for_carets(diags, sources)       # plan findings point into files parsing left unread
    held: tuple[str, ...] = ()
    if has_errors(diags):
        hb = holdback(checked.program, diags, checked.graph)
        if not hb.partial:
            return CompileResult(tuple(diags), sources, checked.program, plan)
        held, diags = hb.tenants, sorted_diagnostics(diags + list(hb.notes))
    rendered = render(checked.program, plan, commit, kube_version, target, loaded.topology, policies, hold=held,
                      pack=pack)
    return CompileResult(tuple(diags), sources, checked.program, plan, rendered, topology=loaded, policies=policies)


def write_outputs(result: CompileResult, out_dir: str | Path) -> list[str]:
    """Write every output under `out_dir`; returns the relative paths written.

    The new manifests directory is built next to the old one and swapped in
    with renames; plan.json / graph.json are replaced atomically.  Files in
    `out_dir` that intentc does not own are left alone.
    """
    out = output_dir(out_dir)       # a link to a directory is written into; a file there is an error
    if result.rendered is None:
        return []
    manifests = result.rendered.manifests
    names = manifest_names(manifests)
    written = [f"{MANIFESTS_DIR}/{name}" for name in names]
    staging = Path(tempfile.mkdtemp(dir=out, prefix=f".{MANIFESTS_DIR}."))
    try:
        # one text at a time, not `files()`: every text at once is memory that grows with the repository
        for rel, m in zip(written, manifests):
            with open(staging / rel.split("/", 1)[1], "w", encoding="utf-8", newline="\n") as fh:
                fh.write(to_yaml(m.body))
        with open(staging / KUSTOMIZATION, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(kustomization(names))
        os.chmod(staging, 0o755)
        final = out / MANIFESTS_DIR
        old = None
        if final.exists():
            old = Path(tempfile.mkdtemp(dir=out, prefix=f".{MANIFESTS_DIR}.old."))
            os.rmdir(old)
            os.replace(final, old)
        os.replace(staging, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    write_atomic(out / "plan.json", result.plan_json)
    write_atomic(out / "graph.json", result.graph_json)
    mark_output(out)
    return sorted(written + [f"{MANIFESTS_DIR}/{KUSTOMIZATION}", "plan.json", "graph.json"])
