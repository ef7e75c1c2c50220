"""The pure parts of rollback: consistency verdicts, policies, quarantine records,
and compiling a commit straight from git's object database."""

from __future__ import annotations

import copy
from pathlib import Path

import git
import pytest

from intentc.drift.consistency import check_rollout
from intentc.drift.detect import DriftClass, Finding, History, Report
from intentc.drift.policy import Policies, Verb, asking_for_rollback, decide
from intentc.drift.quarantine import Entry, Quarantine
from intentc.drift.rollback import RepoSource, compile_revision
from intentc.frontend import parse_source
from intentc.frontend.sources import SourceFile
from intentc.ir import DriftPolicy, Program
from intentc.objectmeta import ObjectRef
from intentc.pipeline import compile_paths
from intentc.render.model import Manifest
from intentc.render.packed import PackedBody
from tests.git_support import commit_change, fixture_repo


def job(name: str, intent: str, nodes: str | None = None) -> Manifest:
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "t"},
            "spec": {"template": {"metadata": {"annotations": {}}, "spec": {"containers": []}}}}
    if nodes:
        body["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": nodes}
        body["spec"]["template"]["metadata"]["annotations"]["intentc.dev/nodes"] = nodes
    return Manifest(ObjectRef.of(body), 4, body, "h", intent, "t")


def live_of(m: Manifest, **status: object) -> dict:
    body = copy.deepcopy(dict(m.body))
    body["status"] = status
    return body


# -- consistency ---------------------------------------------------------------

def test_consistent_rollout() -> None:
    a, b = job("a-0", "a", "n1"), job("a-1", "a", "n2")
    live = {m.ref: live_of(m, conditions=[{"type": "Complete", "status": "True"}]) for m in (a, b)}
    verdict = check_rollout("c" * 40, [a, b], live)
    assert verdict.consistent and "is consistent" in verdict.summary()


def test_failed_job_missing_gang_member_and_moved_placement() -> None:
    a, b, c = job("a-0", "a", "n1"), job("a-1", "a", "n2"), job("b", "b", "n3")
    live = {a.ref: live_of(a, conditions=[{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}])}
    moved = live_of(c)
    moved["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n9"}
    live[c.ref] = moved
    verdict = check_rollout("c" * 40, [a, b, c], live)
    assert not verdict.consistent
    assert [(p.ref.name, p.reason) for p in verdict.problems] == [
        ("a-0", "unhealthy"), ("a-1", "gang-member-missing"), ("b", "placement-changed")]
    assert verdict.intents == ("a", "b")
    assert "BackoffLimitExceeded" in verdict.summary()


def test_apply_failures_are_problems_too() -> None:
    a = job("a-0", "a")
    verdict = check_rollout("c" * 40, [a], {a.ref: live_of(a)}, [(a.ref, "timed out waiting for wave-0")])
    assert [(p.reason, p.message) for p in verdict.problems] == [("apply-failed", "timed out waiting for wave-0")]


# -- policies --------------------------------------------------------------------

def program(text: str) -> Program:
    result = parse_source(SourceFile("p.intent", text))
    assert not [d for d in result.diagnostics if d.is_error], result.diagnostics
    return result.program


PROGRAM = """
tenant team-a {
  tier: gold
  drift: heal
}
tenant team-b {
  tier: bronze
}
intent x {
  trigger: on push
  action: batch image "i:1"
  context: tenant team-a, drift rollback
  constraints: cpu 1
}
intent y {
  trigger: on push
  action: batch image "i:1"
  context: tenant team-a
  constraints: cpu 1
}
intent z {
  trigger: on push
  action: batch image "i:1"
  context: tenant team-b
  constraints: cpu 1
}
"""


def test_intent_overrides_tenant_and_default_is_report() -> None:
    p = Policies.from_program(program(PROGRAM))
    assert p.resolve("x", "team-a") is DriftPolicy.ROLLBACK
    assert p.resolve("y", "team-a") is DriftPolicy.HEAL
    assert p.resolve("z", "team-b") is DriftPolicy.REPORT
    assert p.resolve(None, "team-a") is DriftPolicy.HEAL     # a tenant's Namespace
    assert asking_for_rollback([("x", "team-a"), ("y", "team-a"), ("z", "team-b")], p) == ("x",)


