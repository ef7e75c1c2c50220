"""Semantic-consistency rollback: back to the last commit that ran well.

When the rollout of commit C is not consistent (`intentc.drift.consistency`),
the last known-good commit recorded in the inventory is compiled again
*from git history* — its files are read from the object database, never
from a checkout of the repository — and applied; C is quarantined on the
inventory so the daemon does not apply it again (a newer commit clears
it), and an Event plus a log line say why.  `intentc rollback --to
last-good|REV` runs the same function by hand.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Sequence

from intentc.atomic import write_atomic
from intentc.diagnostics import Diagnostic, Related, Span
from intentc.drift import quarantine
from intentc.fleet.select import for_cluster
from intentc.kube import events
from intentc.kube.client import KubeClient
from intentc.objectmeta import ObjectRef
from intentc.pipeline.driver import compile_paths
from intentc.pipeline.loading import Reused
from intentc.pipeline.result import CompileResult
from intentc.plan.model import Plan
from intentc.reconcile import inventory_store
from intentc.reconcile.inventory import LAST_GOOD, Inventory, inventory_ref
from intentc.reconcile.result import ApplyResult
from intentc.reconcile.sync import ApplyOptions, Reconciler
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.model import is_commit_stamp, short_stamp
from intentc.render.packed import BodyCodec
from intentc.render.targets import DEFAULT_TARGET
from intentc.vcs import gitrepo

log = logging.getLogger("intentc.drift")


class RollbackError(Exception):
    """Nothing to roll back to, or it does not compile: reported, exit 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class RepoSource:
    """Where the intents of a commit are: a repository, repo-relative input
    paths, and the topology (repo-relative, or a file outside the repository)."""

    repo: str
    paths: tuple[str, ...] = ("intents",)
    topology: str = "clusters/cluster.yaml"
    kube_version: KubeVersion = DEFAULT_KUBE_VERSION
    render_target: str = DEFAULT_TARGET
    seed: int = 0
    cluster: tuple[str, tuple[tuple[str, str], ...]] | None = None    # a fleet's cluster: (name, labels)


_EXPORT_LOCK = threading.Lock()


def _relabel(d: Diagnostic, root: str) -> Diagnostic:
    def span(s: Span) -> Span:
        return replace(s, file=s.file[len(root):]) if s.file.startswith(root) else s
    return replace(d, span=span(d.span), related=tuple(Related(r.message, span(r.span)) for r in d.related))


def _export(repo: str, listing: dict[str, str], dest: Path) -> None:
    """Make `dest` hold exactly the files of `listing` (path -> blob SHA), writing only
    those that differ from the last export.  A daemon following a 100,000-file
    repository rewrote every file for each commit: every write a new `lstat`, so the
    parse cache's stat index vouched for nothing and each file was read and hashed
    again.  What the last export wrote is recorded beside `dest` once it is complete;
    without that record (the first export, or one cut short) `dest` is made afresh,
    as it is when anything there is not as that record says."""
    record = dest.with_name(dest.name + ".blobs.json")
    previous = _last_export(record) if dest.is_dir() else None
    record.unlink(missing_ok=True)              # until this export is complete
    try:
        _write_export(repo, listing, previous, dest)
    except OSError:                             # a file became a folder, or a link is there: afresh
        _write_export(repo, listing, None, dest)
    write_atomic(record, json.dumps(listing, sort_keys=True))


def _last_export(record: Path) -> dict[str, str] | None:
    try:
        loaded = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(loaded, dict) and all(isinstance(v, str) for v in loaded.values()):
        return loaded
    return None


def _write_export(repo: str, listing: dict[str, str], previous: dict[str, str] | None, dest: Path) -> None:
    if previous is None:
        shutil.rmtree(dest, ignore_errors=True)
        previous = {}
    for rel in sorted(previous.keys() - listing.keys()):
        (dest / rel).unlink(missing_ok=True)
    changed = {rel: blob for rel, blob in listing.items() if previous.get(rel) != blob}
    blobs = gitrepo.read_blobs(repo, changed.values())
    for rel, blob in changed.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            raise OSError(f"{target} is a link")
        target.write_bytes(blobs[blob])


