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
import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterator, List, Optional, Sequence, TypeVar

import typer

from intentc.cli.app import EXIT_USAGE, emit_diagnostics, usage_error
from intentc.diagnostics import OutputFormat

if TYPE_CHECKING:
    from intentc.tune.prometheus import Prometheus
    from intentc.tune.queries import TuneConfig
    from intentc.kube.client import KubeClient
    from intentc.pipeline import Driver
    from intentc.pipeline.provenance import Stamp
    from intentc.render.capabilities import KubeVersion

R = TypeVar("R")


# Inputs
Paths = Annotated[List[str], typer.Argument(
    metavar="PATH", help="Files or directories (searched for *.intent, *.yaml, *.yml).")]
TopologyFile = Annotated[Path, typer.Option(
    "--topology", "-t", metavar="FILE", help="The Topology file to place onto.")]
OptionalTopologyFile = Annotated[Optional[Path], typer.Option(
    "--topology", "-t", metavar="FILE",
    help="The Topology file to place onto (default: the one Topology document among PATH).")]


def the_topology(driver: Driver) -> Path:
    """The one Topology document among the driver's inputs (a repository that keeps its cluster
    next to its intents needs no --topology); a usage error when there is none or several.
    It is found in the driver's check, which the compile that follows reuses."""
    found = driver.topology_files()
    if len(found) != 1:
        what = "no Topology document" if not found else f"{len(found)} Topology documents ({', '.join(found[:3])})"
        usage_error(f"--topology is needed: {what} among the paths given")
    return Path(found[0])


def no_intents_or_exit(paths: Sequence[str], declared: int, diags: Sequence[Any]) -> None:
    """Exit 1 with a warning when `paths` declare nothing (no intent, tenant or dataset:
    an empty folder, a mistyped one with only other files, a Topology alone): a CI step
    that checks nothing should not pass.  A folder of tenants or datasets only is a
    program (`compile` writes their namespaces and quotas).  Errors already explain an
    empty result (a file that does not parse) and decide alone."""
    from intentc.diagnostics import has_errors

    if declared == 0 and not has_errors(list(diags)):
        typer.echo(f"intentc: warning: no intents found under {', '.join(paths)}", err=True)
        raise typer.Exit(1)


def declared(program: Any) -> int:
    """How many intents, tenants and datasets a program declares (`no_intents_or_exit`)."""
    if program is None:
        return 0
    return len(program.intents) + len(program.tenants) + len(program.datasets)


RepoTopologyFile = Annotated[str, typer.Option(
    "--topology", "-t", metavar="FILE", help="Topology file (path in the repository).")]
# A bound, not a parser: a parser would send every `check` through typer's pydantic
# conversion (cli/coercion.py converts plain bounded ints without it).
MAX_JOBS = 1024
Jobs = Annotated[int, typer.Option("--jobs", "-j", metavar="N", min=0, max=MAX_JOBS,
                                   help=f"Parallel parsers (0: one per core; at most {MAX_JOBS}).")]
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
AllowDirty = Annotated[bool, typer.Option(
    "--allow-dirty",
    help="Go on when the inputs have uncommitted changes: stamp <SHA>-dirty and a digest of the content "
         "instead of the commit, which does not hold them (default: refuse, exit 2).")]

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
def seconds_parser(option: str, minimum: float = 0.0, whole: bool = False) -> Any:
    """The parser of a time option (`--timeout 5m`, `90s`, `1h30m`, or plain seconds),
    through the one duration notation (`intentc.ir.duration`): seconds as a float (an int
    with `whole`), a usage error below `minimum` or not a duration."""
    from intentc.ir.duration import parse_seconds

    def parse(text: str | float) -> float:
        if isinstance(text, (int, float)):      # a default, already in seconds
            return text
        seconds = parse_seconds(text)
        if seconds is None:
            raise typer.BadParameter(f"{text!r} is not a duration (e.g. 90s, 5m, 1h30m, or seconds: 90)")
        if seconds < minimum:
            raise typer.BadParameter(f"{text} is shorter than {minimum:g}s")
        if whole:
            if seconds != int(seconds):
                raise typer.BadParameter(f"{text} is not a whole number of seconds")
            return int(seconds)
        return seconds

    parse.__name__ = option.lstrip("-").replace("-", "_")
    return parse