def test_decisions_heal_only_what_heal_can_fix() -> None:
    p = Policies.from_program(program(PROGRAM))

    def f(name: str, intent: str, tenant: str, cls: DriftClass) -> Finding:
        return Finding(ObjectRef("batch/v1", "Job", tenant, name), cls, "", intent, tenant)
    report = Report((f("a", "y", "team-a", DriftClass.MODIFIED), f("b", "y", "team-a", DriftClass.ORPHAN),
                     f("c", "z", "team-b", DriftClass.MISSING), f("d", "x", "team-a", DriftClass.STALE),
                     f("e", "y", "team-a", DriftClass.IN_SYNC)))
    verbs = {d.finding.ref.name: d.verb for d in decide(report, p)}
    assert verbs == {"a": Verb.HEAL, "b": Verb.REPORT, "c": Verb.REPORT, "d": Verb.HEAL}


# -- quarantine ----------------------------------------------------------------------

def test_quarantine_roundtrip_and_clearing() -> None:
    history = History(("d" * 40, "c" * 40, "b" * 40, "a" * 40))
    q = Quarantine().add(Entry("b" * 40, "failed", "2024-01-01T00:00:00Z", "a" * 40))
    q = q.add(Entry("c" * 40, "failed too", "2024-01-02T00:00:00Z", "a" * 40))
    body = {"data": {"quarantine.json": q.to_json()}}
    assert Quarantine.from_configmap(body) == q and "b" * 40 in q
    assert q.cleared_by("c" * 40, history).entries == (q.entries[1],)     # c itself stays quarantined
    assert q.cleared_by("d" * 40, history).entries == ()
    assert q.cleared_by("e" * 40, history) == q                             # unknown commit: no opinion
    assert Quarantine.from_configmap({"data": {"quarantine.json": "{not json"}}) == Quarantine()
    assert Quarantine.from_configmap(None) == Quarantine()


# -- compiling a revision from the object database -------------------------------------

@pytest.fixture
def history_repo(tmp_path: Path) -> tuple[git.Repo, str, str]:
    repo = fixture_repo(tmp_path / "repo")
    first = repo.head.commit.hexsha
    second = commit_change(repo, "server:1.0", "server:1.1", "second")
    return repo, first, second


def test_compile_revision_reads_git_not_the_working_tree(history_repo: tuple[git.Repo, str, str],
                                                         tmp_path: Path) -> None:
    repo, first, second = history_repo
    root = Path(repo.working_tree_dir or "")
    # a dirty, broken working tree must not matter
    (root / "intents" / "pipeline.intent").write_text("intent broken {")
    source = RepoSource(str(root), ("intents",), "clusters/small.yaml")
    old = compile_revision(source, first, tmp_path / "work")
    assert old.ok and old.rendered is not None and old.rendered.commit == first
    images = {c["image"] for m in old.rendered.manifests if m.ref.kind == "Deployment"
              for c in m.body["spec"]["template"]["spec"]["containers"]}
    assert images == {"ghcr.io/acme/server:1.0"}
    # what the daemon keeps of a commit is packed as it is rendered (~150 bytes a body, not ~6 KB)
    assert all(isinstance(m.content, PackedBody) for m in old.rendered.manifests)
    assert repo.head.commit.hexsha == second and repo.is_dirty()      # nothing checked out or reset
    # the dependency graph is built only when graph.json is asked for (the daemon never does)
    assert "dag" not in vars(old)
    # the same bytes as compiling a real checkout of that commit
    checkout = tmp_path / "checkout"
    git.Repo.clone_from(str(root), checkout).git.checkout(first)
    want = compile_paths([str(checkout / "intents")], str(checkout / "clusters" / "small.yaml"), first)
    got, expected = old.files(), want.files()
    assert got.keys() == expected.keys()
    assert {k: v for k, v in got.items() if k != "graph.json"} == {k: v for k, v in expected.items() if k != "graph.json"}
    assert got["graph.json"] == expected["graph.json"].replace(str(checkout) + "/", "")
    assert '"file": "intents/pipeline.intent"' in got["graph.json"]


def test_compile_revision_diagnostics_name_repository_paths(history_repo: tuple[git.Repo, str, str],
                                                            tmp_path: Path) -> None:
    repo, _first, _second = history_repo
    root = Path(repo.working_tree_dir or "")
    (root / "intents" / "pipeline.intent").write_text("intent broken {")
    repo.git.add(A=True)
    broken = repo.index.commit("broken").hexsha
    result = compile_revision(RepoSource(str(root), ("intents",), "clusters/small.yaml"), broken, tmp_path / "w")
    assert not result.ok
    assert {d.span.file for d in result.diagnostics if d.is_error} == {"intents/pipeline.intent"}
    assert "intents/pipeline.intent" in result.sources


def _exported(dest: Path) -> dict[str, bytes]:
    return {p.relative_to(dest).as_posix(): p.read_bytes() for p in sorted(dest.rglob("*")) if p.is_file()}


