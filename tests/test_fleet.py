"""Fleets: Cluster files, intents choosing clusters, compile and drift per cluster (docs/fleets.md).

The fixture fleet (tests/fixtures/fleet) is three clusters on one small
topology: eu-1 (kueue; env=prod), us-1 (device-plugin; env=prod) and
staging (env=staging).  `serve` selects `{ env: prod }`, `cleanup` names
eu-1 and us-1; every other intent goes everywhere.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import textwrap
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from typer.testing import CliRunner

from intentc.cli import app
from intentc.fleet.build import compile_cluster, compile_fleet, prepare
from intentc.fleet.clusters import load_fleet
from intentc.fleet.select import select
from intentc.frontend import dsl, yaml as yaml_frontend
from intentc.frontend.sources import SourceFile

FLEET = Path(__file__).parent / "fixtures" / "fleet"
SHA = "f" * 40
runner = CliRunner()

TOPOLOGY = (FLEET / "topologies" / "small.yaml").resolve()


def _cluster(name: str, spec: str) -> str:
    return (f"apiVersion: intentc.dev/v1alpha1\nkind: Cluster\nmetadata: {{name: {name}}}\nspec:\n"
            + textwrap.indent(textwrap.dedent(spec).strip("\n"), "  ") + "\n")


GOOD = f"context: a\ntopology: {TOPOLOGY}\n"

# (file text, code, where): every Cluster diagnostic lands on the text `where` (its last occurrence).
CASES = [
    (_cluster("a", f"context: a\nkubeconfig: k.yaml\ntopology: {TOPOLOGY}"), "E1121", "k.yaml"),
    (_cluster("a", f"topology: {TOPOLOGY}"), "E1121", "a}"),
    (_cluster("a", "context: a\ntopology: nowhere.yaml"), "E1122", "nowhere.yaml"),
    (_cluster("a", f"kubeconfig: missing.kubeconfig\ntopology: {TOPOLOGY}"), "E1126", "missing.kubeconfig"),
    (_cluster("a", GOOD) + "---\n" + _cluster("a", GOOD), "E1120", "a}"),
    (_cluster("a", GOOD + "target: gpu-magic"), "E0213", "gpu-magic"),
    (_cluster("a", GOOD + "labels: {env: 3}"), "E0211", "3}"),
    (_cluster("a", GOOD + "colour: blue"), "E0212", "colour"),
]


def _position(text: str, needle: str) -> tuple[int, int]:
    at = text.rindex(needle)
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


@pytest.mark.parametrize(("text", "code", "where"), CASES)
def test_cluster_files_are_checked_with_positions(tmp_path: Path, text: str, code: str, where: str) -> None:
    (tmp_path / "c.yaml").write_text(text)
    fleet = load_fleet(tmp_path)
    found = [(d.code, d.span.line, d.span.column) for d in fleet.diagnostics]
    assert (code, *_position(text, where)) in found, found
    assert fleet.clusters == () or code == "E1120"


def test_an_empty_clusters_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "topology.yaml").write_text(TOPOLOGY.read_text())       # other kinds are not Clusters
    assert [d.code for d in load_fleet(tmp_path).diagnostics] == ["E1125"]
    assert [d.code for d in load_fleet(tmp_path / "absent").diagnostics] == ["E1125"]


def test_the_fixture_fleet_loads_in_name_order() -> None:
    fleet = load_fleet(FLEET / "clusters")
    assert fleet.diagnostics == ()
    assert fleet.names == ("eu-1", "staging", "us-1")
    eu = fleet.get("eu-1")
    assert eu is not None and eu.target == "kueue" and eu.label_map == {"env": "prod", "region": "eu"}
    assert Path(eu.topology).resolve() == TOPOLOGY


def _program(text: str, yaml: bool = False):  # type: ignore[no-untyped-def]
    parse = yaml_frontend.parse if yaml else dsl.parse
    program, diags = parse(SourceFile("x.yaml" if yaml else "x.intent", text))
    assert [d for d in diags if d.is_error] == []
    return program


INTENT = 'intent {name} {{\n  trigger: on push\n  action: batch image "x:1"\n  context: tenant tn-alpha\n{extra}}}\n'


def test_selection_by_name_labels_and_default() -> None:
    fleet = load_fleet(FLEET / "clusters")
    program = _program(INTENT.format(name="all", extra="")
                       + INTENT.format(name="named", extra="  clusters: [us-1]\n")
                       + INTENT.format(name="prod", extra="  clusters: { env: prod }\n")
                       + INTENT.format(name="eu", extra='  clusters: { env: prod, "region": eu }\n'))
    sel = select(program, fleet)
    assert sel.diagnostics == ()
    assert sel.by_cluster == {"eu-1": {"all", "prod", "eu"}, "us-1": {"all", "named", "prod"},
                              "staging": {"all"}}


def test_unknown_cluster_bad_label_and_no_match_are_reported_where_written() -> None:
    fleet = load_fleet(FLEET / "clusters")
    program = _program(INTENT.format(name="typo", extra="  clusters: [us-1, eu-2]\n")
                       + INTENT.format(name="nowhere", extra="  clusters: { env: dev }\n")
                       + INTENT.format(name="bad", extra='  clusters: { "-env": prod }\n'))
    diags = {(d.code, d.span.line, d.span.column, d.severity.value) for d in select(program, fleet).diagnostics}
    assert ("E1123", 5, 20, "error") in diags
    assert ("W1130", 11, 13, "warning") in diags
    assert ("E1124", 17, 15, "error") in diags
    msg = next(d.message for d in select(program, fleet).diagnostics if d.code == "E1123")
    assert '"eu-1"' in msg            # did you mean


def test_yaml_and_dsl_selectors_lower_alike_and_round_trip(tmp_path: Path) -> None:
    dsl_text = (INTENT.format(name="a", extra="  clusters: [eu-1, us-1]\n")
                + INTENT.format(name="b", extra='  clusters: { env: prod, "example.com/tier": gold }\n'))
    (tmp_path / "a.intent").write_text(dsl_text)
    res = runner.invoke(app, ["convert", str(tmp_path / "a.intent"), "--to", "yaml"])
    assert res.exit_code == 0, res.output
    assert "matchLabels:" in res.stdout
    from_yaml = _program(res.stdout, yaml=True)
    from_dsl = _program(dsl_text)
    assert [i.clusters for i in from_yaml.intents] == [i.clusters for i in from_dsl.intents]
    (tmp_path / "b.yaml").write_text(res.stdout)
    back = runner.invoke(app, ["convert", str(tmp_path / "b.yaml"), "--to", "dsl"])
    assert back.exit_code == 0 and back.stdout.strip() == dsl_text.replace("}\nintent", "}\n\nintent").strip()


def test_intent_diff_sees_a_selector_change() -> None:
    from intentc.diff.intents import diff_programs

    base = _program(INTENT.format(name="a", extra="  clusters: [eu-1, us-1]\n"))
    same = _program(INTENT.format(name="a", extra="  clusters: [us-1, eu-1]\n"))     # a set: order is no change
    head = _program(INTENT.format(name="a", extra="  clusters: { env: prod }\n"))
    assert diff_programs(base, same) == []
    changes = diff_programs(base, head)
    assert [c.name for c in changes] == ["a"] and any(f.path.startswith("clusters") for f in changes[0].changes)


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_compile_writes_one_tree_per_cluster_deterministically(tmp_path: Path) -> None:
    args = ["compile", str(FLEET / "intents"), "--clusters", str(FLEET / "clusters"), "--commit", SHA]
    first = runner.invoke(app, args + ["-d", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    assert runner.invoke(app, args + ["-d", str(tmp_path / "b")]).exit_code == 0
    a = _files(tmp_path / "a")
    assert a == _files(tmp_path / "b")
    assert sorted(p.name for p in (tmp_path / "a").iterdir() if p.is_dir()) == ["eu-1", "staging", "us-1"]
    manifests = {c: {k.split("/", 2)[2] for k in a if k.startswith(f"{c}/manifests/")}
                 for c in ("eu-1", "us-1", "staging")}
    assert "06-deployment-tn-beta-serve.yaml" in manifests["eu-1"] & manifests["us-1"]
    assert "04-job-tn-beta-cleanup.yaml" in manifests["eu-1"] & manifests["us-1"]
    assert not any("serve" in m or "cleanup" in m for m in manifests["staging"])
    assert any(m.startswith("02-clusterqueue-") for m in manifests["eu-1"])          # eu-1 renders for Kueue
    assert not any(m.startswith("02-clusterqueue-") for m in manifests["us-1"])
    for c, names in manifests.items():             # each cluster's directory plugs into kustomize as it is
        listed = yaml.safe_load(a[f"{c}/manifests/Kustomization"])["resources"]
        assert sorted(listed) == sorted(names - {"Kustomization"}), c
    plan = json.loads(a["staging/plan.json"])
    assert {p["intent"] for p in plan["placements"]} == {"prep", "train", "evaluate"}


def test_a_cluster_output_is_the_single_cluster_compile_of_its_intents(tmp_path: Path) -> None:
    """Same bytes as `compile --topology T --render-target R` over the intents it selects."""
    from intentc.fleet.select import for_cluster
    from intentc.pipeline import compile_paths

    fleet = load_fleet(FLEET / "clusters")
    result = compile_fleet([str(FLEET / "intents")], fleet, SHA)
    assert result.ok
    for cluster, fleet_result in result.results:
        alone = compile_paths([str(FLEET / "intents")], cluster.topology, SHA, target=cluster.target,
                              only=for_cluster(cluster.name, cluster.label_map))
        assert alone.files() == fleet_result.files()


def test_compile_reports_an_unknown_cluster_with_its_position_and_writes_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FLEET / "intents", repo)
    text = (repo / "pipeline.intent").read_text().replace("clusters: [eu-1, us-1]", "clusters: [eu-1, us-9]")
    (repo / "pipeline.intent").write_text(text)
    res = runner.invoke(app, ["compile", str(repo), "--clusters", str(FLEET / "clusters"), "--commit", SHA,
                              "-d", str(tmp_path / "out")])
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "us-9" in t)
    assert res.exit_code == 1
    assert f"pipeline.intent:{line}:" in res.stdout and "E1123" in res.stdout
    assert not (tmp_path / "out").exists()


def test_compile_refuses_topology_with_clusters() -> None:
    res = runner.invoke(app, ["compile", str(FLEET / "intents"), "--clusters", str(FLEET / "clusters"),
                              "-t", str(TOPOLOGY), "-d", "/tmp/never"])
    assert res.exit_code == 2 and "--clusters" in res.stderr


def test_the_daemon_reads_the_topology_as_a_path_in_the_repository() -> None:
    from intentc.cli.fleet import repo_topology

    eu = load_fleet(FLEET / "clusters").get("eu-1")
    assert eu is not None
    assert repo_topology(str(Path(__file__).resolve().parent.parent), eu) == "tests/fixtures/fleet/topologies/small.yaml"
    assert repo_topology("https://example.invalid/repo.git", eu) == str(TOPOLOGY)


@pytest.mark.parametrize("command", ["apply", "daemon"])
def test_cluster_and_clusters_go_together_and_replace_the_connection(command: str) -> None:
    base = ["apply", str(FLEET / "intents")] if command == "apply" else ["daemon", "--repo", "."]
    alone = runner.invoke(app, base + ["--cluster", "eu-1"])
    assert alone.exit_code == 2 and "go together" in alone.stderr
    both = runner.invoke(app, base + ["--cluster", "eu-1", "--clusters", str(FLEET / "clusters"),
                                      "--context", "x"])
    assert both.exit_code == 2 and "drop --topology" in both.stderr
    unknown = runner.invoke(app, base + ["--cluster", "eu-2", "--clusters", str(FLEET / "clusters")])
    assert unknown.exit_code == 2 and '"eu-1"' in unknown.stderr


# -- drift --clusters against two real API servers ---------------------------------------------

@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, object]]:
    from tests.kube_env import SKIP_MESSAGE, KubeEnv, assets_dir

    assets = assets_dir()
    if assets is None:
        pytest.skip(SKIP_MESSAGE)
    envs = [KubeEnv(assets, tmp_path_factory.mktemp(f"fleet-{k}")) for k in range(2)]
    try:
        for e in envs:
            e.start()
        yield envs[0], envs[1]
    finally:
        for e in envs:
            e.stop()


def _fleet_dir(tmp: Path, servers: tuple[object, object], dead: str | None = None) -> Path:
    d = tmp / "clusters"
    d.mkdir(exist_ok=True)
    for name, env, labels in (("eu-1", servers[0], "{env: prod}"), ("us-1", servers[1], "{env: prod}")):
        (d / f"{name}.yaml").write_text(_cluster(name, f"kubeconfig: {env.kubeconfig}\n"   # type: ignore[attr-defined]
                                                       f"topology: {TOPOLOGY}\nlabels: {labels}"))
    if dead:
        (d / "gone.yaml").write_text(_cluster("gone", f"kubeconfig: {dead}\ntopology: {TOPOLOGY}"))
    return d


@pytest.mark.kube
def test_drift_clusters_gives_one_row_per_cluster_and_the_worst_exit(tmp_path: Path, two_servers) -> None:  # type: ignore[no-untyped-def]
    from intentc.kube.client import KubeClient
    from intentc.objectmeta import ObjectRef
    from intentc.reconcile import inventory_store

    clusters = _fleet_dir(tmp_path, two_servers)
    for name in ("eu-1", "us-1"):          # `apply --cluster`: that cluster's intents, inventory target = its name
        res = runner.invoke(app, ["apply", str(FLEET / "intents"), "--cluster", name, "--clusters", str(clusters),
                                  "--no-wait", "--commit", SHA])
        assert res.exit_code == 0, res.output
    with_serve = KubeClient.connect(str(two_servers[0].kubeconfig))
    assert with_serve.get(ObjectRef("apps/v1", "Deployment", "tn-beta", "serve")) is not None     # env=prod
    assert inventory_store.read_inventory(with_serve, "eu-1").commit == SHA
    with_serve.close()
    args = ["drift", str(FLEET / "intents"), "--clusters", str(clusters), "--commit", SHA]
    ok = runner.invoke(app, args + ["-o", "json"])
    doc = json.loads(ok.stdout)
    assert ok.exit_code == 0, ok.output
    assert [(r["cluster"], r["reachable"], r["inSync"], r["head"]) for r in doc["clusters"]] == \
        [("eu-1", True, True, SHA), ("us-1", True, True, SHA)]

    # someone deletes the serve Deployment on us-1: that row drifts, eu-1 stays in sync, exit 1
    two_servers[1].kubectl_run("delete", "deployment", "-n", "tn-beta", "serve")
    drifted = runner.invoke(app, args)
    assert drifted.exit_code == 1, drifted.output
    rows = {line.split()[0]: line for line in drifted.stdout.splitlines()[2:-1]}
    assert rows["eu-1"].split()[1:4] == ["yes", "yes", "0"]
    assert rows["us-1"].split()[1:4] == ["yes", "no", "1"] and "1 missing" in rows["us-1"]

    # a cluster that cannot be reached makes the fleet exit 2, and still lists the others
    dead = tmp_path / "dead.kubeconfig"
    dead.write_text(two_servers[0].kubeconfig_text().replace(two_servers[0].server, "https://127.0.0.1:9"))
    worst = runner.invoke(app, ["drift", str(FLEET / "intents"), "--clusters",
                                str(_fleet_dir(tmp_path, two_servers, str(dead))), "--commit", SHA, "-o", "json"])
    assert worst.exit_code == 2, worst.output
    rows_json = {r["cluster"]: r for r in json.loads(worst.stdout)["clusters"]}
    assert rows_json["gone"]["reachable"] is False and rows_json["gone"]["error"]
    assert rows_json["eu-1"]["inSync"] is True and rows_json["us-1"]["drifted"] == 1


@pytest.mark.kube
def test_two_targets_on_one_cluster_own_the_shared_objects_jointly(two_servers) -> None:  # type: ignore[no-untyped-def]
    """us-1 and staging applied to one API server from commits each other's history does not
    hold: the PriorityClasses both render are neither foreign nor orphans to either."""
    from intentc.drift.detect import DriftClass, History
    from intentc.drift.managed import observe
    from intentc.kube.client import KubeClient
    from intentc.reconcile.sync import ApplyOptions, Reconciler
    from intentc.render.capabilities import KubeVersion

    fleet = load_fleet(FLEET / "clusters")
    prep = prepare([str(FLEET / "intents")], fleet)
    c = KubeClient.connect(str(two_servers[0].kubeconfig))
    version = KubeVersion.parse(c.version())
    commits = {"us-1": "1" * 40, "staging": "2" * 40}
    rendered = {}
    for name, sha in commits.items():
        cluster = fleet.get(name)
        assert cluster is not None
        rendered[name] = compile_cluster(prep, cluster, sha, version).rendered
        res = Reconciler(c, ApplyOptions(target=f"shared-{name}", wait=False)).apply(rendered[name])
        assert res.result == "succeeded", res.message
    for name, sha in commits.items():
        report, _ = observe(c, rendered[name].manifests, f"shared-{name}", History((sha,)))
        shared = [f for f in report.findings if f.ref.kind == "PriorityClass"]
        assert shared and all(f.drift is DriftClass.IN_SYNC for f in shared), \
            [(f.ref.name, f.drift.value, f.message) for f in shared]
    c.close()


def test_a_revision_compiled_for_a_cluster_holds_its_intents_only(tmp_path: Path) -> None:
    """What the daemon compiles from git for `--cluster staging`: not serve, not cleanup."""
    import git

    from intentc.drift.rollback import RepoSource, compile_revision
    from tests.git_support import commit

    repo = git.Repo.init(tmp_path / "repo")
    sha = commit(repo, {f"{p.relative_to(FLEET).as_posix()}": p.read_text()
                        for p in FLEET.rglob("*") if p.is_file()}, "fleet")
    source = RepoSource(str(tmp_path / "repo"), ("intents",), "topologies/small.yaml")
    everything = compile_revision(source, sha, tmp_path / "work")
    staging = compile_revision(dataclasses.replace(source, cluster=("staging", (("env", "staging"),))), sha,
                               tmp_path / "work")
    assert everything.rendered is not None and staging.rendered is not None
    intents = {m.intent for m in staging.rendered.manifests if m.intent}
    assert intents == {"prep", "train", "evaluate"}
    assert {"serve", "cleanup"} <= {m.intent for m in everything.rendered.manifests if m.intent}


@pytest.mark.kube
def test_the_daemon_runs_one_cluster_of_the_fleet(tmp_path: Path, two_servers) -> None:  # type: ignore[no-untyped-def]
    """`intentc daemon --cluster staging --clusters clusters/`: that cluster's API server, its
    inventory target, its intents only."""
    import subprocess
    import sys

    import git

    from intentc.kube.client import KubeClient
    from intentc.objectmeta import ObjectRef
    from intentc.reconcile import inventory_store
    from tests.git_support import commit
    from tests.kube_support import wait_for

    env = two_servers[1]
    files = {p.relative_to(FLEET).as_posix(): p.read_text() for p in FLEET.rglob("*") if p.is_file()}
    files["clusters/staging.yaml"] = _cluster("staging", f"kubeconfig: {env.kubeconfig}\n"
                                                         "topology: ../topologies/small.yaml\nlabels: {env: staging}")
    files.pop("clusters/us-1.yaml")          # it declares staging too
    repo = git.Repo.init(tmp_path / "repo")
    commit(repo, files, "fleet")
    repo.git.branch("-M", "main")
    proc = subprocess.Popen(
        [sys.executable, "-m", "intentc", "daemon", "--repo", str(tmp_path / "repo"), "--branch", "main",
         "--cluster", "staging", "--clusters", str(tmp_path / "repo" / "clusters"), "--listen", "",
         "--interval", "1", "--workdir", str(tmp_path / "work"), "--rollout-timeout", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    c = KubeClient.connect(str(env.kubeconfig))
    try:
        def recorded() -> set[str]:       # the inventory target is the cluster's name
            return {e.intent for e in inventory_store.read_inventory(c, "staging").entries if e.intent}

        # the inventory records a step's objects before it runs them: cleanup (eu-1 and us-1 only) is in
        # prep's step, so had the daemon ignored the selection it would be recorded beside prep
        wait_for(lambda: "prep" in recorded(), 180, "the daemon's first wave on staging")
        assert recorded() <= {"prep", "train", "evaluate"}
        assert c.get(ObjectRef("batch/v1", "Job", "tn-alpha", "prep")) is not None
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
        c.close()
