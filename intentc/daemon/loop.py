"""The drift daemon: one reactor thread that owns every decision.

Informers (one thread per managed kind), the git poll timer, the file
watcher (local mode) and the rollout worker only *report* into a queue;
the reactor drains it, runs the pure detector on what changed, and acts
on the policies.  One thread deciding means no two actions race (a heal
and a rollback of the same object, two rollouts at once), which matters
more than throughput for a controller that rewrites production.  Across
replicas the same holds through leader election (`daemon.election`): only
the Lease holder acts; a follower keeps the plan the cluster runs in force
and its informers warm, so it can act within a retry period of winning.

While a rollout (or a rollback) is in flight, heals are suspended: the
rollout is itself converging the objects, and "healing" a later wave's
missing objects would start them before their wave.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping

from intentc.daemon.branch import Step, decide_head
from intentc.daemon.failures import FailureReactor, Observed
from intentc.daemon.election import Elector
from intentc.daemon.http import HealthServer
from intentc.daemon.informer import Informer
from intentc.daemon.leader import Timing
from intentc.daemon.ledger import DriftLedger
from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.mirror import IntentMirror
from intentc.daemon.reload import ReloadResult, follow
from intentc.daemon.rollouts import Changed, Done, Reloaded, Stopped, run_rollback, run_rollout
from intentc.daemon.source import Desired, GitSource, LocalSource, from_compile
from intentc.diagnostics import format_text
from intentc.drift import events, quarantine
from intentc.drift.consistency import Verdict, check_rollout
from intentc.drift.detect import History, detect
from intentc.drift.live import Managed, complete, heal, own_plumbing, read_managed
from intentc.drift.policy import Decision, Policies, asking_for_rollback, decide, wave_blocker
from intentc.drift.rollback import RollbackError, RollbackOutcome
from intentc.gitrepo import GitError
from intentc.kube.cluster_state import read_cluster_state
from intentc.kube.client import KubeClient
from intentc.kube.errors import KubeError
from intentc.reconcile.inventory import Inventory
from intentc.reconcile.live_binding import LiveBinder
from intentc.reconcile.result import ApplyResult
from intentc.reconcile.sync import ApplyOptions
from intentc.render.capabilities import KubeVersion
from intentc.render.model import Manifest, ObjectRef

log = logging.getLogger("intentc.daemon")
MAX_GETS_PER_PASS = 50


@dataclass(frozen=True)
class DaemonConfig:
    repo: str
    branch: str = "main"
    paths: tuple[str, ...] = ("intents",)
    topology: str = "clusters/cluster.yaml"
    local: bool = False                 # follow the working tree (hot reload), not the branch
    interval: float = 30.0              # git poll period (s)
    resync: float = 300.0               # full detection period (s)
    listen: str | None = "127.0.0.1:9090"
    target: str = "default"
    workdir: str = "/tmp/intentc-daemon"
    rollout_timeout: float | None = None  # per wave; None: from the intents' duration (reconcile/timeouts)
    prune: bool = False
    kube_version: KubeVersion | None = None
    render_target: str = "device-plugin"
    seed: int = 0
    commit: str | None = None           # local mode: the SHA to stamp (the CLI passes git HEAD)
    watch_timeout: int = 300            # server-side watch timeout (s)
    heal_backoff: tuple[float, float] = (2.0, 300.0)
    only_topology_nodes: bool = False   # live binding: leave GPU nodes the topology file does not list
    cluster: tuple[str, tuple[tuple[str, str], ...]] | None = None   # a fleet's cluster (name, labels): its intents only
    leader_elect: bool = False          # the CLI turns it on; a library caller or test opts in
    leader_timing: Timing = Timing()


@dataclass
class _State:
    """What the reactor knows; only the reactor thread writes it."""

    desired: Desired | None = None
    history: History | None = None
    head: str | None = None
    inventory: Inventory | None = None
    managed: Managed | None = None      # every target's objects, and intentc's own plumbing
    busy: str = ""                      # "" | "rollout" | "rollback"
    attempted: set[str] = field(default_factory=set)
    pending: Desired | None = None      # local mode: a plan that arrived during a rollout


@dataclass(frozen=True)
class Leadership:
    """The elector: this replica started (True) or stopped (False) leading."""

    leading: bool


class ListenError(Exception):
    """The health/metrics address cannot be bound (busy, or not ours): a usage error."""


class Daemon:
    def __init__(self, config: DaemonConfig, client: KubeClient, metrics: DaemonMetrics | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.client = client
        self.metrics = metrics or DaemonMetrics()
        self.clock = clock
        self.stop_event = threading.Event()
        self.queue: queue.Queue[object] = queue.Queue()
        self.state = _State()
        self.informers: dict[tuple[str, str], Informer] = {}
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="intentc-rollout")
        self.http: HealthServer | None = None
        self.git: GitSource | None = None
        self.local: LocalSource | None = None
        self.beat = clock()
        self.polls = 0                      # completed git polls (tests wait on these)
        self.passes = 0                     # completed detection passes
        self.rollouts: list[tuple[str, str]] = []   # (kind, commit) of every rollout started
        self._threads: list[threading.Thread] = []
        self.ledger = DriftLedger(config.heal_backoff)
        self._kube_version = config.kube_version
        self.failures = FailureReactor(client, self.metrics, self.stop_event, lambda: self.queue.put(Observed()),
                                       config.watch_timeout)
        self.mirror = IntentMirror(client, config.target)
        self.elector = Elector(client, config.target, config.leader_timing,
                               on_change=self._on_leadership) if config.leader_elect else None
        self._next_poll = clock()
        Path(config.workdir).mkdir(parents=True, exist_ok=True)

    def leading(self) -> bool:
        """Whether this replica may act now (always, without leader election)."""
        return self.elector is None or self.elector.leading()

    def _on_leadership(self, leading: bool) -> None:
        self.metrics.leader.set(1 if leading else 0)
        self.queue.put(Leadership(leading))

    # -- probes -----------------------------------------------------------------
    def live(self) -> tuple[bool, str]:
        age = self.clock() - self.beat
        return (age < 60.0, f"reactor last turned {age:.0f}s ago")

    def ready(self) -> tuple[bool, str, str]:
        """(ready, why for the log, what the body may say: no URLs, no RBAC errors)."""
        if self.elector is not None and not self.elector.leading():
            holder = "".join(c for c in self.elector.holder[:253] if c.isprintable()) or "nobody yet"
            said = f"not leader (lease held by {holder})"
            return False, said, said
        if self.state.desired is None:
            return False, "no plan in force yet", ""
        busy, commit = self.state.busy, self.state.desired.commit[:12]
        if busy:
            # a rollout is applied but its health not yet confirmed: what runs may be about to be rolled back
            said = ("rollout of the head commit not verified yet" if busy == "rollout" else "rolling back")
            return False, f"{said} ({busy} of {commit} in progress)", said
        down = [f"{i.kind}: {i.last_error}" for i in self.informers.values()
                if not i.synced.is_set() or not i.connected]
        if down:
            return False, "not watching: " + "; ".join(sorted(down)), ""
        return True, f"ok: commit {commit}", ""

    # -- lifecycle ----------------------------------------------------------------
    def stop(self) -> None:
        self.stop_event.set()
        for inf in self._informers():
            inf.close()
        self.queue.put(None)

    def run(self) -> int:
        """Block until `stop()`; the exit code is 0 after a clean shutdown."""
        cfg = self.config
        if cfg.listen:
            try:
                self.http = HealthServer(cfg.listen, self.metrics, self.live, self.ready).start()
            except OSError as e:
                raise ListenError(f"cannot serve /healthz, /readyz and /metrics on {cfg.listen}: "
                                  f"{e.strerror or e} (choose another --listen address)") from None
            log.info("serving /healthz /readyz /metrics on port %d", self.http.port)
        try:
            self._startup_gauges()
            if self.elector is not None:
                self.elector.start()
            self._start_source()
            self._loop()
        finally:
            self.stop_event.set()
            for inf in self._informers():
                inf.close()
            self.worker.shutdown(wait=True, cancel_futures=True)
            if self.elector is not None:
                self.elector.stop()         # releases the Lease: after the last action
            for inf in self._informers():
                inf.join()
            for t in self._threads:
                t.join(timeout=10)
            if self.http is not None:
                self.http.stop()
            log.info("stopped")
        return 0

    def _startup_gauges(self) -> None:
        """Every gauge means something before the first cycle: the quarantine as the
        cluster records it (a restarted daemon must not say 0 while it holds a commit
        back), and leadership (0 until the Lease is won)."""
        self.metrics.leader.set(1 if self.elector is None else 0)
        self._safe("quarantine", lambda: self.metrics.quarantined.set(
            len(quarantine.read(self.client, self.config.target).entries)))

    def _start_source(self) -> None:
        cfg = self.config
        if cfg.local:
            version = self._wait_for_version()
            if version is None:
                return
            commit = cfg.commit or "0" * 40
            self.local = LocalSource(tuple(str(Path(cfg.repo) / p) for p in cfg.paths),
                                     str(Path(cfg.repo) / cfg.topology), commit, version,
                                     cfg.render_target, cfg.seed)
            self.queue.put(Reloaded(self.local.load()))
            t = threading.Thread(target=follow, name="intentc-files", daemon=True,
                                 args=(self.local.reloader, lambda r, _s: self.queue.put(Reloaded(r)),
                                       self.stop_event))
            t.start()
            self._threads.append(t)
        else:
            self.git = GitSource(cfg.repo, cfg.branch, cfg.paths, cfg.topology, cfg.workdir,
                                 cfg.render_target, cfg.seed, cfg.cluster)

    # -- the reactor ----------------------------------------------------------------
    def _loop(self) -> None:
        cfg = self.config
        self._next_poll = self.clock()
        next_resync = self.clock() + cfg.resync
        while not self.stop_event.is_set():
            self.beat = self.clock()
            now = self.clock()
            if self.git is not None and now >= self._next_poll and not self.state.busy:
                self._poll()
                self._next_poll = self.clock() + cfg.interval
            if now >= next_resync:
                self._resync()
                next_resync = self.clock() + cfg.resync
            timeout = max(0.05, min(self._next_poll if self.git else next_resync, next_resync) - self.clock())
            try:
                item = self.queue.get(timeout=min(timeout, 1.0))
            except queue.Empty:
                continue
            changed: set[ObjectRef] = set()
            while item is not None:
                if isinstance(item, Changed):
                    changed |= item.refs
                else:
                    self._handle(item)
                try:
                    item = self.queue.get_nowait()     # coalesce a burst of events into one pass
                except queue.Empty:
                    break
            if changed and self.state.desired is not None:
                self._detect(changed)

    def _handle(self, item: object) -> None:
        if isinstance(item, Done):
            self._done(item)
        elif isinstance(item, Reloaded):
            self._reloaded(item.result)
        elif isinstance(item, Observed):
            self._react()
        elif isinstance(item, Leadership):
            self._leadership(item.leading)

    def _leadership(self, leading: bool) -> None:
        """A new leader decides afresh (the old one may have applied since); one that
        lost stops at once: `leading()` is false already, a rollout stops at its next wait."""
        if not leading:
            return
        self.state.head = None
        if self.local is not None:
            if self.state.desired is not None and not self.state.busy:
                self._rollout(self.state.desired)
            return
        if self.git is not None and not self.state.busy:
            self._poll()                # first what the branch wants (a rollout suspends heals) ...
            self._next_poll = self.clock() + self.config.interval
        self._resync()                  # ... then drift

    def _safe(self, step: str, fn: Callable[[], Any]) -> Any:
        """Run one reactor step; failures are counted and logged, never fatal."""
        try:
            return fn()
        except (KubeError, GitError, RollbackError) as e:
            self.metrics.errors.labels(step).inc()
            log.warning("%s failed: %s", step, getattr(e, "message", str(e)))
        return None

    def _wait_for_version(self) -> KubeVersion | None:
        """Local mode renders before anything else, so it needs the server's
        version first; retried until the API server answers or we stop."""
        delay = 1.0
        while not self.stop_event.is_set():
            try:
                return self._version()
            except KubeError as e:
                log.warning("cannot ask the API server for its version (%s); retrying in %.0fs", e.message, delay)
                self.stop_event.wait(delay)
                delay = min(delay * 2, 30.0)
        return None

    def _version(self) -> KubeVersion:
        if self._kube_version is None:
            self._kube_version = KubeVersion.parse(self.client.version())
        return self._kube_version

    # -- git ------------------------------------------------------------------------
    def _poll(self) -> None:
        self._safe("git-poll", self._poll_once)
        self.polls += 1

    def _poll_once(self) -> None:
        assert self.git is not None
        head = self.git.poll()
        if not self.leading():
            self._follow(head)
            return
        if head == self.state.head and self.state.desired is not None:
            return
        self.state.history = self.git.history(head)
        inventory = self._read_inventory()
        in_force = self.state.desired.commit if self.state.desired else None
        held = quarantine.read(self.client, self.config.target)
        self.metrics.quarantined.set(len(held.entries))
        decision = decide_head(head, previous_head=self.state.head, in_force=in_force, inventory=inventory,
                               quarantine=held, attempted=self.state.attempted)
        self.state.head = head
        if decision.warning:
            log.warning("branch %s: %s", self.config.branch, decision.warning)
        if decision.step is Step.SKIP_FAILED:
            self.state.attempted.add(head)
        if decision.adopt:
            self._adopt(decision.adopt)
        if decision.step is not Step.ROLL_OUT:
            return
        compiled = self.git.compile(head, self._version())
        desired = from_compile(compiled, "git")
        self.state.attempted.add(head)
        if desired is None:
            self.metrics.errors.labels("compile").inc()
            log.error("commit %s does not compile; keeping %s in force:\n%s", head[:12],
                      self.state.desired.commit[:12] if self.state.desired else "nothing",
                      format_text(list(compiled.diagnostics), compiled.sources).rstrip())
            if self.state.desired is None and inventory.commit:
                self._adopt(inventory.commit)
            return
        if desired.held:
            self.metrics.errors.labels("compile").inc()
            log.error("commit %s: tenants held back by their errors (neither applied nor pruned): %s\n%s",
                      head[:12], ", ".join(desired.held),
                      format_text([d for d in compiled.diagnostics if d.is_error], compiled.sources).rstrip())
        self._rollout(desired)

    def _follow(self, head: str) -> None:
        """A follower applies nothing: it keeps what the leader last applied in
        force (so its informers and detection are warm) and re-reads at every poll."""
        self.state.head = None              # decide afresh once leading
        inventory = self._read_inventory()
        self.metrics.quarantined.set(len(quarantine.read(self.client, self.config.target).entries))
        commit = inventory.commit or inventory.last_known_good
        if commit and (self.state.desired is None or self.state.desired.commit != commit):
            self.state.history = self.git.history(head) if self.git is not None else None
            self._adopt(commit)

    def _adopt(self, commit: str | None) -> None:
        """Take `commit` as the plan in force without applying it (it is on
        the cluster already), and start watching its kinds."""
        if commit is None or self.git is None:
            return
        desired = from_compile(self.git.compile(commit, self._version()), "git")
        if desired is None:
            log.error("the applied commit %s does not compile any more; not detecting drift", commit[:12])
            return
        self._in_force(desired)
        self.metrics.set_applied(commit, self.config.branch, "inventory")

    def _in_force(self, desired: Desired) -> None:
        self.state.desired = desired
        self._ensure_informers(desired)
        self._resync()

    # -- rollouts ----------------------------------------------------------------------
    def _options(self, **changes: Any) -> ApplyOptions:
        base = ApplyOptions(target=self.config.target, prune=self.config.prune, wait=True,
                            timeout=self.config.rollout_timeout)
        return replace(base, **changes)

    def _binder(self, desired: Desired) -> LiveBinder | None:
        """Re-binding on live state for a rollout, of the branch or of a hot-reload snapshot
        (docs/live-planning.md); not under Kueue, which admits on live state itself."""
        preview = desired.preview
        if preview is None or self.config.render_target == "kueue":
            return None
        return LiveBinder(desired.program, preview.topology, preview.plan, preview.rendered, self._version(),
                          lambda: read_cluster_state(self.client), preview.policies, self.config.seed,
                          cluster_nodes=not self.config.only_topology_nodes)

    def _sleep(self, seconds: float) -> None:
        if self.stop_event.wait(seconds) or not self.leading():
            raise Stopped()

    def _rollout(self, desired: Desired) -> None:
        if not self.leading():          # local mode follower: watch the plan, apply nothing
            self._in_force(desired)
            return
        log.info("rolling out commit %s (%d objects)", desired.commit[:12], len(desired.manifests))
        self.state.busy = "rollout"
        self.rollouts.append(("rollout", desired.commit))
        self.state.desired = desired
        self._ensure_informers(desired)
        started = self.clock()

        def work() -> None:
            try:
                self.queue.put(run_rollout(self.client, desired, self._options(budgets=desired.budgets),
                                           self._version(), self.config.render_target, self._sleep,
                                           self._binder(desired)))
            finally:
                self.metrics.reconcile_seconds.labels("rollout").observe(self.clock() - started)
        self._submit(work)

    def _submit(self, work: Callable[[], None]) -> None:
        try:
            fut: Future[None] = self.worker.submit(work)
        except RuntimeError:          # shutting down
            self.state.busy = ""
            return
        fut.add_done_callback(_report_crash)

    def _done(self, done: Done) -> None:
        self.state.busy = ""
        self._finished(done)
        if self.state.pending is not None and not self.state.busy:
            pending, self.state.pending = self.state.pending, None
            self._rollout(pending)

    def _finished(self, done: Done) -> None:
        if done.kind == "rollback":
            self._rolled_back(done)
            return
        result = done.result
        desired = done.desired
        if not isinstance(result, ApplyResult) or desired is None:
            if desired is not None and done.error == "stopped":     # shut down, or leadership lost
                self.state.head = None
                self.state.attempted.discard(desired.commit)
            return
        if result.result == "error":
            log.error("rollout of %s stopped: %s", desired.commit[:12], result.message)
            self.state.head = None        # try again at the next poll
            self.state.attempted.discard(desired.commit)
            return
        verdict = self._verdict(desired, result)
        if verdict.consistent:
            log.info("commit %s rolled out: %s", desired.commit[:12], result.health)
            self.metrics.set_applied(desired.commit, self.config.branch, desired.origin)
            self._clear_quarantine(desired.commit)
            self._resync()
            return
        log.error("%s", verdict.summary())
        askers = asking_for_rollback(((p.intent, p.tenant) for p in verdict.problems),
                                     Policies.from_program(desired.program))
        if not self.leading():          # the new leader judges what it finds
            log.warning("not rolling back %s: no longer the leader", desired.commit[:12])
            return
        if not askers or self.git is None:
            log.warning("not rolling back %s: no failing intent has `drift: rollback`", desired.commit[:12])
            self._resync()
            return
        self._rollback(desired, verdict, askers)

    def _verdict(self, desired: Desired, result: ApplyResult) -> Verdict:
        failed: list[tuple[ObjectRef, str]] = [(o.ref, o.message or "apply failed") for o in result.objects if not o.ok]
        if result.result == "failed" and not failed:
            failed = [(o.ref, result.message) for o in result.objects if o.health in ("Progressing", "Missing")]
        live = self._live(desired)
        return check_rollout(desired.commit, desired.manifests, live, failed)

    def _rollback(self, bad: Desired, verdict: Verdict, askers: tuple[str, ...]) -> None:
        assert self.git is not None
        source = replace(self.git.source, kube_version=self._version())
        reason = f"{verdict.summary()} (policy rollback: {', '.join(askers)})"
        failing = tuple(sorted({p.ref for p in verdict.problems}))
        self.state.busy = "rollback"
        self.rollouts.append(("rollback", bad.commit))
        started = self.clock()

        def work() -> None:
            try:
                self.queue.put(run_rollback(self.client, source, self.config.workdir, reason=reason, bad=bad,
                                            options=self._options(), failing=failing))
            finally:
                self.metrics.reconcile_seconds.labels("rollback").observe(self.clock() - started)
        self.metrics.rollbacks.inc()
        self._submit(work)

    def _rolled_back(self, done: Done) -> None:
        outcome = done.result
        if not isinstance(outcome, RollbackOutcome):
            log.error("rollback of %s failed: %s", done.desired.commit[:12] if done.desired else "?", done.error)
            return
        log.warning("rolled back to %s: %s", outcome.to_commit[:12], outcome.applied.result)
        self.metrics.set_applied(outcome.to_commit, self.config.branch, "rollback")
        self._safe("quarantine", lambda: self.metrics.quarantined.set(
            len(quarantine.read(self.client, self.config.target).entries)))
        self._adopt(outcome.to_commit)

    def _clear_quarantine(self, commit: str) -> None:
        history = self.state.history
        if history is None or not self.leading():
            return

        def clear() -> None:
            held = quarantine.read(self.client, self.config.target)
            kept = held.cleared_by(commit, history)
            if kept != held:
                quarantine.write(self.client, self.config.target, kept)
                log.info("commit %s clears the quarantine of %s", commit[:12],
                         ", ".join(e.commit[:12] for e in held.entries if e not in kept.entries))
            self.metrics.quarantined.set(len(kept.entries))
        self._safe("quarantine", clear)

    # -- local mode ------------------------------------------------------------------
    def _reloaded(self, result: ReloadResult) -> None:
        if not result.ok:
            log.error("change does not compile; keeping the plan in force:\n%s",
                      format_text(list(result.diagnostics), dict(result.sources)).rstrip())
            return
        if result.plan_note and result.snapshot is not None:
            # "incremental plan: N intents re-placed" (a full re-plan follows in the background),
            # or "full plan swapped in for the incremental one"
            log.info("generation %d: %s", result.snapshot.generation, result.plan_note)
        assert self.local is not None
        desired = self.local.desired(result)
        if desired is None or (self.state.desired is not None and
                               self.state.desired.manifests == desired.manifests):
            return
        if self.state.busy:
            self.state.pending = desired        # rolled out when the running one is done
            return
        self._rollout(desired)

    # -- informers -----------------------------------------------------------------------
    def _ensure_informers(self, desired: Desired) -> None:
        kinds = set(desired.kinds)
        if self.state.inventory is not None:
            kinds |= {(e.ref.api_version, e.ref.kind) for e in self.state.inventory.entries}
        for key in sorted(kinds - set(self.informers)):
            inf = Informer(self.client, key[0], key[1], self._on_change, self.metrics, self.stop_event,
                           timeout_seconds=self.config.watch_timeout)
            self.informers[key] = inf
            inf.start()
        self.failures.start()

    def _informers(self) -> list[Informer]:
        return [*self.informers.values(), *(self.failures.informers if self.failures.started else ())]

    def _on_change(self, _event: str, refs: frozenset[ObjectRef]) -> None:
        self.queue.put(Changed(refs))

    def _read_inventory(self) -> Inventory:
        managed = read_managed(self.client, self.config.target)
        self.state.inventory = managed.inventory
        self.state.managed = managed
        return managed.inventory

    # -- detection ----------------------------------------------------------------------------
    def _cache(self) -> dict[ObjectRef, Mapping[str, Any]]:
        live: dict[ObjectRef, Mapping[str, Any]] = {}
        for inf in self.informers.values():
            live.update(inf.items())
        return live

    def _live(self, desired: Desired) -> dict[ObjectRef, Mapping[str, Any]]:
        cache = self._cache()
        cache.update(self._fetch_absent([m.ref for m in desired.manifests if m.ref not in cache]))
        return cache

    def _fetch_absent(self, refs: list[ObjectRef]) -> dict[ObjectRef, Mapping[str, Any]]:
        """GET desired objects the informers do not hold: one whose intentc labels
        were stripped still exists, and must not be called missing.  Skipped when
        many are absent (a rollout in progress, a deleted namespace): then the
        informers' word is taken, rather than sending a request per object."""
        if not refs or len(refs) > MAX_GETS_PER_PASS:
            return {}
        found: dict[ObjectRef, Mapping[str, Any]] = self._safe("get", lambda: complete(self.client, {}, refs)) or {}
        return found

    def _resync(self) -> None:
        if self.state.desired is None:
            return
        self._safe("inventory", self._read_inventory)
        self._detect(None)

    def _detect(self, refs: set[ObjectRef] | None) -> None:
        """Detect over `refs` (None: everything) and act on the policies."""
        desired = self.state.desired
        if desired is None:
            return
        started = self.clock()
        cache = self._cache()
        wanted = desired.by_ref if refs is None else {r: desired.by_ref[r] for r in refs if r in desired.by_ref}
        cache.update(self._fetch_absent([r for r in wanted if r not in cache]))
        live = cache if refs is None else {r: cache[r] for r in refs if r in cache}
        managed = self.state.managed
        report = detect((m.body for m in wanted.values()), live.values(),
                        managed.refs if managed else (), self.state.history,
                        exclude=managed.plumbing if managed else own_plumbing(self.config.target))
        for f in self.ledger.record(report.findings, refs):
            # during a rollout objects come and go by design: worth a line, not a warning
            log.log(logging.INFO if self.state.busy else logging.WARNING, "drift: %s %s: %s",
                    f.drift.value, f.ref, f.message)
        self.metrics.set_counts(self.ledger.counts())
        self._act(report, desired)
        self.passes += 1
        self.metrics.reconcile_seconds.labels("resync" if refs is None else "event").observe(self.clock() - started)

    def _act(self, report: Any, desired: Desired) -> None:
        if self.state.busy or not self.leading():
            return
        inventory = self.state.inventory
        applied = {e.ref for e in inventory.entries if e.state == "applied"} if inventory is not None else set()
        decisions = decide(report, Policies.from_program(desired.program))
        live = self._cache()
        for d, manifest in self.ledger.heals_due(decisions, desired.by_ref, applied, self.clock()):
            if not self.leading():      # lost the Lease during this pass: stop before the next write
                return
            blocked = wave_blocker(manifest, desired.by_ref.values(), live)
            if blocked is not None:
                log.info("heal of %s waits: %s", manifest.ref, blocked)
                continue
            self._safe("heal", partial(self._heal_one, d, manifest))
        self._react()

    def _react(self) -> None:
        """GPU failures and the Intent mirror (daemon/failures.py, daemon/mirror.py): they act,
        so they run when the daemon acts (`_act`: not during a rollout, only on the leader)."""
        desired = self.state.desired
        if desired is None or self.state.busy or not self.leading():     # followers only watch
            return
        live = self._cache()
        self._safe("fallback", partial(self.failures.react, live))
        self._safe("mirror", partial(self.mirror.sync, desired, live))

    def _heal_one(self, d: Decision, manifest: Manifest) -> None:
        """Re-apply one drifted object and say so (log line, metric, Event)."""
        try:
            outcome = heal(self.client, manifest, self._sleep)
        except Stopped:                 # shutting down, or the Lease was lost mid-heal
            log.warning("heal of %s interrupted: %s", d.finding.ref,
                        "shutting down" if self.stop_event.is_set() else "no longer the leader")
            return
        f = d.finding
        if not outcome.ok:
            log.error("heal of %s failed: %s", f.ref, outcome.message)
            return
        self.metrics.heals.labels(f.drift.value).inc()
        self.mirror.healed(manifest.body)
        who = ", ".join(f.managers) or f.drift.value
        log.warning("healed %s (%s by %s; policy %s)", f.ref, f.drift.value, who, d.policy.value)
        events.emit(self.client, f.ref, "DriftHealed", f"intentc re-applied the desired state ({f.message})",
                    "Normal", outcome.body)


def _report_crash(fut: Future[None]) -> None:
    """A bug in a rollout must not pass silently (the reactor would wait forever)."""
    if fut.cancelled():       # shutdown dropped a queued (retried) rollout: nothing crashed
        return
    exc = fut.exception()
    if exc is not None:
        log.error("rollout worker crashed: %r", exc)
