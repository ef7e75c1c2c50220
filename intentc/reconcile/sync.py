"""Apply rendered objects to a cluster: pair, decide, sync, prune, record.

Release order (`apply --wait`, and the daemon's rollouts through the same
`Reconciler`): the setup steps first, one after the other — namespaces,
RBAC, quotas (with Kueue's flavors, cohort and queues, DRA's claim
templates), priority classes; inside a step objects are independent and go
out concurrently.  Then each intent's objects are created as soon as *its
own* prerequisites are done (`reconcile/release.py`): the intents it
depends on (`after` + datasets) have succeeded and, where pods are pinned
to the plan's nodes, the intent the plan runs just before it on its GPUs
has ended.  Intents released at the same moment are bound on live state
together, around each other and around the intents still running
(`LiveBinder.bind`); one the cluster cannot hold now waits for room.  Each
intent has its own time limit (its budget, `reconcile/timeouts.py`, from
its release); one that fails or times out holds back its dependants, and
only them, and the run reports both.  Without a release order (rollbacks,
and the fidelity benchmark's baseline) the prerequisites are
every intent of the earlier waves: whole-wave release.  Without `wait`
every step is applied at once, in order.

That a Job ended is learnt from a watch on the namespaces the release writes
Jobs to (`reconcile/watched.py`): the loop wakes on each change, so a
dependant is created as soon as its prerequisite completes rather than at
the next poll.  Other kinds (Deployments), and Jobs while their watch is
not live, are read once per poll interval.

An object whose live spec-hash equals the desired one gets no request at
all, and an apply that changes nothing does not even touch the inventory —
so a no-op re-apply sends zero writes.

The inventory is written ahead of each batch that writes (its objects as
`pending`) and confirmed after it, so an apply cut off midway leaves a
record of every object that may exist; running again converges.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from itertools import groupby
from typing import Any, Mapping

from intentc.kube.client import KubeClient
from intentc.progress import Progress, silent
from intentc.kube.errors import AccessDenied, ApplyConflict, Invalid, KubeError, NotFound, Unreachable
from intentc.reconcile.fields import without_handed_over
from intentc.reconcile.diff import Action, Pair, decide, field_diff, is_managed, live_hash, pair, repair_diff
from intentc.reconcile.health import Health, HealthStatus, health_of, job_succeeded_by_pods, worst
from intentc.reconcile.lock import ApplyLock, LockBusy
from intentc.reconcile import inventory_store
from intentc.reconcile.inventory import (DEFAULT_TARGET_NAME, INVENTORY_NAMESPACE, Entry, Inventory,
                                         Record, inventory_ref)
from intentc.plan.rebind import Blocked
from intentc.reconcile.live_binding import Binding, LiveBinder, describe
from intentc.reconcile.release import QUOTA_WAIT_S, ReleaseOrder, gpu_room
from intentc.reconcile.result import ApplyResult, ObjectOutcome
from intentc.reconcile.timeouts import Budget, wave_timeout
from intentc.reconcile.watched import WATCHED_KINDS, WatchedObjects
from intentc.ir.duration import format_duration
from intentc.kube import events
from intentc.render.meta import labels
from intentc.ir.reserved import reserved_namespace
from intentc.render.tenants import QUOTA_NAME
from intentc.render.model import COMMIT_ANNOTATION, SETUP_STEPS, Manifest, Rendered, step_label
from intentc.objectmeta import MANAGED_BY, MANAGED_BY_LABEL, ObjectRef

REPLACEABLE_KINDS = frozenset({"Job"})     # immutable pod template: delete + create
ROOM_POLL_S = 5.0                          # how often a wave that does not fit looks for room again
LIST_WAIT_S = 5.0                          # at most this long for the release's watch to list first
# Kinds checked before pruning a namespace: deleting it would take these along.
# Not Secrets: listing them returns their data, and the daemon's role holds no
# cluster-wide Secret read (SECURITY.md).
NAMESPACE_CONTENT = (("v1", "Pod"), ("v1", "Service"), ("v1", "ConfigMap"),
                     ("v1", "PersistentVolumeClaim"), ("apps/v1", "Deployment"),
                     ("apps/v1", "StatefulSet"), ("batch/v1", "Job"))
SYSTEM_CONTENT = {("ConfigMap", "kube-root-ca.crt")}


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ApplyOptions:
    target: str = DEFAULT_TARGET_NAME
    dry_run: bool = False
    # With dry_run: also send each change to the API server as a dry run (dryRun=All), which
    # validates, admits and checks field ownership; without it (client) only the live objects are read.
    server_dry_run: bool = False
    prune: bool = False
    wait: bool = True
    # Seconds each intent may take to become healthy, from its release; None: its own
    # `budgets` entry (reconcile/timeouts.py), FALLBACK_S where none is known.
    timeout: float | None = None
    force_conflicts: bool = False
    workers: int = 8
    poll_interval: float = 1.0
    lock_wait: float = 600.0          # how long to wait for another apply of the target (reconcile.lock)
    budgets: Mapping[str, Budget] = field(default_factory=dict)   # intent -> how long it may take
    # With wait: what each intent waits for before it is created (reconcile/release.py); None
    # (or `release.WAVES`): every intent of the earlier waves, the whole-wave release
    release: ReleaseOrder | None = None
    # With wait: learn that Jobs ended from a watch (reconcile/watched.py); False reads them once
    # per poll_interval instead, the previous way (apply's hidden `--release poll`, the fidelity
    # benchmark's baseline for the watch)
    watch: bool = True


class _Abort(Exception):
    """The cluster went away or refused us as a whole: stop, report, exit 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Reconciler:
    def __init__(self, client: KubeClient, options: ApplyOptions = ApplyOptions(),
                 clock: Callable[[], str] = utc_now, sleep: Callable[[float], None] = time.sleep,
                 monotonic: Callable[[], float] = time.monotonic, progress: Progress = silent,
                 binder: LiveBinder | None = None) -> None:
        self.client = client
        self.binder = binder          # re-plans on live state (the whole plan, or each wave under --wait)
        self._binding: list[str] = []
        self.progress = progress
        self.opts = options
        self.clock = clock
        self.sleep = sleep
        self.monotonic = monotonic
        self._namespace_ready = False
        self._others: dict[str, Inventory] | None = None
        self._lock = threading.Lock()
        self._apply_lock: ApplyLock | None = None      # held while `apply` writes (`_still_holding`)
        self._held: frozenset[str] = frozenset()
        self._shards: frozenset[str] = frozenset()      # inventory shards known to exist (inventory_store)
        self._next_poll = 0.0          # when `_await` next reads the objects no watch covers

    # -- entry point ------------------------------------------------------
    def apply(self, rendered: Rendered) -> ApplyResult:
        def result(objects: Sequence[ObjectOutcome], res: str, health: str = "Unknown",
                   message: str = "", written: bool = False) -> ApplyResult:
            return ApplyResult(self.opts.target, rendered.commit, rendered.kube_version, self.opts.dry_run,
                               tuple(objects), res, health, message, written, tuple(self._binding))
        outcomes: list[ObjectOutcome] = []
        self._held = frozenset(rendered.held_tenants)
        lock: ApplyLock | None = None
        try:
            if not self.opts.dry_run:     # one apply per target at a time, from before the inventory is read
                self._ensure_namespace()
                lock = ApplyLock(self.client, self.opts.target, wait=self.opts.lock_wait)
                self._call(lock.acquire)
                self._apply_lock = lock
            inventory = self.load_inventory()
            live = self.list_live(rendered.manifests, inventory)
            if self.binder is not None and (self.opts.dry_run or not self.opts.wait):
                # every wave is created now: bind them all on what the cluster has free now
                rendered = replace(rendered, manifests=self._bind_whole(rendered, live))
            pairs = pair(rendered.manifests, live, inventory.refs())
            if self.opts.dry_run:
                outcomes = self._dry_run(pairs, inventory)
                failed = any(not o.ok for o in outcomes)
                return result(outcomes, "failed" if failed else "succeeded", _health_text(outcomes))
            return self._sync(rendered, pairs, inventory, outcomes, result)
        except LockBusy as e:
            return result(outcomes, "error", "Unknown", f"target {self.opts.target}: {e.message}")
        except _Abort as e:
            return result(outcomes, "error", _health_text(outcomes), e.message)
        except KubeError as e:      # e.g. a server without coordination.k8s.io/v1 Leases (before 1.14)
            return result(outcomes, "error", _health_text(outcomes), f"the API server refused: {e.message}")
        finally:
            self._apply_lock = None
            if lock is not None:
                lock.release()

    def _still_holding(self) -> None:
        """Stop before a write when the apply lock was lost: its renewals failed for longer
        than the Lease lasts, so another apply (or the daemon) may hold the target now,
        and two writers would undo each other's objects."""
        lock = self._apply_lock
        if lock is not None and lock.lost:
            raise _Abort(f"target {self.opts.target}: the apply lock's Lease ran out while this apply was "
                         f"running (its renewals failed); stopped before writing more: run the apply again")

    # -- reading ----------------------------------------------------------
    def load_inventory(self) -> Inventory:
        try:
            stored = self._call(inventory_store.read, self.client, self.opts.target)
            self._shards = stored.shards_present
            return stored.inventory
        except ValueError as e:
            raise _Abort(f"inventory {inventory_ref(self.opts.target)} is unreadable: {e}") from None

    def list_live(self, desired: Sequence[Manifest], inventory: Inventory) -> dict[ObjectRef, Mapping[str, Any]]:
        """Every intentc-labelled object of the kinds in play, one LIST per kind."""
        kinds = sorted({(m.ref.api_version, m.ref.kind) for m in desired} |
                       {(r.api_version, r.kind) for r in inventory.refs()})
        selector = f"{MANAGED_BY_LABEL}={MANAGED_BY}"

        def one(kind: tuple[str, str]) -> list[dict[str, Any]]:
            try:
                return self._call(self.client.list, kind[0], kind[1], "", selector)
            except NotFound:      # a kind the server does not serve (any more)
                return []
        live: dict[ObjectRef, Mapping[str, Any]] = {}
        for items in self._map(one, kinds):
            for item in items:
                live[ObjectRef.of(item)] = item
        return live

    # -- dry run ----------------------------------------------------------
    def _dry_run(self, pairs: list[Pair], inventory: Inventory) -> list[ObjectOutcome]:
        new_namespaces = {p.ref.name for p in pairs if p.ref.kind == "Namespace" and p.live is None and p.desired}

        def one(p: Pair) -> ObjectOutcome:
            action = decide(p)
            assert p.desired is not None
            step = p.desired.step
            diff = _diff_for(action, p)
            if action is Action.UNCHANGED:
                return ObjectOutcome(p.ref, step, action, health=health_of(p.live).status.value)
            if not self.opts.server_dry_run:
                return ObjectOutcome(p.ref, step, action, diff=diff)
            if p.ref.namespace in new_namespaces:
                return ObjectOutcome(p.ref, step, action, diff=diff,
                                     message="namespace is created by this apply; checked client-side only")
            try:
                self._call(self.client.apply, p.desired.body, force=self._force(action), dry_run=True)
                return ObjectOutcome(p.ref, step, action, diff=diff)
            except ApplyConflict as e:
                return _conflict(p.ref, step, action, e)
            except Invalid as e:
                if e.immutable and p.ref.kind in REPLACEABLE_KINDS:
                    return ObjectOutcome(p.ref, step, Action.REPLACE, diff=diff,
                                         message="immutable fields change: delete and re-create")
                return ObjectOutcome(p.ref, step, action, ok=False, diff=diff, message=e.message)
            except KubeError as e:
                return ObjectOutcome(p.ref, step, action, ok=False, message=e.message)
        desired = [p for p in pairs if p.desired is not None]
        outcomes = list(self._map(one, desired))
        outcomes += self._prune_candidates(pairs, inventory, execute=False)
        return outcomes

    # -- sync -------------------------------------------------------------
    def _sync(self, rendered: Rendered, pairs: list[Pair], loaded: Inventory,
              outcomes: list[ObjectOutcome], result: Callable[..., ApplyResult]) -> ApplyResult:
        started = self.clock()
        running = Record(rendered.commit, started)
        desired = [p for p in pairs if p.desired is not None]
        run = _Run(loaded, loaded.mark_interrupted(), running, outcomes)
        failure = ""
        try:
            run.found = self._unlabelled_namespaces(desired)
            if self.opts.wait:
                # setup steps one after the other, then each intent once its own prerequisites are done
                for step, group in groupby((p for p in desired if _step(p) < SETUP_STEPS), key=_step):
                    if self._write(step, list(group), run):
                        failure = f"{sum(not o.ok for o in run.outcomes)} object(s) failed in {_step_name(step)}"
                        break
                if not failure:
                    units = _units([p for p in desired if _step(p) >= SETUP_STEPS])
                    watch = self._watch(units)
                    try:
                        failure = self._release(units, run, watch)
                    finally:
                        if watch is not None:
                            watch.close()
            else:
                for step, group in groupby(desired, key=_step):
                    if self._write(step, list(group), run):
                        failure = f"{sum(not o.ok for o in run.outcomes)} object(s) failed in {_step_name(step)}"
                        break
            inventory, health, written = run.inventory, run.health, run.written
            if not failure:
                pruned = self._prune_candidates(pairs, inventory, execute=self.opts.prune)
                outcomes.extend(pruned)
                gone = [o.ref for o in pruned if o.action is Action.PRUNE and o.ok]
                inventory = inventory.without(gone)
                if any(not o.ok for o in pruned):
                    failure = "prune failed"
            if self._held and not failure:
                failure = f"tenants held back by their errors: {', '.join(sorted(self._held))}"
            wanted = {p.ref for p in desired}
            inventory = inventory.with_entries(replace(e, desired=e.ref in wanted) for e in inventory.entries)
            final = replace(running, finished_at=self.clock(), result="failed" if failure else "succeeded",
                            health=worst(list(health.values())).value, message=failure,
                            counts=tuple(sorted(_counts(outcomes).items())))
            unchanged = (not written and inventory == loaded and loaded.last is not None
                         and final.same_outcome(loaded.last))
            if not unchanged:   # a no-op re-apply records nothing: history keeps changes, not heartbeats
                self._save(inventory.with_record(final))
                written = True
        except _Abort as e:
            return result(outcomes, "error", _health_text(outcomes),
                          f"{e.message}; the inventory records what was applied — run again to converge",
                          run.written)
        return result(outcomes, "failed" if failure else "succeeded",
                      worst(list(health.values())).value, failure, written)

    def _apply_one(self, p: Pair) -> tuple[ObjectOutcome, Mapping[str, Any] | None]:
        assert p.desired is not None
        m, action = p.desired, decide(p)
        diff = _diff_for(action, p)
        try:
            sent = m.body if p.live is None else without_handed_over(m.body)
            body = self._call(self.client.apply, sent, force=self._force(action))
            return ObjectOutcome(m.ref, m.step, action, written=True, diff=diff), body
        except ApplyConflict as e:
            return _conflict(m.ref, m.step, action, e), p.live
        except Invalid as e:
            if e.immutable and m.ref.kind in REPLACEABLE_KINDS:
                return self._replace(m, diff)
            return ObjectOutcome(m.ref, m.step, action, ok=False, diff=diff, message=e.message), p.live
        except KubeError as e:
            return ObjectOutcome(m.ref, m.step, action, ok=False, diff=diff, message=e.message), p.live

    def _force(self, action: Action) -> bool:
        """A repair takes fields back from whoever changed them (git did not move, so
        the change is drift); an update from a new commit stops at a conflict unless
        --force-conflicts says otherwise."""
        return self.opts.force_conflicts or action is Action.REPAIR

    def _replace(self, m: Manifest, diff: tuple[str, ...]) -> tuple[ObjectOutcome, Mapping[str, Any] | None]:
        """Delete (background propagation) and create again: the only way to change a Job's template."""
        try:
            self._call(self.client.delete, m.ref)
            for _ in range(60):
                if self._call(self.client.get, m.ref) is None:
                    break
                self.sleep(0.5)
            body = self._call(self.client.apply, m.body, force=self.opts.force_conflicts)
            return ObjectOutcome(m.ref, m.step, Action.REPLACE, written=True, diff=diff,
                                 message="immutable fields changed: deleted and re-created"), body
        except KubeError as e:
            return ObjectOutcome(m.ref, m.step, Action.REPLACE, ok=False, diff=diff, message=e.message), None

    def _unlabelled_namespaces(self, desired: list[Pair]) -> set[ObjectRef]:
        """Desired Namespaces that exist without intentc's label (the live listing
        sees only labelled objects): applying them adopts them, and adopted
        namespaces are never pruned.  One GET per such tenant namespace."""
        new = [p.ref for p in desired if p.ref.kind == "Namespace" and p.live is None]
        return {r for r, body in zip(new, self._map(lambda r: self._call(self.client.get, r), new))
                if body is not None}

    def _confirm(self, inventory: Inventory, loaded: Inventory, todo: list[Pair],
                 done: list[tuple[ObjectOutcome, Mapping[str, Any] | None]], found: set[ObjectRef]
                 ) -> Inventory:
        """Pending entries become applied; a failed write falls back to what was there."""
        applied, restored, dropped = [], [], []
        for p, (outcome, _) in zip(todo, done):
            if outcome.ok:
                applied.append(_entry(p, "applied", old=loaded.entry(p.ref), existed=p.ref in found))
            elif (old := loaded.entry(p.ref)) is not None:
                restored.append(old)
            elif p.live is None:
                dropped.append(p.ref)
            else:   # exists, never recorded: keep it on record, unconfirmed
                restored.append(_entry(p, "pending", old=loaded.entry(p.ref), existed=p.ref in found))
        return inventory.with_entries(applied + restored).without(dropped)

    # -- writing ----------------------------------------------------------
    def _write(self, step: int, items: Sequence[Pair], run: _Run, kept: Mapping[ObjectRef, str] | None = None,
               what: str = "") -> list[ObjectOutcome]:
        """Apply `items` (of `step`, or released together: `what` names them) concurrently,
        the inventory written ahead (`pending`) and confirmed after; the failed outcomes."""
        todo = [p for p in items if decide(p) is not Action.UNCHANGED]
        same = [p for p in items if p not in todo]
        for p in same:
            run.health[p.ref] = health_of(p.live)
            run.bodies[p.ref] = p.live
            run.outcomes.append(ObjectOutcome(p.ref, _step(p), Action.UNCHANGED,
                                              health=run.health[p.ref].status.value,
                                              message=(kept or {}).get(p.ref, "")))
        # unchanged objects are on record too, with the commit that last wrote them
        run.inventory = run.inventory.with_entries(
            _entry(p, "applied", _live_commit(p), run.loaded.entry(p.ref), p.ref in run.found, live_hash(p.live))
            for p in same)
        if not todo:
            return []
        self._still_holding()
        label = what or _step_name(step)
        self.progress(f"{label}: applying", 0, len(todo))
        run.inventory = run.inventory.with_entries(
            _entry(p, "pending", old=run.loaded.entry(p.ref), existed=p.ref in run.found)
            for p in todo).with_record(run.record)
        self._save(run.inventory)
        run.written = True
        done = list(self._map(self._apply_one, todo))
        self.progress(f"{label}: applying", len(done), len(todo))
        run.inventory = self._confirm(run.inventory, run.loaded, todo, done, run.found)
        for p, (outcome, body) in zip(todo, done):
            run.health[p.ref] = health_of(body) if body is not None else Health(HealthStatus.MISSING)
            run.bodies[p.ref] = body
            run.outcomes.append(replace(outcome, health=run.health[p.ref].status.value))
        return [o for o, _ in done if not o.ok]

    # -- releasing intents ------------------------------------------------
    def _watch(self, units: Mapping[str, _Unit]) -> WatchedObjects | None:
        """A started watch on the Jobs of `units`, in their namespaces (None: none to watch,
        or `ApplyOptions.watch` is off)."""
        namespaces = {p.ref.namespace for u in units.values() for p in u.pairs
                      if (p.ref.api_version, p.ref.kind) in WATCHED_KINDS}
        if not self.opts.watch or not namespaces:
            return None
        return WatchedObjects(self.client, namespaces).start().listed(min(self.opts.poll_interval, LIST_WAIT_S))

    def _release(self, units: dict[str, _Unit], run: _Run, watch: WatchedObjects | None = None) -> str:
        """Create each intent's objects once its prerequisites are done (reconcile/release.py),
        wait for them to be healthy within the intent's budget, and hold back the dependants
        of an intent that failed; the run's failure message, "" when every intent succeeded.
        With `watch`, waiting ends at the first change to a watched Job; without, each
        running object is read again every poll interval."""
        order = self.opts.release
        waves = order is None or order.waves
        self._next_poll = self.monotonic() + self.opts.poll_interval    # objects no watch covers
        ordered = sorted(units.values(), key=_Unit.sort_key)      # a prerequisite is in an earlier wave
        while True:
            began = self.monotonic()
            self._settle(units, run)
            self._hold_back(ordered, units, order)
            now = self.monotonic()
            # whole-wave release (and objects of no intent): every unit of the earlier waves done
            open_step = min((u.step for u in ordered if u.state is not _State.DONE), default=0)
            ready = [u for u in ordered if u.state is _State.WAITING and self._ready(u, units, order, open_step)]
            ready, short = self._quota_room(ready, units, order, watch, now)
            batch = ready + [u for u in ordered if u.state is _State.ROOM and now >= u.next_look]
            if batch:
                self._start(batch, units, run)
                continue
            live = [u for u in ordered if u.state in (_State.RUNNING, _State.ROOM)]
            if not live and short:      # nothing else to wait for: the quota's count
                assert watch is not None
                watch.wait(watch.seq, min((u.quota_since or now) + QUOTA_WAIT_S for u in short) - now)
                continue
            if not live:
                stuck = [u for u in ordered if u.state is _State.WAITING]
                if not stuck:
                    break
                for u in stuck:     # cannot happen with a release order from a plan; never loop forever
                    u.state, u.blockers = _State.HELD, ("a prerequisite that was never released",)
                continue
            self._report(units, waves)
            looks = [u.next_look - now for u in live if u.state is _State.ROOM]
            looks += [(u.quota_since or now) + QUOTA_WAIT_S - now for u in short]
            running = [u for u in live if u.state is _State.RUNNING]
            if watch is None:
                self.sleep(max(0.0, min([self.opts.poll_interval, *looks])))
                self._poll(running, run)
            else:
                self._await(watch, running, run, looks, began)
        return _failure(units)

    def _await(self, watch: WatchedObjects, running: Sequence[_Unit], run: _Run, looks: Sequence[float],
               began: float) -> None:
        """Take the running objects' state as soon as it changes: watched Jobs from the watch's
        cache, waking at its first change; the rest (other kinds, Jobs whose stream is not
        live) with a GET once per poll interval.  Waiting ends too at the next look for room
        or the next deadline, and at least every poll interval in `self.sleep`, where the
        daemon stops a rollout it no longer leads.  After a change it lets further changes
        gather for as long as this pass of the loop has taken (since `began`): every pass
        scans all the intents, and a rollout of many thousands, woken at every Job event,
        would otherwise spend all its time scanning; an apply of a few hundred waits
        milliseconds."""
        pending = [p.ref for u in running for p in u.pairs if run.health[p.ref].status is not HealthStatus.HEALTHY]
        if not pending:         # only looks are due (room, a quota's count): wake at the first or a change
            if looks:
                watch.wait(watch.seq, max(0.0, min([self.opts.poll_interval, *looks])))
            return
        before = {r: run.health[r].status for r in pending}
        seen = watch.seq
        watched = [r for r in pending if self._watched(watch, r, run)]
        if any(run.health[r].status is not before[r] for r in watched):
            return                      # news already: settle it first
        covered = set(watched)
        others = [r for r in pending if r not in covered]
        now = self.monotonic()
        bound = min([self.opts.poll_interval, *looks, *(u.deadline - now for u in running),
                     *([self._next_poll - now] if others else [])])
        spent = now - began
        if bound > 0 and watch.wait(seen, bound) != seen:
            self.sleep(max(0.0, min(spent, bound)))
        else:
            self.sleep(0)
        for r in watched:
            self._watched(watch, r, run)
        now = self.monotonic()
        if others and now >= self._next_poll:
            self._next_poll = now + self.opts.poll_interval
            for r, body in zip(others, self._map(lambda r: self._call(self.client.get, r), others)):
                run.health[r] = health_of(body)
                run.bodies[r] = body

    @staticmethod
    def _watched(watch: WatchedObjects, ref: ObjectRef, run: _Run) -> bool:
        """Take `ref`'s state from the watch's cache; False when the watch does not cover it
        (another kind, or its stream is not live).  A cached object of another uid than the
        one this apply wrote or found (a replaced Job whose deletion the watch has not seen
        yet) or none at all (its creation not seen yet) is no news: what is known stays."""
        covered, body = watch.lookup(ref)
        if not covered:
            return False
        known = run.bodies.get(ref)
        uid = ((known or {}).get("metadata") or {}).get("uid")
        if body is not None and (not uid or (body.get("metadata") or {}).get("uid") == uid):
            health = health_of(body)
            if health.status is HealthStatus.PROGRESSING and ref.kind == "Job":
                pods = watch.job_pods(body)      # its pods may have succeeded before it says so
                health = (job_succeeded_by_pods(body, pods) if pods else None) or health
            run.health[ref] = health
            run.bodies[ref] = body
        return True

    @staticmethod
    def _quota_room(ready: list[_Unit], units: Mapping[str, _Unit], order: ReleaseOrder | None,
                    watch: WatchedObjects | None, now: float) -> tuple[list[_Unit], list[_Unit]]:
        """(those of `ready` to create now, those whose tenant's quota does not show room for
        their GPUs yet): see reconcile/release.py.  Room is shared out in the plan's order of
        starts among the ready intents of one namespace.  What the quota counts lags both
        ways: an intent created a moment ago has no pods yet, one that ended still has its
        pods counted; so the GPUs taken are the larger of the quota's count and the GPUs of
        this apply's running intents there.  A quota the watch does not cover, or one that
        says nothing of GPUs, holds nobody, nor does one that has not shown room within
        QUOTA_WAIT_S."""
        if watch is None or order is None or not order.gpus:
            return ready, []
        go: list[_Unit] = []
        short: list[_Unit] = []
        running: dict[str, int] = {}
        for r in units.values():
            if r.state is _State.RUNNING and r.intent is not None and order.gpus.get(r.intent):
                ns = _job_namespace(r)
                if ns is not None:
                    running[ns] = running.get(ns, 0) + order.gpus[r.intent]
        given: dict[str, int] = {}
        for u in sorted(ready, key=lambda u: (order.starts.get(u.intent or "", 0), u.sort_key())):
            need = order.gpus.get(u.intent, 0) if u.intent is not None else 0
            ns = _job_namespace(u)
            covered, quota = (False, None) if not need or ns is None else \
                watch.lookup(ObjectRef("v1", "ResourceQuota", ns, QUOTA_NAME))
            room = gpu_room(quota, running.get(ns or "", 0)) if covered else None
            if room is not None and ns is not None:
                u.quota_since = now if u.quota_since is None else u.quota_since
                if room - given.get(ns, 0) < need and now - u.quota_since < QUOTA_WAIT_S:
                    short.append(u)
                    continue
                given[ns] = given.get(ns, 0) + need
            go.append(u)
        return go, short

    @staticmethod
    def _ready(u: _Unit, units: Mapping[str, _Unit], order: ReleaseOrder | None, open_step: int) -> bool:
        if order is None or order.waves or u.intent is None:
            return u.step <= open_step
        return (all(units[n].state is _State.DONE for n in order.after(u.intent) if n in units)
                and all(units[n].state in _ENDED for n in order.gpus_after(u.intent) if n in units)
                and all(units[n].state in _RELEASED for n in order.released_after(u.intent) if n in units))

    @staticmethod
    def _hold_back(ordered: Sequence[_Unit], units: Mapping[str, _Unit], order: ReleaseOrder | None) -> None:
        """A waiting intent whose prerequisite failed or was held back is held back too.
        One pass in wave order: every prerequisite sits in an earlier wave."""
        bad = (_State.FAILED, _State.HELD)
        first = min((u.step for u in ordered if u.state in bad), default=None)
        if first is None:
            return
        culprits = tuple(u.key for u in ordered if u.step == first and u.state in bad)
        for u in ordered:
            if u.state is not _State.WAITING:
                continue
            if order is None or order.waves or u.intent is None:
                blockers = culprits if u.step > first else ()
            else:
                blockers = tuple(n for n in order.after(u.intent) if n in units and units[n].state in bad)
            if blockers:
                u.state, u.blockers = _State.HELD, blockers

    def _start(self, batch: list[_Unit], units: Mapping[str, _Unit], run: _Run) -> None:
        """Bind the intents released together on live state (around each other and the
        intents still running), then create what fits; what does not waits for room."""
        now = self.monotonic()
        for u in batch:
            if u.state is _State.WAITING:
                u.limit, u.why = self._limit(u.pairs)
                u.started, u.deadline = now, now + u.limit
        kept: Mapping[ObjectRef, str] = {}
        go = batch
        if self.binder is not None:
            names = [u.intent for u in batch if u.intent is not None]
            running = sorted(u.intent for u in units.values() if u.state is _State.RUNNING and u.intent is not None)
            b: Binding = self._call(self.binder.bind, names, {p.ref: p.live for u in batch for p in u.pairs},
                                    running)
            by_ref = {m.ref: m for m in b.manifests}
            for u in batch:
                u.pairs = [replace(p, desired=by_ref.get(p.ref, p.desired)) for p in u.pairs]
            stuck = {x.intent: x for x in b.blocked}
            go = [u for u in batch if u.intent not in stuck]
            if go:
                self._record(b, ", ".join(sorted({_step_name(u.step) for u in go}, key=_wave_number)))
            kept = b.kept
            for u in batch:
                if u.intent in stuck:
                    self._wait_for_room(u, stuck[u.intent], now)
        if not go:
            return
        shown = ", ".join(u.key for u in go[:3]) + (f" (+{len(go) - 3} more)" if len(go) > 3 else "")
        failed = {o.ref for o in self._write(go[0].step, [p for u in go for p in u.pairs], run, kept,
                                             f"releasing {shown}")}
        for u in go:
            bad = [p.ref for p in u.pairs if p.ref in failed]
            if bad:
                u.state, u.message = _State.FAILED, f"{len(bad)} object(s) of {u.key} failed in {_step_name(u.step)}"
            else:
                u.state = _State.RUNNING

    def _wait_for_room(self, u: _Unit, why: Blocked, now: float) -> None:
        """An intent the live cluster cannot hold now waits (an Event says why, once per
        reason), up to its budget; each look reads every Node and Pod and plans again."""
        reason = why.text()
        if reason not in u.said:
            u.said.add(reason)
            self._event("WaveWaiting", f"{_step_name(u.step)} waits for room on the live cluster: {reason}")
        if now >= u.deadline:
            u.state = _State.FAILED
            u.message = (f"timed out after {format_duration(int(now - u.started))} waiting for room for "
                         f"{_step_name(u.step)} intent {u.key}, its budget {format_duration(int(u.limit))} "
                         f"({u.why}): {reason}")
            self._event("WaveTimedOut", u.message)
            return
        u.state = _State.ROOM
        u.next_look = now + max(self.opts.poll_interval, min(ROOM_POLL_S, u.deadline - now))

    def _poll(self, active: list[_Unit], run: _Run) -> None:
        """Read the objects of the running intents that are not healthy yet (one GET each)."""
        pending = [p.ref for u in active for p in u.pairs if run.health[p.ref].status is not HealthStatus.HEALTHY]
        for r, body in zip(pending, self._map(lambda r: self._call(self.client.get, r), pending)):
            run.health[r] = health_of(body)
            run.bodies[r] = body

    def _settle(self, units: Mapping[str, _Unit], run: _Run) -> None:
        """Running intents become done (every object healthy), failed (one degraded) or
        timed out (past their budget)."""
        now = self.monotonic()
        for u in units.values():
            if u.state is not _State.RUNNING:
                continue
            refs = [p.ref for p in u.pairs]
            degraded = [r for r in refs if run.health[r].status is HealthStatus.DEGRADED]
            pending = [r for r in refs if run.health[r].status is not HealthStatus.HEALTHY]
            if degraded:
                r = degraded[0]
                u.state, u.message = _State.FAILED, f"{r} failed in {_step_name(u.step)}: {run.health[r].message}"
            elif not pending:
                u.state = _State.DONE
            elif now >= u.deadline:
                u.state = _State.FAILED
                u.message = self._timed_out(u.step, pending, run.health, run.bodies,
                                            {p.ref: p.desired.intent for p in u.pairs if p.desired is not None},
                                            u.limit, u.why, now - u.started)

    def _report(self, units: Mapping[str, _Unit], waves: bool) -> None:
        count = {s: 0 for s in _State}
        for u in units.values():
            count[u.state] += 1
        ended = count[_State.DONE] + count[_State.FAILED] + count[_State.HELD]
        parts = [f"{count[s]} {s.value}" for s in (_State.RUNNING, _State.ROOM, _State.WAITING, _State.FAILED,
                                                   _State.HELD) if count[s]]
        self.progress(f"{'waves' if waves else 'intents'}: {', '.join(parts)}", ended, len(units))

    # -- waiting ----------------------------------------------------------
    def _limit(self, items: Sequence[Pair]) -> tuple[float, str]:
        """(seconds, why) this step may take to become healthy: --timeout, else its intents' budget."""
        if self.opts.timeout is not None:
            return self.opts.timeout, f"--timeout {self.opts.timeout:g}s"
        seconds, why = wave_timeout([p.desired.intent for p in items if p.desired and p.desired.intent],
                                    self.opts.budgets)
        return float(seconds), why

    def _timed_out(self, step: int, pending: list[ObjectRef], health: dict[ObjectRef, Health],
                   bodies: Mapping[ObjectRef, Mapping[str, Any] | None], intents: Mapping[ObjectRef, str | None],
                   limit: float | None, why: str, waited: float) -> str:
        """Which intents are still not healthy, and for how long they ran."""
        now = self.clock()
        parts = []
        for r in pending[:5]:
            name = intents.get(r)
            ran = _ran(bodies.get(r), now)
            parts.append(f"{'intent ' + name + ': ' if name else ''}{r} is {health[r].status.value}"
                         f"{' (' + health[r].message + ')' if health[r].message else ''}"
                         f"{', running for ' + ran if ran else ', not started'}")
        more = f" (and {len(pending) - 5} more)" if len(pending) > 5 else ""
        budget = f"{format_duration(int(limit))} ({why})" if limit is not None and why else \
            (f"{format_duration(int(limit))}" if limit is not None else "")
        return (f"timed out after {format_duration(int(waited))} waiting for {_step_name(step)}"
                f"{', its budget ' + budget if budget else ''}: {'; '.join(parts)}{more}")

    # -- live binding -----------------------------------------------------
    def live_binding(self, rendered: Rendered) -> Binding:
        """What `apply --dry-run` binds, applying nothing: every wave on what the cluster
        has free now, against the objects already there (`intentc diff --kubeconfig`).
        KubeError when the cluster fails."""
        assert self.binder is not None
        try:
            live = self.list_live(rendered.manifests, self.load_inventory())
            result: Binding = self._call(self.binder.whole, live)
            return result
        except _Abort as e:
            raise KubeError(e.message) from None

    def _bind_whole(self, rendered: Rendered, live: Mapping[ObjectRef, Mapping[str, Any]]) -> tuple[Manifest, ...]:
        assert self.binder is not None
        b = self._call(self.binder.whole, live)
        self._record(b, "all waves")
        self._binding += [f"all waves: not placeable on the live cluster now, applied with the preview's "
                          f"binding (its pods wait Pending): {x.text()}" for x in b.blocked]
        return b.manifests

    def _record(self, b: Binding, where: str) -> None:
        """The binding's differences from the preview: in the report, and as an Event on the target."""
        if b.live:
            self._binding += [f"{where}: {line}" for line in describe(b)]
        elif b.notes and not any(line.endswith(b.notes[0]) for line in self._binding):
            self._binding.append(b.notes[0])          # the preview as compiled: said once
        if b.changes and not self.opts.dry_run:
            self._event("LiveBinding", f"{where}: " + "; ".join(c.text() for c in b.changes), kind="Normal")

    def _event(self, reason: str, message: str, kind: str = "Warning") -> None:
        if not self.opts.dry_run:
            events.emit(self.client, inventory_ref(self.opts.target), reason, _short(message, 1000), kind)

    # -- prune ------------------------------------------------------------
    def _prune_candidates(self, pairs: list[Pair], inventory: Inventory, execute: bool) -> list[ObjectOutcome]:
        """Objects in the inventory that are no longer desired, in reverse apply order."""
        stale = [p for p in pairs if p.desired is None]
        steps = {p.ref: (e.step if (e := inventory.entry(p.ref)) else 0) for p in stale}
        stale.sort(key=lambda p: (steps[p.ref], p.ref.kind, p.ref.namespace, p.ref.name), reverse=True)
        out: list[ObjectOutcome] = []
        for step, group in groupby(stale, key=lambda p: steps[p.ref]):
            out.extend(self._map(lambda p: self._prune_one(p, step, execute, inventory), list(group)))
        return out

    def _prune_one(self, p: Pair, step: int, execute: bool, inventory: Inventory) -> ObjectOutcome:
        if p.live is None:
            return ObjectOutcome(p.ref, step, Action.PRUNE, message="already gone")
        if not is_managed(p.live):
            return ObjectOutcome(p.ref, step, Action.PRUNE, message="no longer labelled as managed; left alone")
        entry = inventory.entry(p.ref)
        if entry is not None and entry.tenant in self._held:
            return ObjectOutcome(p.ref, step, Action.ORPHAN, message=f"kept: tenant {entry.tenant} is held back")
        if p.ref.kind == "Namespace" and reserved_namespace(p.ref.name):
            return ObjectOutcome(p.ref, step, Action.ORPHAN, message="kept: a reserved namespace is never pruned")
        if p.ref.kind == "Namespace" and entry is not None and entry.adopted:
            return ObjectOutcome(p.ref, step, Action.ORPHAN,
                                 message="kept: the namespace existed before intentc managed it")
        if not self.opts.prune:
            return ObjectOutcome(p.ref, step, Action.ORPHAN, message="no longer desired; --prune deletes it")
        if not p.ref.namespace and (owner := self._claimed_elsewhere(p.ref)):
            return ObjectOutcome(p.ref, step, Action.ORPHAN, message=f"kept: still desired by target {owner!r}")
        if p.ref.kind == "Namespace":
            foreign = self._unmanaged_content(p.ref.name, inventory.refs())
            if foreign:
                return ObjectOutcome(p.ref, step, Action.ORPHAN,
                                     message=f"kept: holds objects intentc does not manage ({', '.join(foreign[:3])})")
        if not execute:
            return ObjectOutcome(p.ref, step, Action.PRUNE)
        try:
            self._call(self.client.delete, p.ref)
            return ObjectOutcome(p.ref, step, Action.PRUNE, written=True)
        except KubeError as e:
            return ObjectOutcome(p.ref, step, Action.PRUNE, ok=False, message=e.message)

    def _claimed_elsewhere(self, ref: ObjectRef) -> str | None:
        """Another target whose inventory still wants this cluster-scoped object
        (PriorityClasses, shared namespaces): pruning it would break that target."""
        with self._lock:
            if self._others is None:
                self._others, _ = self._call(inventory_store.read_others, self.client, self.opts.target)
        for target, inv in sorted(self._others.items()):
            entry = inv.entry(ref)
            if entry is not None and entry.desired:
                return target
        return None

    def _unmanaged_content(self, namespace: str, ours: set[ObjectRef]) -> list[str]:
        """Objects in `namespace` this target does not manage (deleting the
        namespace would delete them too)."""
        found = []
        for api_version, kind in NAMESPACE_CONTENT:
            for item in self._call(self.client.list, api_version, kind, namespace):
                name = str(item["metadata"]["name"])
                if ObjectRef.of(item) not in ours and (kind, name) not in SYSTEM_CONTENT:
                    found.append(f"{kind} {name}")
        return sorted(found)

    # -- inventory --------------------------------------------------------
    def _ensure_namespace(self) -> None:
        if not self._namespace_ready:
            ns = ObjectRef("v1", "Namespace", "", INVENTORY_NAMESPACE)
            if self._call(self.client.get, ns) is None:
                self._call(self.client.apply, {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": INVENTORY_NAMESPACE, "labels": labels()}})
            self._namespace_ready = True

    def _save(self, inventory: Inventory) -> None:
        self._ensure_namespace()
        try:
            self._shards = self._call(inventory_store.write, self.client, inventory, self._shards)
        except KubeError as e:
            raise _Abort(f"cannot write the inventory {inventory_ref(self.opts.target)}: {e.message}") from None

    # -- plumbing ---------------------------------------------------------
    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one client call; losing the cluster (or our access to it, or its
        storage: etcd down answers 5xx) aborts the apply."""
        try:
            return fn(*args, **kwargs)
        except Unreachable as e:
            raise _Abort(e.message) from None
        except AccessDenied as e:
            raise _Abort(f"access denied: {e.message}") from None
        except KubeError as e:
            if _unavailable(e):
                raise _Abort(f"the API server cannot serve requests (HTTP {e.status}: "
                             f"{_short(e.message)})") from None
            raise

    def _map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        if len(items) <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(max_workers=min(self.opts.workers, len(items))) as pool:
            return list(pool.map(fn, items))


class _State(enum.Enum):
    WAITING = "waiting"       # for its prerequisites
    ROOM = "waiting for room"  # released, but the live cluster cannot hold it now
    RUNNING = "running"       # created, not healthy yet
    DONE = "done"
    FAILED = "failed"
    HELD = "held back"        # a prerequisite failed


# A planned GPU predecessor frees the GPUs however it ended (reconcile/release.py).
_ENDED = frozenset({_State.DONE, _State.FAILED, _State.HELD})
# An intent of a quota-bound tenant that the plan starts earlier no longer holds a later one
# back once its objects are created, or it ended without them (reconcile/release.py).
_RELEASED = frozenset({_State.RUNNING, *_ENDED})


class _Unit:
    """One intent's objects in the waves (or, for objects of no intent, those of one wave),
    released together; mutable state of one apply."""

    def __init__(self, key: str, intent: str | None, step: int, pairs: list[Pair]) -> None:
        self.key, self.intent, self.step, self.pairs = key, intent, step, pairs
        self.state = _State.WAITING
        self.limit, self.why = 0.0, ""
        self.started = self.deadline = self.next_look = 0.0
        self.said: set[str] = set()
        self.message = ""
        self.blockers: tuple[str, ...] = ()
        self.quota_since: float | None = None     # ready since, waiting for its tenant's quota to show room

    def sort_key(self) -> tuple[int, str]:
        return self.step, self.key


class _Run:
    """What an apply accumulates as it goes: the inventory to record, each object's last
    known health and body, the outcomes."""

    def __init__(self, loaded: Inventory, inventory: Inventory, record: Record,
                 outcomes: list[ObjectOutcome]) -> None:
        self.loaded, self.inventory, self.record, self.outcomes = loaded, inventory, record, outcomes
        self.health: dict[ObjectRef, Health] = {}
        self.bodies: dict[ObjectRef, Mapping[str, Any] | None] = {}
        self.found: set[ObjectRef] = set()
        self.written = False


def _job_namespace(u: _Unit) -> str | None:
    """The namespace of the unit's Jobs (its tenant's), None for a unit without one."""
    return next((p.ref.namespace for p in u.pairs if p.ref.kind == "Job"), None)


def _step(p: Pair) -> int:
    return p.desired.step if p.desired is not None else 0


def _units(pairs: Sequence[Pair]) -> dict[str, _Unit]:
    """The waves' objects by intent (objects of no intent: one unit per wave)."""
    out: dict[str, _Unit] = {}
    for p in pairs:
        assert p.desired is not None
        intent = p.desired.intent
        key = intent if intent is not None else _step_name(p.desired.step)
        unit = out.get(key)
        if unit is None:
            unit = out[key] = _Unit(key, intent, p.desired.step, [])
        unit.step = min(unit.step, p.desired.step)
        unit.pairs.append(p)
    return out


def _failure(units: Mapping[str, _Unit]) -> str:
    """The run's failure message: each failed intent, then those held back and by what."""
    ordered = sorted(units.values(), key=_Unit.sort_key)
    failed = [u.message for u in ordered if u.state is _State.FAILED]
    held = [u for u in ordered if u.state is _State.HELD]
    parts = failed[:5] + ([f"(and {len(failed) - 5} more failed)"] if len(failed) > 5 else [])
    if held:
        shown = ", ".join(f"{u.key} (after {', '.join(u.blockers[:3])}{', ...' if len(u.blockers) > 3 else ''})"
                          for u in held[:10])
        parts.append(f"held back by a failed prerequisite: {shown}"
                     + (f" (and {len(held) - 10} more)" if len(held) > 10 else ""))
    return "; ".join(parts)

def _diff_for(action: Action, p: Pair) -> tuple[str, ...]:
    assert p.desired is not None
    if action is Action.UPDATE:
        return field_diff(p.desired.body, p.live)
    if action is Action.REPAIR and p.live is not None:
        return repair_diff(p.desired.body, p.live)
    return ()


def _entry(p: Pair, state: str, commit: str | None = None, old: Entry | None = None,
           existed: bool = False, spec_hash: str | None = None) -> Entry:
    """An object on record; a Namespace that was there before intentc labelled
    it (`existed`) stays `adopted` (never pruned) for as long as it is on record."""
    assert p.desired is not None
    m = p.desired
    adopted = (old is not None and old.adopted) or existed or (
        m.ref.kind == "Namespace" and p.live is not None and not is_managed(p.live))
    # an unchanged object is on record with the hash it carries (a live-bound one: its own, not the preview's)
    return Entry(m.ref, m.step, spec_hash or m.spec_hash, commit or m.commit, m.intent, m.tenant, state, True, adopted)


def _live_commit(p: Pair) -> str | None:
    return ((p.live or {}).get("metadata", {}).get("annotations") or {}).get(COMMIT_ANNOTATION)


def _conflict(ref: ObjectRef, step: int, action: Action, e: ApplyConflict) -> ObjectOutcome:
    fields = ", ".join(sorted({c.field for c in e.conflicts}))
    who = ", ".join(f'"{m}"' for m in e.managers) or "another manager"
    return ObjectOutcome(ref, step, action, ok=False, managers=e.managers,
                         message=f"conflict: {fields} owned by field manager {who} "
                                 f"(--force-conflicts takes ownership)")


# A 500 can be about one object (1.20 answers an unknown field in an apply
# patch with one); these say the server or its storage is not serving at all.
_UNAVAILABLE = ("etcdserver", "etcd cluster", "context deadline exceeded", "timeout", "connection refused",
                "too many requests")


def _unavailable(e: KubeError) -> bool:
    return e.status in (429, 502, 503, 504) or (
        e.status == 500 and any(m in e.message.lower() for m in _UNAVAILABLE))


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _counts(outcomes: Sequence[ObjectOutcome]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in outcomes:
        key = o.action.value if o.ok else "failed"
        out[key] = out.get(key, 0) + 1
    return out


def _health_text(outcomes: Sequence[ObjectOutcome]) -> str:
    known = [Health(HealthStatus(o.health)) for o in outcomes if o.health]
    return worst(known).value if known else "Unknown"


def _step_name(step: int) -> str:
    return step_label(step)


def _wave_number(name: str) -> int:
    return int(name.rpartition("-")[2])


def _ran(body: Mapping[str, Any] | None, now: str) -> str:
    """How long a workload has run, from its `status.startTime` (Jobs) or creation."""
    meta, status = (body or {}).get("metadata") or {}, (body or {}).get("status") or {}
    since = status.get("startTime") or meta.get("creationTimestamp")
    if not since:
        return ""
    try:
        seconds = (datetime.fromisoformat(now.replace("Z", "+00:00")) -
                   datetime.fromisoformat(str(since).replace("Z", "+00:00"))).total_seconds()
    except ValueError:
        return ""
    return format_duration(max(int(seconds), 0))
