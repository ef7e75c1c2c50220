"""The values a reload produces and keeps: per-file state, per-intent renders, snapshots.

All frozen: a `Snapshot` is handed to other threads (the daemon's reactor,
HTTP readers) and must never change under them; the `Reloader` builds a new
one and swaps the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from intentc.pipeline.result import MANIFESTS_DIR
from intentc.diagnostics import Diagnostic
from intentc.ir import Intent, Program, Topology
from intentc.plan.model import Placement, Plan
from intentc.render.model import Choice, Manifest, Rendered
from intentc.render.output import KUSTOMIZATION, kustomization, manifest_filename, step_width, to_yaml
from intentc.render.packed import PackedText
from intentc.topology.load import LoadedTopology


@dataclass(frozen=True, slots=True)
class FileState:
    """One file as the last reload read it.  Flat (no `FileResult` inside, the digest
    here rather than in a map of its own): there is one per file, 100,000 of them."""

    program: Program                    # canonical (position) order
    parsed: tuple[Diagnostic, ...]      # the parser's findings
    domain: tuple[Diagnostic, ...]      # per-declaration checks of this file's declarations
    read: tuple[Diagnostic, ...] = ()   # reading / decoding problems
    digest: bytes = b""                 # of the text parsed (b"": none): the same text is not parsed again

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """Everything this file reports on its own, in report-building order."""
        return self.read + self.domain + self.parsed


@dataclass(frozen=True, slots=True)
class IntentRender:
    """One intent's manifests and the inputs they were rendered from (the cache key;
    commit, Kubernetes version and render target are fixed per `Reloader`).  The URIs
    of the datasets it names are those of the snapshot holding it (`render.data_of`).
    Slotted: there is one per intent."""

    intent: Intent
    placement: Placement | None
    wave: int
    manifests: tuple[Manifest, ...]
    choice: Choice | None
    decided: tuple[Any, ...] = ()                 # the plan's batch sizing and strategy for it
    _texts: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def texts(self) -> tuple[str, ...]:
        """The manifests as YAML, in the same order: made when first written out
        (`watch --out`), never by the daemon, which applies objects, not files;
        kept for all 100,000 intents they were a tenth of its memory."""
        if self._texts is None:
            object.__setattr__(self, "_texts", tuple(to_yaml(m.body) for m in self.manifests))
        assert self._texts is not None
        return self._texts

    def fits(self, intent: Intent, placement: Placement | None, wave: int, decided: tuple[Any, ...] = ()) -> bool:
        # identity first: an unchanged file hands back the very same IR objects
        return ((self.intent is intent or self.intent == intent) and self.wave == wave
                and (self.placement is placement or self.placement == placement) and self.decided == decided)


@dataclass(frozen=True)
class Snapshot:
    """A plan in force: everything `compile` would write, plus render caches."""

    generation: int
    program: Program
    plan: Plan
    rendered: Rendered
    diagnostics: tuple[Diagnostic, ...]
    plan_text: PackedText          # plan.json and graph.json, made when first read and kept
    graph_text: PackedText         # compressed: read them as `plan_json` / `graph_json`
    topology_generation: int = field(repr=False, default=0)          # the topology file read the plan saw
    plan_diagnostics: tuple[Diagnostic, ...] = field(repr=False, default=())
    uris: Mapping[str, str | None] = field(repr=False, default_factory=dict)
    global_diagnostics: tuple[Diagnostic, ...] = field(repr=False, default=())
    intents: Mapping[str, IntentRender] = field(repr=False, default_factory=dict)
    setup: tuple[Manifest, ...] = field(repr=False, default=())        # tenants' objects, priority classes
    setup_texts: tuple[str, ...] = field(repr=False, default=())
    topology: Topology | None = field(repr=False, default=None)      # what the render saw
    # files the kept findings point into: an edit there runs their pass again
    global_files: frozenset[str] = field(repr=False, default=frozenset())
    plan_files: frozenset[str] = field(repr=False, default=frozenset())
    # the topology with its GPU matrices the plan was made on: the daemon re-binds on live state with it
    loaded: LoadedTopology | None = field(repr=False, default=None, compare=False)

    @property
    def plan_json(self) -> str:
        return str(self.plan_text)

    @property
    def graph_json(self) -> str:
        return str(self.graph_text)

    def files(self) -> dict[str, str]:
        """Output path -> text, exactly `CompileResult.files()` of a full compile."""
        text = {id(m): t for m, t in zip(self.setup, self.setup_texts, strict=True)}
        for r in self.intents.values():
            text.update((id(m), t) for m, t in zip(r.manifests, r.texts, strict=True))
        width = step_width(self.rendered.manifests)
        names = [manifest_filename(m, width) for m in self.rendered.manifests]
        out = {f"{MANIFESTS_DIR}/{name}": text[id(m)] for name, m in zip(names, self.rendered.manifests)}
        out[f"{MANIFESTS_DIR}/{KUSTOMIZATION}"] = kustomization(names)
        out["plan.json"] = self.plan_json
        out["graph.json"] = self.graph_json
        return out


@dataclass(frozen=True)
class ReloadResult:
    ok: bool                                    # the change compiled and is now in force
    diagnostics: tuple[Diagnostic, ...]
    sources: Mapping[str, str]                  # texts of the files the diagnostics point into
    changed_files: tuple[str, ...]
    reparsed: tuple[str, ...]                   # files parsed again
    rerendered: tuple[str, ...]                 # intents rendered again
    replanned: bool
    snapshot: Snapshot | None                   # the snapshot in force afterwards
    # how the plan was made when it was: "" (kept, or the full planner), or
    # "incremental plan: N intents re-placed" (plan/incremental.py; a full re-plan follows)
    plan_note: str = ""
