"""The daemon mirrors each intent into the cluster as an `Intent` object (docs/crd.md).

So `kubectl get intents -A` shows the fleet: every intent of the plan in
force, in its tenant's namespace, with a status the daemon keeps current
(phase from `daemon/phase.py`, planned placement, commit, last heal, the
live forecast from `daemon/forecast_pass.py`, and serving intents' batch
recommendations from `daemon/tune_pass.py` when Prometheus is configured).

* Bodies (`render/intent_object.py`) are server-side applied when the plan
  in force changes (field manager `intentc-mirror`), and Intent objects of
  this target whose intent left the plan are deleted.  Each object carries
  the label `intentc.dev/mirror-of: <target>`, so two daemons (two targets)
  never prune each other's.
* The status is written through the status subresource only when it differs
  from what was last written: a pass over an unchanged fleet sends nothing.
  What was written is read back once at start, so a restarted daemon keeps
  the time of the last heal and does not rewrite every status.

Intents of tenants held back by their errors keep the object (and status)
they had: they are neither applied nor pruned, like their workloads.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any, Callable, Mapping

from intentc.daemon.forecast_pass import ForecastPass
from intentc.daemon.phase import intent_phase
from intentc.daemon.source import Desired
from intentc.daemon.tune_pass import TunePass
from intentc.kube import reactions
from intentc.kube.client import KubeClient
from intentc.kube.errors import KubeError, NotFound
from intentc.render.crd import GROUP, VERSION
from intentc.render.intent_object import intent_object, intent_status
from intentc.objectmeta import INTENT_LABEL, ObjectRef

log = logging.getLogger("intentc.daemon")
API_VERSION = f"{GROUP}/{VERSION}"
MIRROR_LABEL = "intentc.dev/mirror-of"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class IntentMirror:
    def __init__(self, client: KubeClient, target: str, now: Callable[[], str] = _now,
                 forecaster: ForecastPass | None = None, tuner: TunePass | None = None) -> None:
        self.client = client
        self.forecaster = forecaster                      # the status's `forecast` (daemon/forecast_pass.py)
        self.tuner = tuner                                # its `batchRecommendation` (daemon/tune_pass.py)
        self.target = target
        self.now = now
        self.applied: str | None = None                   # commit whose bodies were all applied
        self.commit: str | None = None                    # commit being applied ...
        self.done: set[ObjectRef] = set()                 # ... and its bodies applied so far
        self.written: dict[ObjectRef, dict[str, Any]] | None = None   # None: not read back yet
        self.heals: dict[tuple[str, str], str] = {}      # (tenant, intent) -> last heal
        self.phases: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {}   # objects seen -> phase

    def healed(self, manifest_body: Mapping[str, Any]) -> None:
        meta = manifest_body.get("metadata") or {}
        intent = (meta.get("labels") or {}).get(INTENT_LABEL)
        if intent:
            self.heals[(str(meta.get("namespace") or ""), str(intent))] = self.now()

    def _selector(self) -> str:
        return f"{MIRROR_LABEL}={self.target}"

    def _read_back(self) -> dict[ObjectRef, dict[str, Any]]:
        written: dict[ObjectRef, dict[str, Any]] = {}
        for obj in reactions.list_mirrors(self.client, API_VERSION, "Intent", self._selector()):
            ref = ObjectRef.of(obj)
            status = dict(obj.get("status") or {})
            written[ref] = status
            if status.get("lastHeal"):
                self.heals.setdefault((ref.namespace, ref.name), str(status["lastHeal"]))
        return written

    def sync(self, desired: Desired, live: Mapping[ObjectRef, Mapping[str, Any]]) -> None:
        """Bring the Intent objects and their statuses in line with `desired` and `live`."""
        if self.written is None:
            self.written = self._read_back()
        intents = [i for i in desired.program.intents if i.tenant not in desired.held]
        if self.applied != desired.commit:
            self._apply(desired, intents)
        forecasts = self.forecaster.run(desired) if self.forecaster is not None else {}
        tunes = self.tuner.run(desired) if self.tuner is not None else {}
        by_intent: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for ref, obj in live.items():
            name = ((obj.get("metadata") or {}).get("labels") or {}).get(INTENT_LABEL)
            if name:
                by_intent.setdefault((ref.namespace, str(name)), []).append(obj)
        for intent in intents:
            ref = ObjectRef(API_VERSION, "Intent", intent.tenant, intent.name)
            if ref not in self.written:
                continue              # not applied (its namespace is not there yet): next pass
            key = (intent.tenant, intent.name)
            status = intent_status(desired.placements.get(intent.name), desired.commit,
                                   self._phase(key, by_intent.get(key, [])), self.heals.get(key),
                                   forecasts.get(key), tunes.get(key))["status"]
            if self.written.get(ref) != status:
                try:
                    reactions.write_mirror_status(self.client, ref, status)
                except NotFound:
                    self.written.pop(ref, None)
                    self.done.discard(ref)
                    self.applied = None       # deleted by someone: apply again next pass
                    continue
                self.written[ref] = status

    def _phase(self, key: tuple[str, str], objects: list[Mapping[str, Any]]) -> str:
        """`intent_phase`, computed again only when one of the intent's objects changed
        (every pass of an event-driven daemon would otherwise judge the whole fleet)."""
        seen = tuple(sorted(str((o.get("metadata") or {}).get("uid") or "") + ":" +
                            str((o.get("metadata") or {}).get("resourceVersion") or "") for o in objects))
        cached = self.phases.get(key)
        if cached is None or cached[0] != seen:
            cached = self.phases[key] = (seen, intent_phase(objects))
        return cached[1]

    def _apply(self, desired: Desired, intents: list[Any]) -> None:
        """Apply the bodies not applied yet for this commit (all of them when it is new; then
        only those that failed, e.g. their namespace is not there yet), and prune once."""
        assert self.written is not None
        if self.commit != desired.commit:
            self.commit, self.done, pruned = desired.commit, set(), False
        else:
            pruned = True
        wanted = set()
        for intent in intents:
            body = intent_object(intent)
            body["metadata"]["labels"][MIRROR_LABEL] = self.target
            ref = ObjectRef.of(body)
            wanted.add(ref)
            if ref in self.done:
                continue
            try:
                reactions.apply_mirror(self.client, body)
            except KubeError as e:
                log.info("cannot mirror intent %s yet: %s", ref, e.message)
                continue
            self.done.add(ref)
            self.written.setdefault(ref, {})
        if not pruned:
            held = set(desired.held)
            for ref in sorted(set(self.written) - wanted):
                if ref.namespace not in held:
                    reactions.delete_mirror(self.client, ref)
                    del self.written[ref]
        if self.done >= wanted:
            self.applied = desired.commit
