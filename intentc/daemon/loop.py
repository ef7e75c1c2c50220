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

This module is the reactor proper: the queue loop, dispatch, leadership,
and the steps that act.  What each step decides is a pure function of
plain data elsewhere: `branch` (a new head), `following` (follower, reload,
new leader, timing), `outcome` (a finished rollout or rollback),
`drift_pass` (what a pass looks at and heals), `probes` (/healthz, /readyz).
Helpers act for it on its thread: `reads` (the watches and the cache),
`healing` (a drift pass: detect, heal, then GPU failures and the mirror),
`settling` (a finished rollout's bookkeeping), `quarantines`, `rollouts`
(the worker).  docs/design.md, "Inside the daemon", maps them.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping

from intentc.daemon.branch import Step, decide_head
from intentc.daemon.config import DaemonConfig
from intentc.daemon.election import Elector
from intentc.daemon.failures import FailureReactor, Observed
from intentc.daemon.following import OnReload, follower_adopts, on_leading, on_reload, poll_delay, wait_seconds
from intentc.daemon.forecast_pass import ForecastPass
from intentc.daemon.healing import DriftReactor
from intentc.daemon.http import HealthServer
from intentc.daemon.ledger import DriftLedger
from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.metrics_auth import Reviewer, ReviewError
from intentc.daemon.mirror import IntentMirror
from intentc.daemon.moves import JobMover
from intentc.daemon.outcome import rollback_refusal, rollback_request
from intentc.daemon.probes import liveness, readiness
from intentc.daemon.quarantines import QuarantineKeeper
from intentc.daemon.reads import LiveReads
from intentc.daemon.reload import ReloadResult, follow
from intentc.daemon.rollouts import (Changed, Done, Reloaded, Stopped, Worker, apply_options, binder_for,
                                     run_rollback, run_rollout)
from intentc.daemon.secure_metrics import SecureMetricsServer
from intentc.daemon.settling import Settler
from intentc.daemon.source import Desired, GitSource, LocalSource, from_compile, say_held, say_not_compiled
from intentc.daemon.state import Leadership, ReactorState
from intentc.daemon.tls import CERT_FILE, KEY_FILE, CertError, ServingCert
from intentc.daemon.tune_pass import TunePass
from intentc.drift.consistency import Verdict
from intentc.drift.managed import read_managed
from intentc.drift.rollback import RollbackError
from intentc.kube import events
from intentc.kube.client import KubeClient
from intentc.kube.errors import KubeError
from intentc.objectmeta import ObjectRef
from intentc.plan.model import Plan
from intentc.reconcile.inventory import Inventory, inventory_ref
from intentc.render.model import Manifest
from intentc.tune.prometheus import Prometheus
from intentc.vcs.gitrepo import GitError, resolve

__all__ = ["Daemon", "DaemonConfig", "Leadership", "ListenError"]
log = logging.getLogger("intentc.daemon")
PROMETHEUS_TIMEOUT = 5.0        # the reactor's thread waits on it: one slow query ends the round (tune_pass.py)


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
        self.state = ReactorState()
        self.worker = Worker(self.queue.put, self.metrics, clock)
        self.http: HealthServer | None = None
        self.metrics_http: SecureMetricsServer | None = None
        self.git: GitSource | None = None
        self.local: LocalSource | None = None
        self.beat = clock()
        self.polls = 0                      # completed git polls (tests wait on these)
        self.fetch_failures = 0             # failed fetches of the branch in a row (`poll_delay`)
        self.poll_delays: list[float] = []  # the delay chosen after each poll (tests read the backoff)
        self._jitter = random.Random()
        self.rollouts: list[tuple[str, str]] = []   # (kind, commit) of every rollout started
        self._threads: list[threading.Thread] = []
        self.ledger = DriftLedger(config.heal_backoff)
        self.failures = FailureReactor(client, self.metrics, self.stop_event, lambda: self.queue.put(Observed()),
                                       config.watch_timeout)
        self.reads = LiveReads(client, self.metrics, self.stop_event, self.failures,
                               lambda _event, refs: self.queue.put(Changed(refs)), self._safe,
                               config.watch_timeout, config.kube_version)
        tuner = TunePass(Prometheus(config.prometheus_url, PROMETHEUS_TIMEOUT), config.tune,
                         self.metrics) if config.prometheus_url else None
        self.mirror = IntentMirror(client, config.target, forecaster=ForecastPass(
            client, self.metrics, config.forecast_interval, config.seed, config.only_topology_nodes), tuner=tuner)
        mover = JobMover(client, self.metrics, lambda desired: binder_for(client, config, desired,
                                                                          self.reads.version()))
        self.drift = DriftReactor(client, config.target, self.metrics, self.ledger, self.reads, self.failures,
                                  self.mirror, mover, leading=self.leading, sleep=self._sleep, stop=self.stop_event,
                                  safe=self._safe, clock=clock)
        self.quarantine = QuarantineKeeper(client, config.target, self.metrics)
        self.settler = Settler(self.metrics, self.quarantine, self.reads, config.branch, self._safe)
        self.elector = Elector(client, config.target, config.leader_timing,
                               on_change=self._on_leadership) if config.leader_elect else None
        self._next_poll = clock()
        Path(config.workdir).mkdir(parents=True, exist_ok=True)

    @property
    def passes(self) -> int:
        """Completed detection passes (tests wait on these)."""
        return self.drift.passes

    def leading(self) -> bool:
        """Whether this replica may act now (always, without leader election)."""
        return self.elector is None or self.elector.leading()

    def _on_leadership(self, leading: bool) -> None:
        self.metrics.leader.set(1 if leading else 0)
        self.queue.put(Leadership(leading))

    # -- probes -----------------------------------------------------------------
    def live(self) -> tuple[bool, str]:
        return liveness(self.clock() - self.beat)

    def ready(self) -> tuple[bool, str, str]:
        """(ready, why for the log, what the body may say): `probes.readiness`."""
        elector, desired = self.elector, self.state.desired
        return readiness(holder=elector.holder if elector is not None and not elector.leading() else None,
                         in_force=desired.commit if desired is not None else None,
                         busy=self.state.busy, down=self.reads.down())

    # -- lifecycle ----------------------------------------------------------------
    def stop(self) -> None:
        self.stop_event.set()
        for inf in self.reads.all():
            inf.close()
        self.queue.put(None)

    def run(self) -> int:
        """Block until `stop()`; the exit code is 0 after a clean shutdown."""
        cfg = self.config
        if cfg.listen:
            plain = None if cfg.metrics_secure else self.metrics
            try:
                self.http = HealthServer(cfg.listen, plain, self.live, self.ready).start()
            except OSError as e:
                raise ListenError(f"cannot serve /healthz, /readyz{'' if cfg.metrics_secure else ' and /metrics'} "
                                  f"on {cfg.listen}: {e.strerror or e} (choose another --listen address)") from None
            log.info("serving /healthz /readyz%s on port %d", "" if cfg.metrics_secure else " /metrics",
                     self.http.port)
        if cfg.metrics_secure and cfg.metrics_listen:
            try:
                self.metrics_http = self._secure_metrics(cfg.metrics_listen, cfg.metrics_cert_dir)
            except ListenError:
                if self.http is not None:
                    self.http.stop()
                raise
        try:
            self._startup_gauges()
            if self.elector is not None:
                self.elector.start()
            self._start_source()
            self._loop()
        finally:
            self.stop_event.set()
            for inf in self.reads.all():
                inf.close()
            self.worker.shutdown()
            if self.elector is not None:
                self.elector.stop()         # releases the Lease: after the last action
            for inf in self.reads.all():
                inf.join()
            for t in self._threads:
                t.join(timeout=10)
            if self.http is not None:
                self.http.stop()
            if self.metrics_http is not None:
                self.metrics_http.stop()
            log.info("stopped")
        return 0

    def _secure_metrics(self, listen: str, cert_dir: str | None) -> SecureMetricsServer:
        """/metrics over HTTPS, each scraper checked with the API server (daemon/metrics_auth.py)."""
        reviews = self.client.with_timeout((5.0, 10.0))      # controller-runtime's review timeout

        def post(path: str, body: dict[str, Any]) -> Mapping[str, Any]:
            try:
                return dict(reviews.request("POST", path, (), body, "application/json") or {})
            except KubeError as e:          # its message names us and the resource, never the token
                raise ReviewError(f"{e.status or 'no answer'} {e.message[:200]}") from None

        try:
            cert = ServingCert(cert_dir, self.config.workdir)
            server = SecureMetricsServer(listen, self.metrics, Reviewer(post), cert).start()
        except CertError as e:
            raise ListenError(f"{e} (--metrics-cert-dir wants {CERT_FILE} and {KEY_FILE})") from None
        except OSError as e:
            raise ListenError(f"cannot serve /metrics on {listen}: {e.strerror or e} "
                              f"(choose another --metrics-listen address)") from None
        log.info("serving /metrics over HTTPS on port %d with %s; callers need a token allowed to get /metrics",
                 server.port, cert.source)
        return server

    def _startup_gauges(self) -> None:
        """Every gauge means something before the first cycle: the quarantine as the
        cluster records it (a restarted daemon must not say 0 while it holds a commit
        back), and leadership (0 until the Lease is won)."""
        self.metrics.leader.set(1 if self.elector is None else 0)
        self._safe("quarantine", self.quarantine.held)

    def _start_source(self) -> None:
        cfg = self.config
        if not cfg.local:
            self.git = GitSource(cfg.repo, cfg.branch, cfg.paths, cfg.topology, cfg.workdir,
                                 cfg.render_target, cfg.seed, cfg.cluster)
            return
        version = self.reads.wait_for_version()
        if version is None:
            return
        self.local = LocalSource(tuple(str(Path(cfg.repo) / p) for p in cfg.paths), str(Path(cfg.repo) / cfg.topology),
                                 cfg.commit or "0" * 40, version, cfg.render_target, cfg.seed)
        self.queue.put(Reloaded(self.local.load()))
        t = threading.Thread(target=follow, name="intentc-files", daemon=True,
                             args=(self.local.reloader, lambda r, _s: self.queue.put(Reloaded(r)), self.stop_event))
        t.start()
        self._threads.append(t)

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
            if now >= next_resync:
                self._resync()
                next_resync = self.clock() + cfg.resync
            try:
                item = self.queue.get(timeout=wait_seconds(self.clock(), self._next_poll, next_resync,
                                                           self.git is not None))
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
                self.drift.detect(self.state, changed)

    def _handle(self, item: object) -> None:
        if isinstance(item, Done):
            self._done(item)
        elif isinstance(item, Reloaded):
            self._reloaded(item.result)
        elif isinstance(item, Observed):
            self.drift.react(self.state)
        elif isinstance(item, Leadership):
            self._leadership(item.leading)

    def _leadership(self, leading: bool) -> None:
        """A new leader decides afresh (the old one may have applied since); one that
        lost stops at once: `leading()` is false already, a rollout stops at its next wait."""
        if not leading:
            return
        self.state.head = None
        step = on_leading(local=self.local is not None, polling=self.git is not None,
                          in_force=self.state.desired is not None, busy=bool(self.state.busy))
        if step.roll_out and self.state.desired is not None:
            self._rollout(self.state.desired)
        if step.poll:
            self._poll()
        if step.resync:
            self._resync()

    def _safe(self, step: str, fn: Callable[[], Any]) -> Any:
        """Run one reactor step; failures are counted and logged, never fatal."""
        try:
            return fn()
        except (KubeError, GitError, RollbackError) as e:
            self.metrics.errors.labels(step).inc()
            log.warning("%s failed: %s", step, getattr(e, "message", str(e)))
        return None

    # -- following the source ---------------------------------------------------------
    def _poll(self) -> None:
        """Poll once, and say when the next poll is due: `--interval` after a fetch that
        worked, backing off while the remote cannot be fetched (`following.poll_delay`)."""
        self._safe("git-poll", self._poll_once)
        self.polls += 1
        delay = poll_delay(self.config.interval, self.fetch_failures, self._jitter.random())
        self.poll_delays.append(delay)
        del self.poll_delays[:-100]
        self._next_poll = self.clock() + delay
        if self.fetch_failures:
            in_force = self.state.desired.commit[:12] if self.state.desired is not None else "nothing"
            log.warning("branch %s cannot be fetched (%d failure(s) in a row); keeping %s in force, nothing is "
                        "applied or pruned; next try in %.1f s", self.config.branch, self.fetch_failures, in_force,
                        delay)

    def _fetch(self) -> str:
        """The branch head; a failure is counted (the gauge, the backoff) and raised on."""
        assert self.git is not None
        try:
            head = self.git.poll()
        except GitError:
            self.fetch_failures += 1
            self.metrics.source_failures.set(self.fetch_failures)
            raise
        if self.fetch_failures:
            log.info("branch %s fetched again after %d failure(s); head %s", self.config.branch,
                     self.fetch_failures, head[:12])
            self.fetch_failures = 0
            self.metrics.source_failures.set(0)
        return head

    def _poll_once(self) -> None:
        assert self.git is not None
        head = self._fetch()
        if not self.leading():
            self._follow(head)
            return
        if head == self.state.head and self.state.desired is not None:
            return
        self.state.history = self.git.history(head)
        inventory = self._read_inventory()
        in_force = self.state.desired.commit if self.state.desired else None
        decision = decide_head(head, previous_head=self.state.head, in_force=in_force, inventory=inventory,
                               quarantine=self.quarantine.held(), attempted=self.state.attempted)
        self.state.head = head
        if decision.warning:
            log.warning("branch %s: %s", self.config.branch, decision.warning)
        if decision.step is Step.SKIP_FAILED:
            self.state.attempted.add(head)
        if decision.adopt:
            self._adopt(decision.adopt)
        if decision.step is not Step.ROLL_OUT:
            return
        compiled = self.git.compile(head, self.reads.version(), self._plan_in_force(), self._objects_in_force())
        desired = from_compile(compiled, "git")
        self.state.attempted.add(head)
        if desired is None:
            self.metrics.errors.labels("compile").inc()
            say_not_compiled(head, self.state.desired.commit if self.state.desired else None, compiled)
            if self.state.desired is None and inventory.applied_commit:
                self._adopt(inventory.applied_commit)
            return
        if desired.held:
            self.metrics.errors.labels("compile").inc()
            say_held(head, desired, compiled)
        self._rollout(desired)

    def _follow(self, head: str) -> None:
        """A follower applies nothing (`following.follower_adopts`); it re-reads at every poll."""
        self.state.head = None              # decide afresh once leading
        inventory = self._read_inventory()
        self.quarantine.held()
        commit = follower_adopts(inventory, self.state.desired.commit if self.state.desired else None)
        if commit:
            self.state.history = self.git.history(head) if self.git is not None else None
            self._adopt(commit)

    def _adopt(self, commit: str | None) -> None:
        """Take `commit` as the plan in force without applying it (it is on
        the cluster already), and start watching its kinds."""
        if commit is None or self.git is None:
            return
        compiled = self.git.compile(commit, self.reads.version(), self._plan_in_force(), self._objects_in_force())
        desired = from_compile(compiled, "git")
        if desired is None:
            log.error("the applied commit %s does not compile any more; not detecting drift", commit[:12])
            return
        self._in_force(desired)
        self.metrics.set_applied(commit, self.config.branch, "inventory")

    def _plan_in_force(self) -> Plan | None:
        desired = self.state.desired
        return desired.preview.plan if desired is not None and desired.preview is not None else None

    def _objects_in_force(self) -> Mapping[ObjectRef, Manifest] | None:
        return self.state.desired.by_ref if self.state.desired is not None else None

    def _in_force(self, desired: Desired) -> None:
        self.state.desired = desired
        self.reads.watch(desired, self.state.inventory)
        self._resync()

    def _reloaded(self, result: ReloadResult) -> None:
        assert self.local is not None
        desired, in_force = self.local.accept(result), self.state.desired
        step = on_reload(desired.manifests if desired else None, in_force.manifests if in_force else None,
                         self.state.busy)
        if step is OnReload.PEND:
            self.state.pending = desired        # rolled out when the running one is done
        elif step is OnReload.ROLL_OUT and desired is not None:
            self._rollout(desired)

    def _read_inventory(self) -> Inventory:
        managed = read_managed(self.client, self.config.target)
        self.state.inventory = managed.inventory
        self.state.managed = managed
        return managed.inventory

    # -- rollouts and rollbacks -----------------------------------------------------------
    def _sleep(self, seconds: float) -> None:
        if self.stop_event.wait(seconds) or not self.leading():
            raise Stopped()

    def _rollout(self, desired: Desired) -> None:
        if not self.leading():
            if self.git is not None:
                # The Lease was lost between deciding (`_poll_once` checked) and now (a
                # compile takes seconds): this commit is not applied, so it must not become
                # the plan in force, or the leader we are again later takes it for applied
                # and never rolls it out (issue 39: an etcd restart in the middle of a
                # Kueue rollout left the new commit unapplied).  Decide again when leading.
                self.state.head = None
                self.state.attempted.discard(desired.commit)
                log.warning("not rolling out commit %s: no longer the leader", desired.commit[:12])
                return
            self._in_force(desired)     # local mode follower: watch the plan, apply nothing
            return
        log.info("rolling out commit %s (%d objects)", desired.commit[:12], len(desired.manifests))
        self.state.busy = "rollout"
        self.rollouts.append(("rollout", desired.commit))
        self.state.desired = desired
        self.reads.watch(desired, self.state.inventory)
        cfg, version = self.config, self.reads.version
        self._submit("rollout", lambda: run_rollout(
            self.client, desired, apply_options(cfg, budgets=desired.budgets), version(), cfg.render_target,
            self._sleep, binder_for(self.client, cfg, desired, version())))

    def _rollback(self, bad: Desired, verdict: Verdict, askers: tuple[str, ...]) -> None:
        assert self.git is not None
        refused = self._rollback_refused()
        if refused:
            message = f"not rolling back {bad.commit[:12]}: {refused}; keeping it in force until a newer commit"
            log.error("%s", message)
            self.metrics.errors.labels("rollback").inc()
            self._safe("rollback", lambda: events.emit(self.client, inventory_ref(self.config.target),
                                                       "RollbackRefused", message))
            self._resync()
            return
        source = replace(self.git.source, kube_version=self.reads.version())
        reason, failing = rollback_request(verdict, askers)
        self.state.busy = "rollback"
        self.rollouts.append(("rollback", bad.commit))
        self.metrics.rollbacks.inc()
        self._submit("rollback", lambda: run_rollback(self.client, source, self.config.workdir, reason=reason,
                                                      bad=bad, options=apply_options(self.config), failing=failing))

    def _rollback_refused(self) -> str:
        """`outcome.rollback_refusal` on the facts: the last known-good commit as the cluster
        records it now, the branch's history at the last poll, and the mirror."""
        assert self.git is not None
        inventory = self._safe("inventory", self._read_inventory) or self.state.inventory or Inventory()
        target = inventory.last_known_good
        history = self.state.history
        try:
            known = bool(target) and bool(resolve(self.git.path, str(target)))
        except GitError:
            known = False
        return rollback_refusal(target, on_branch=history is None or (bool(target) and history.knows(str(target))),
                                in_repository=known, branch=self.config.branch)

    def _submit(self, kind: str, run: Callable[[], Done]) -> None:
        if not self.worker.submit(kind, run):   # shutting down
            self.state.busy = ""

    def _done(self, done: Done) -> None:
        """A rollout or rollback finished (`settling`): act on what follows it."""
        self.state.busy = ""
        then = self.settler.finished(done, leading=self.leading, can_roll_back=self.git is not None,
                                     history=self.state.history)
        if then.forget is not None:
            self.state.head = None        # try again at the next poll
            self.state.attempted.discard(then.forget)
        if then.roll_back is not None:
            self._rollback(*then.roll_back)
        if then.adopt is not None:
            self._adopt(then.adopt)
        if then.resync:
            self._resync()
        if self.state.pending is not None and not self.state.busy:
            pending, self.state.pending = self.state.pending, None
            self._rollout(pending)

    # -- drift ------------------------------------------------------------------------------
    def _resync(self) -> None:
        if self.state.desired is None:
            return
        self._safe("inventory", self._read_inventory)
        self.drift.detect(self.state, None)