def test_each_export_writes_only_what_the_commit_changed(history_repo: tuple[git.Repo, str, str],
                                                        tmp_path: Path) -> None:
    """A commit's files are exported over the last commit's: unchanged files keep their
    stat (the parse cache's stat index vouches for them), a removed file goes, a file
    that became a folder is handled, and the folder always equals the commit's tree."""
    from intentc.drift.rollback import _export
    from intentc.vcs import gitrepo
    repo, first, second = history_repo
    root = str(repo.working_tree_dir)
    kept_file = next(p for p in gitrepo.list_tree(root, first, ("intents",)) if not p.endswith("pipeline.intent"))
    dest = tmp_path / "work" / "revision"

    def export(rev: str) -> None:
        listing = gitrepo.list_tree(root, rev, ("intents",))
        _export(root, listing, dest)
        blobs = gitrepo.read_blobs(root, listing.values())
        assert _exported(dest) == {rel: blobs[blob] for rel, blob in listing.items()}

    export(first)
    before = {rel: (dest / rel).stat() for rel in _exported(dest)}
    export(second)
    after = {rel: (dest / rel).stat() for rel in _exported(dest)}
    assert after[kept_file].st_ino == before[kept_file].st_ino
    assert after[kept_file].st_mtime_ns == before[kept_file].st_mtime_ns
    changed = "intents/pipeline.intent"
    assert (dest / changed).read_text().count("server:1.1") and after[changed].st_mtime_ns >= before[changed].st_mtime_ns

    # a file removed, and another turned into a folder of the same name
    work = Path(root)
    (work / kept_file).unlink()
    (work / changed).unlink()
    (work / changed).mkdir()
    (work / changed / "inner.intent").write_text('dataset inner { uri: "s3://x/inner" }\n')
    repo.git.add(A=True)
    third = repo.index.commit("third").hexsha
    export(third)
    assert not (dest / kept_file).exists() and (dest / changed / "inner.intent").is_file()

    # a cut-short export leaves no record: the next one starts afresh
    (dest / "stray.intent").write_text("left over\n")
    (dest.with_name("revision.blobs.json")).unlink()
    export(third)
    assert not (dest / "stray.intent").exists()


def test_consecutive_commits_share_their_unchanged_declarations(history_repo: tuple[git.Repo, str, str],
                                                                tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's git mode keeps the last commit's parse results (`reuse`): the next
    commit's unchanged files get those very objects, the edited one a new parse, and
    every output is what a compile without them gives."""
    monkeypatch.setenv("INTENTC_CACHE_DIR", str(tmp_path / "cache"))
    repo, first, second = history_repo
    source = RepoSource(str(repo.working_tree_dir), ("intents",), "clusters/small.yaml")
    reuse: dict = {}
    old = compile_revision(source, first, tmp_path / "work", reuse)
    assert old.program is not None and reuse
    new = compile_revision(source, second, tmp_path / "work", reuse)
    assert new.program is not None
    before = {t.name: t for t in old.program.tenants}
    assert before and all(t is before[t.name] for t in new.program.tenants)       # tenants.intent unchanged
    edited = [i for i in new.program.intents if i.span.file.endswith("pipeline.intent")]
    assert edited and not any(i is j for i in edited for j in old.program.intents)
    plain = compile_revision(source, second, tmp_path / "plain")
    assert new.files() == plain.files() and new.diagnostics == plain.diagnostics


def test_the_next_commit_shares_the_plan_in_force_where_it_decides_alike(
        history_repo: tuple[git.Repo, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's git mode passes the plan in force (`previous`): the next commit's plan
    keeps its equal placements as those very objects, and is the plan a compile without it makes."""
    monkeypatch.setenv("INTENTC_CACHE_DIR", str(tmp_path / "cache"))
    repo, first, second = history_repo
    source = RepoSource(str(repo.working_tree_dir), ("intents",), "clusters/small.yaml")
    old = compile_revision(source, first, tmp_path / "work")
    assert old.plan is not None and old.plan.placements
    new = compile_revision(source, second, tmp_path / "work", previous=old.plan)
    plain = compile_revision(source, second, tmp_path / "plain")
    assert new.plan == plain.plan and new.files() == plain.files()
    before = {p.intent: p for p in old.plan.placements}
    assert new.plan is not None and all(p is before[p.intent] for p in new.plan.placements if p == before[p.intent])
    assert any(p is before[p.intent] for p in new.plan.placements)
    assert not any(p is before.get(p.intent) for p in plain.plan.placements)   # type: ignore[union-attr]