def duration_option(default: Any, name: str, help: str, minimum: float = 0.0, whole: bool = False) -> Any:
    """A time option: DURATION (`90s`, `5m`, `1h30m`) or plain seconds (docs/cli-conventions.md)."""
    return typer.Option(default, name, metavar="DURATION", parser=seconds_parser(name, minimum, whole), help=help)


# Output.  As in kubectl, -o/--output is the output format in every command; a
# directory to write is -d/--out-dir, a single file to write --out FILE, and -f a
# file to read (`-`: standard input).  docs/cli-conventions.md; cli/spellings.py
# takes the older spellings for one release.
DiagnosticsFormat = Annotated[OutputFormat, typer.Option("--diagnostics-format",
                                                         help="Format of the diagnostics (on stderr).")]


def format_option(default: Any, help: str = "Output format.") -> Any:
    """The -o/--output option of a command; `default` is a member of its format enum."""
    return typer.Option(default, "--output", "-o", help=help)


def out_dir_option(default: Any, help: str) -> Any:
    """-d/--out-dir DIR: the directory a command writes a tree into."""
    return typer.Option(default, "--out-dir", "-d", metavar="DIR", help=help)


class DryRun(str, enum.Enum):
    """--dry-run[=none|client|server], as kubectl's: bare --dry-run is client."""

    NONE = "none"
    CLIENT = "client"
    SERVER = "server"


def dry_run_option(help: str) -> Any:
    return typer.Option(DryRun.NONE, "--dry-run", help=help)


STDIN = "-"


def read_input(path: str) -> tuple[Any, list[Any]]:
    """A `-f FILE` input as `intentc.frontend.sources.read_source` reads it, `-` being standard
    input (shown as <stdin>); (None, diagnostics) when it cannot be read."""
    from intentc.frontend.sources import SourceFile, decode, read_source

    if path != STDIN:
        return read_source(Path(path))
    import sys

    text, diags = decode("<stdin>", sys.stdin.buffer.read())
    return (None if text is None else SourceFile("<stdin>", text)), diags


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


def read_cluster_or_exit(kubeconfig: str | None, context: str | None, read: Callable[[Any], R], what: str) -> R:
    """`read(client)` on a client of the kubeconfig's cluster, closed after; exit 2 with
    "cannot read the cluster `what`" when it cannot be reached or refuses."""
    from intentc.kube.client import KubeClient
    from intentc.kube.errors import KubeError

    try:
        client = KubeClient.connect(kubeconfig, context)
        try:
            return read(client)
        finally:
            client.close()
    except KubeError as e:
        usage_error(f"cannot read the cluster{what}: {e.message}")


def live_occupancy_or_exit(kubeconfig: str | None, context: str | None, only_file_nodes: bool, program: Any,
                           loaded: Any) -> tuple[Any, Any, tuple[str, ...]]:
    """(topology, Occupancy, notes) read from the cluster: the topology file's nodes plus
    the cluster's GPU nodes it does not list (plan/cluster_nodes.py); exit 2 when the
    cluster cannot be read."""
    from intentc.kube.cluster_state import read_cluster_state
    from intentc.plan.cluster_nodes import with_cluster_nodes
    from intentc.plan.live_occupancy import occupancy

    state = read_cluster_or_exit(kubeconfig, context, read_cluster_state, " to plan on")
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


def paths_or_exit(paths: Sequence[str | Path], fmt: OutputFormat = OutputFormat.TEXT,
                  to_stderr: bool = False) -> None:
    """Exit 2, with the E0001 diagnostic `intentc check` gives, when any of `paths`
    does not exist: before the work, so that a command never reports on nothing (an
    empty graph, a commit lookup in a folder that is not there) for a mistyped path."""
    from intentc.frontend.sources import missing_paths

    diags = missing_paths(str(p) for p in paths)
    if diags:
        emit_diagnostics(diags, fmt, {}, to_stderr=to_stderr)
        raise typer.Exit(EXIT_USAGE)


