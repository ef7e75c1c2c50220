"""Arguments shared by the commands: their declarations and their handling.

An option that several commands take is declared once here, as an
`Annotated` alias (`seed: Seed = 0`), so that its flags, help text and
bounds stay the same in every command.  The default stays at the use site,
where typer wants it.  A command whose wording of an option differs
declares that option itself.

Each helper turns a bad argument or an unreachable cluster into a usage
error (exit 2) so that every command reports them the same way.  What the
helpers call (the compiler, the Kubernetes client) is imported inside them:
importing it costs up to half a second, which `intentc check` should not pay.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Iterator, List, Optional, Sequence

import typer

from intentc.cli.app import usage_error
from intentc.diagnostics import OutputFormat

if TYPE_CHECKING:
    from intentc.kube.client import KubeClient
    from intentc.render.capabilities import KubeVersion


# Inputs
Paths = Annotated[List[str], typer.Argument(
    metavar="PATH", help="Files or directories (searched for *.intent, *.yaml, *.yml).")]
TopologyFile = Annotated[Path, typer.Option(
    "--topology", "-t", metavar="FILE", help="The Topology file to place onto.")]
OptionalTopologyFile = Annotated[Optional[Path], typer.Option(
    "--topology", "-t", metavar="FILE",
    help="The Topology file to place onto (default: the one Topology document among PATH).")]


def the_topology(paths: Sequence[str], exclude: Sequence[str] = ()) -> Path:
    """The one Topology document among `paths` (a repository that keeps its cluster next to
    its intents needs no --topology); a usage error when there is none or several."""
    from intentc.pipeline import check

    found = sorted({t.span.file for t in check(paths, exclude=exclude).program.topologies})
    if len(found) != 1:
        what = "no Topology document" if not found else f"{len(found)} Topology documents ({', '.join(found[:3])})"
        usage_error(f"--topology is needed: {what} among the paths given")
    return Path(found[0])


RepoTopologyFile = Annotated[str, typer.Option(
    "--topology", "-t", metavar="FILE", help="Topology file (path in the repository).")]
Jobs = Annotated[int, typer.Option("--jobs", "-j", metavar="N", help="Parallel parsers (0: one per core).")]
Exclude = Annotated[Optional[List[str]], typer.Option(
    "--exclude", metavar="PATTERN",
    help="Leave out files matching this gitignore-style pattern, relative to the repository root "
         "(repeatable; .intentcignore at the root is read too).")]

# Git revisions
BaseRevision = Annotated[str, typer.Option(
    "--base", metavar="REV", help="Base revision (branch, tag, SHA, HEAD~3, ...).")]
HeadRevision = Annotated[Optional[str], typer.Option(
    "--head", metavar="REV", help="Head revision (default: the working tree).")]
MergeBase = Annotated[bool, typer.Option("--merge-base", help="Compare against the merge base of --base "
                                                              "and the head, as a pull request does.")]
Commit = Annotated[Optional[str], typer.Option(
    "--commit", metavar="SHA", help="Commit SHA to stamp (default: git HEAD).")]

# Compiling
RenderTarget = Annotated[str, typer.Option("--render-target", metavar="NAME", help="How GPUs are bound.")]
Seed = Annotated[int, typer.Option("--seed", min=0, metavar="N", help="Planner tie-break seed.")]

# The cluster
Kubeconfig = Annotated[Optional[str], typer.Option(
    "--kubeconfig", metavar="FILE",
    help="Kubeconfig file (default: the files $KUBECONFIG lists, merged as kubectl does; "
         "~/.kube/config; in-cluster).")]
KubeContext = Annotated[Optional[str], typer.Option(
    "--context", metavar="NAME", help="Kubeconfig context (default: current).")]
KubeVersionOverride = Annotated[Optional[str], typer.Option(
    "--kube-version", metavar="MAJOR.MINOR", help="Render for this MAJOR.MINOR instead of asking the server.")]
InventoryTarget = Annotated[str, typer.Option(
    "--target", metavar="NAME", help="Inventory name (one per cluster target).")]
HealthTimeout = Annotated[float, typer.Option(
    "--timeout", min=0.0, metavar="SECONDS", help="Seconds to wait for health, in all.")]

# Output.  As in kubectl, -o is the output format in every command (a path to
# write is --out, with -d where it is a directory) and -f a file to read.
DiagnosticsFormat = Annotated[OutputFormat, typer.Option("--diagnostics-format",
                                                         help="Format of the diagnostics (on stderr).")]


def format_option(default: Any, help: str = "Output format.") -> Any:
    """The --format/-o option of a command; `default` is a member of its format enum."""
    return typer.Option(default, "--format", "-o", help=help)


LiveKubeconfig = Annotated[Optional[str], typer.Option(
    "--kubeconfig", metavar="FILE",
    help="Plan on what this cluster has free now (nodes, cordons, taints, GPUs other pods hold); "
         "without --kubeconfig or --context the plan is an empty-cluster preview.")]
LiveContext = Annotated[Optional[str], typer.Option(
    "--context", metavar="NAME", help="Kubeconfig context of the cluster to plan on (implies a live plan).")]


OnlyTopologyNodes = Annotated[bool, typer.Option(
    "--only-topology-nodes",
    help="Plan on the live cluster only onto the topology file's nodes (default: the cluster's GPU "
         "nodes the file does not list are added from their GPU feature discovery labels).")]


def live_occupancy_or_exit(kubeconfig: str | None, context: str | None, only_file_nodes: bool, program: Any,
                           loaded: Any) -> tuple[Any, Any, tuple[str, ...]]:
    """(topology, Occupancy, notes) read from the cluster: the topology file's nodes plus
    the cluster's GPU nodes it does not list (plan/cluster_nodes.py); exit 2 when the
    cluster cannot be read."""
    from intentc.kube.client import KubeClient
    from intentc.kube.cluster_state import read_cluster_state
    from intentc.kube.errors import KubeError
    from intentc.plan.cluster_nodes import with_cluster_nodes
    from intentc.plan.live import occupancy

    try:
        client = KubeClient.connect(kubeconfig, context)
        try:
            state = read_cluster_state(client)
        finally:
            client.close()
    except KubeError as e:
        usage_error(f"cannot read the cluster to plan on: {e.message}")
    added: tuple[str, ...] = ()
    if not only_file_nodes:
        loaded, added = with_cluster_nodes(loaded, state.nodes)
    occupied, notes = occupancy(loaded.topology, state.nodes, state.pods, [t.name for t in program.tenants])
    return loaded, occupied, added + notes


def parse_kube_version(text: str | None, default: KubeVersion | None = None) -> KubeVersion | None:
    from intentc.render.capabilities import KubeVersion, unsupported_message

    if text is None:
        return default
    try:
        version = KubeVersion.parse(text)
    except ValueError as e:
        usage_error(str(e))
    if not version.supported:
        usage_error(unsupported_message(version, "--kube-version"))
    return version


def check_render_target(name: str, version: KubeVersion | None = None) -> str:
    """A known target, renderable for `version` (dra needs 1.34+)."""
    from intentc.render.targets import TARGETS, version_problem

    if name not in TARGETS:
        usage_error(f"unknown render target {name!r} (available: {', '.join(sorted(TARGETS))})")
    problem = version_problem(TARGETS[name], version) if version is not None else None
    if problem:
        usage_error(f"{problem}; pass --kube-version 1.34 or later, or another --render-target")
    return name


def check_target_served(client: KubeClient, name: str) -> None:
    """Refuse a render target whose API the cluster does not serve: its objects could
    not be created (a claim template without DRA) or would never run (Jobs waiting
    for a Kueue that is not there).  `apply` and the daemon call this once connected."""
    from intentc.kube.errors import KubeError
    from intentc.render.targets import TARGETS

    req = TARGETS[name].requirement
    if req is None:
        return
    try:
        served = client.served_api_versions()
    except KubeError as e:
        usage_error(e.message)
    if req.api_version not in served:
        group = req.api_version.rpartition("/")[0]
        also = sorted(v for v in served if v.startswith(group + "/"))
        has = f" (it serves {', '.join(also)})" if also else ""
        usage_error(f"render target {name!r} needs {req.what} ({req.api_version}), which the cluster at "
                    f"{client.host} does not serve{has}; use --render-target device-plugin")


def commit_or_exit(paths: Sequence[str], explicit: str | None) -> str:
    """The commit SHA to stamp: --commit, else git HEAD of the inputs."""
    from intentc.compile import CommitError, resolve_commit

    try:
        return resolve_commit(list(paths), explicit)
    except CommitError as e:
        usage_error(str(e))


def connect_or_exit(kubeconfig: str | None, context: str | None, kube_version: str | None,
                    pool_size: int = 16) -> tuple[KubeClient, KubeVersion]:
    """A connected client and the Kubernetes version to render for (--kube-version,
    else the server's own)."""
    from intentc.kube.client import KubeClient
    from intentc.kube.errors import KubeError
    from intentc.render.capabilities import KubeVersion, unsupported_message

    try:
        client = KubeClient.connect(kubeconfig, context, pool_size=pool_size)
        ready, why = client.storage_ready()       # first: with etcd gone, other requests hang for a minute
        if not ready:
            usage_error(f"the API server at {client.host} reports its storage (etcd) unavailable"
                        f"{': ' + why if why else ''}; nothing was read or written")
        version = parse_kube_version(kube_version) or KubeVersion.parse(client.version())
    except KubeError as e:
        usage_error(e.message)
    except ValueError as e:
        usage_error(f"cannot tell the server's version: {e}")
    if not version.supported:
        usage_error(unsupported_message(version))
    return client, version


@contextlib.contextmanager
def cluster_errors(target: str) -> Iterator[None]:
    """A cluster that fails mid-command, or an inventory that cannot be read,
    ends the command as an environment error (exit 2) with the reason."""
    from intentc.kube.errors import KubeError

    try:
        yield
    except KubeError as e:
        usage_error(e.message)
    except ValueError as e:
        usage_error(f"the inventory of target {target} is unreadable: {e}")