def compile_revision(source: RepoSource, rev: str, workdir: str | Path, reuse: Reused | None = None,
                     previous: Plan | None = None, pack: BodyCodec | None = None) -> CompileResult:
    """Compile the intents as they are at `rev`, stamped with its SHA.

    The revision's files are read from git's object database and exported to
    `workdir/revision/` (a private folder, reused so the parse cache keeps
    working across revisions); the repository's working tree, index and
    HEAD are never touched.  Diagnostics (and graph.json) name
    repository-relative paths; manifests and plan.json carry no paths.
    The bodies are packed (`pack`, a fresh codec by default): whoever calls
    this keeps every object of the commit."""
    sha = gitrepo.resolve(source.repo, rev)
    topo_rel = Path(source.topology).as_posix()
    in_repo = not Path(topo_rel).is_absolute()
    topo_dir = Path(topo_rel).parent.as_posix()
    wanted = set(source.paths) | ({"" if topo_dir == "." else topo_dir} if in_repo else set())
    prefixes = tuple(sorted(p.strip("/") for p in wanted))
    listing = gitrepo.list_tree(source.repo, sha, prefixes)
    with _EXPORT_LOCK:
        dest = Path(workdir) / "revision"
        _export(source.repo, listing, dest)
        topology = str(dest / topo_rel) if topo_rel in listing else source.topology
        inputs = [str(dest / p) for p in source.paths]
        only = for_cluster(source.cluster[0], dict(source.cluster[1])) if source.cluster is not None else None
        result = compile_paths(inputs, topology, sha, source.kube_version, source.render_target, source.seed,
                               jobs=1, only=only, pack=BodyCodec() if pack is None else pack, reuse=reuse,
                               previous=previous)
        root = str(dest) + "/"
        return replace(result, diagnostics=tuple(_relabel(d, root) for d in result.diagnostics),
                       sources={k.removeprefix(root): v for k, v in result.sources.items()},
                       files_under=root)


@dataclass(frozen=True)
class RollbackOutcome:
    from_commit: str | None          # the commit rolled back (quarantined), if any
    to_commit: str
    reason: str
    dry_run: bool
    applied: ApplyResult
    quarantined: bool

    @property
    def ok(self) -> bool:
        return self.applied.result == "succeeded"

    def to_text(self) -> str:
        head = (f"rollback from {short_stamp(self.from_commit)} to {self.to_commit[:12]}" if self.from_commit
                else f"rollback to {self.to_commit[:12]}")
        lines = [head + (" (dry run)" if self.dry_run else ""), f"reason: {self.reason}"]
        if self.quarantined and self.from_commit:
            lines.append(f"quarantined {self.from_commit[:12]}: the daemon will not apply it again")
        return "\n".join(lines) + "\n" + self.applied.to_text()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def target_commit(inventory: Inventory, repo: str, to: str) -> str:
    if to == LAST_GOOD:
        good = inventory.last_known_good
        if not good:
            raise RollbackError(f"the inventory {inventory_ref(inventory.target)} records no last known-good "
                                f"commit (no apply has finished healthy yet)")
        if not is_commit_stamp(good):
            # `Inventory.with_record` never records a dirty tree's stamp as known-good; an inventory
            # edited by hand might, and no commit holds what that stamp stands for
            raise RollbackError(f"the inventory {inventory_ref(inventory.target)} records {short_stamp(good)} as "
                                f"last known-good: an apply from a dirty tree, not a commit; pass --to REV")
        return good
    try:
        return gitrepo.resolve(repo, to)
    except gitrepo.GitError as e:
        raise RollbackError(str(e)) from None


def rollback(client: KubeClient, source: RepoSource, workdir: str | Path, to: str = LAST_GOOD, *,
             reason: str = "rolled back by hand", bad: str | None = None, options: ApplyOptions = ApplyOptions(),
             failing: Sequence[ObjectRef] = ()) -> RollbackOutcome:
    """Apply the commit `to` (`last-good` or a revision) and quarantine the
    commit it replaces (`bad`, default: the newest apply in the inventory).
    Events go to the inventory and to each of the `failing` objects (those
    that made the rollout inconsistent)."""
    inventory = inventory_store.read_inventory(client, options.target)
    sha = target_commit(inventory, source.repo, to)
    if bad is None and inventory.last is not None and inventory.last.commit != sha:
        bad = inventory.last.commit
    if bad == sha:
        bad = None
    try:
        compiled = compile_revision(source, sha, workdir)
    except gitrepo.GitError as e:
        raise RollbackError(str(e)) from None
    if not compiled.ok or compiled.rendered is None:
        first = next((d for d in compiled.diagnostics if d.is_error), None)
        raise RollbackError(f"commit {sha[:12]} does not compile any more"
                            + (f": {first.span}: {first.message}" if first else ""))
    applied = Reconciler(client, replace(options, force_conflicts=True)).apply(compiled.rendered)
    done = False
    if not options.dry_run and bad is not None and is_commit_stamp(bad):
        # a dirty tree's stamp (`<sha>-dirty`) is no commit the daemon could apply: nothing to quarantine
        q = quarantine.read(client, options.target).add(quarantine.Entry(bad, reason, _now(), sha))
        quarantine.write(client, options.target, q)
        done = True
        message = f"rolled back from {bad[:12]} to {sha[:12]}: {reason}"
        log.warning("rollback: %s; %s is quarantined", message, bad[:12])
        inv = inventory_ref(options.target)
        events.emit(client, inv, "RolledBack", message, live=client.get(inv))
        for ref in failing:
            events.emit(client, ref, "RolledBack", message)
    return RollbackOutcome(bad, sha, reason, options.dry_run, applied, done)