def write_output_or_exit(out: str | Path, text: str) -> None:
    """Write one output file (`--out FILE`; `-` is stdout) by the rule of `intentc.atomic`:
    a file intentc writes never replaces something that is not a regular file.  A path
    that cannot be written is a usage error (exit 2), not a traceback."""
    from intentc.atomic import write_output

    try:
        write_output(out, text)
    except OSError as e:
        usage_error(cannot_write(out, e))


def output_dir_or_exit(out: str | Path) -> None:
    """Refuse, before any work, an output directory (`-d/--out-dir DIR`) that exists and is not
    a directory (a file, a device, a dangling link): exit 2.  A link to a directory is fine."""
    import os

    if os.path.lexists(out) and not Path(out).is_dir():
        if not os.path.exists(out):
            usage_error(f"{Path(out).as_posix()}: is a symbolic link to {os.readlink(out)}, which does not exist")
        usage_error(f"{Path(out).as_posix()}: exists and is not a directory")


def cannot_write(out: str | Path, e: OSError) -> str:
    """The message for a write that failed: the path the OS names (a file inside an
    output directory, say), else `out`, and the reason without Python's errno prefix."""
    where = e.filename if isinstance(e.filename, str) else Path(out).as_posix()
    return f"cannot write {where}: {e.strerror or e}"


def stamp_or_exit(paths: Sequence[str], also: Sequence[str | Path], explicit: str | None, allow_dirty: bool,
                  exclude: Sequence[str] = ()) -> Stamp:
    """The commit stamp of `compile` / `apply` (`intentc.pipeline.provenance`): --commit or git HEAD,
    refused with exit 2 when the inputs have uncommitted changes and `allow_dirty` is not
    set (the SHA would claim content no commit holds)."""
    from intentc.pipeline.commit import CommitError
    from intentc.pipeline.provenance import stamp_for

    try:
        return stamp_for(paths, also, explicit, allow_dirty, exclude)
    except CommitError as e:
        usage_error(str(e))


def say_dirty(stamp: Stamp) -> None:
    """A note (stderr) that what was compiled is not a commit's: the stamp and the digest."""
    if stamp.digest is not None:
        typer.echo(f"note: compiled from uncommitted changes ({len(stamp.dirty)} input file(s)): stamped "
                   f"{stamp.commit} and content digest {stamp.digest}", err=True)


def commit_or_exit(paths: Sequence[str], explicit: str | None) -> str:
    """The commit SHA to stamp: --commit, else git HEAD of the inputs."""
    from intentc.pipeline.commit import CommitError, resolve_commit

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


# Batch recommendations from live metrics (intentc/tune, docs/sizing.md)
PrometheusUrl = Annotated[Optional[str], typer.Option(
    "--prometheus-url", metavar="URL",
    help="Prometheus server to read serving intents' P99 latency, GPU memory and OOM kills from "
         "(http://host:9090); batch recommendations are off without it.")]
TuneConfigFile = Annotated[Optional[Path], typer.Option(
    "--tune-config", metavar="FILE",
    help="YAML file with a `tune:` section: the PromQL queries, SLA latency targets, hysteresis and bounds "
         "(docs/sizing.md; default: DCGM exporter's, vLLM's and kube-state-metrics' names).")]


def tune_config_or_exit(path: Path | None) -> TuneConfig:
    """The tune configuration of `path` (the defaults without one); exit 2 when it is unreadable or wrong."""
    from intentc.tune.queries import ConfigError, TuneConfig, load_config

    if path is None:
        return TuneConfig()
    try:
        return load_config(path.read_text(encoding="utf-8"))
    except OSError as e:
        usage_error(f"cannot read {path}: {e.strerror or e}")
    except ConfigError as e:
        usage_error(f"{path}: {e}")


def prometheus_or_exit(url: str, timeout: float = 10.0) -> Prometheus:
    from intentc.tune.prometheus import Prometheus, PrometheusError

    try:
        return Prometheus(url, timeout)
    except PrometheusError as e:
        usage_error(f"--prometheus-url: {e.message}")
