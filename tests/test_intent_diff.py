"""`intentc diff` on real temporary git repositories (GitPython).

Every test commits a base, changes something (a commit or the working tree)
and checks the semantic diff: renames, DSL <-> YAML conversion and comment
edits that must produce nothing, field paths with positions on each side,
the graph and plan diffs, impact classes, exit codes and the shallow-clone
error.
"""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest
from git_support import commit
from typer.testing import CliRunner

from intentc.cli import app
from intentc.diff.format import render_report
from intentc.diff.impact import ImpactClass
from intentc.diff.intents import Status
from intentc.diff.report import DiffReport, diff_trees
from intentc.diff.sides import Tree
from intentc.frontend.convert import Surface, convert
from intentc.frontend.sources import SOURCE_SUFFIXES, SourceFile
from intentc.topology.load import load_topology
from intentc.vcs import gitrepo

TENANTS = """\
tenant team-a {
  tier: gold
  quota: gpus 16
}

dataset raw { uri: "s3://acme/raw" }
"""

PIPELINE = """\
# The pipeline of team A.
intent prep {
  trigger: on push
  action: batch image "ghcr.io/acme/prep:1.0" command ["prep", "--all"]
  context: tenant team-a
  constraints: cpu 4, memory 16Gi
  consumes: raw
  produces: clean
}

intent train {
  trigger: after prep
  action: training image "ghcr.io/acme/train:2.0"
  context: tenant team-a, tags [nightly]
  constraints: cpu 32, memory 256Gi, gpus 8 x "H100-80GB" within node, sla P1
  consumes: clean
  produces: model
}
"""

SERVE = """\
apiVersion: intentc.dev/v1alpha1
kind: Intent
metadata:
  name: serve
spec:
  trigger: push
  action:
    kind: serve
    image: ghcr.io/acme/serve:3.0
    replicas: 2
    port: 8000
  context:
    tenant: team-a
  constraints:
    cpu: "8"
    memory: 32Gi
    gpus: {count: 2, product: H100-80GB}
  consumes: [model]
"""

TOPOLOGY = """\
apiVersion: intentc.dev/v1alpha1
kind: Topology
metadata: {name: two-nodes}
spec:
  levels: [zone, rack, nvlink, node]
  nodes:
    - name: node-a
      gpu: {product: H100-80GB, count: 8, memory: 80Gi}
      cpu: "192"
      memory: 2Ti
      domains: {zone: z1, rack: r1, nvlink: node-a}
    - name: node-b
      gpu: {product: H100-80GB, count: 8, memory: 80Gi}
      cpu: "192"
      memory: 2Ti
      domains: {zone: z1, rack: r1, nvlink: node-b}
"""

BASE = {"intents/tenants.intent": TENANTS, "intents/pipeline.intent": PIPELINE, "intents/serve.yaml": SERVE}


@pytest.fixture()
def repo(tmp_path: Path) -> git.Repo:
    r = git.Repo.init(tmp_path / "repo")
    commit(r, BASE, "base")
    return r


def tree(root: Path, rev: str | None) -> Tree:
    snap = gitrepo.snapshot(root, rev, ("intents",), SOURCE_SUFFIXES)
    return Tree(rev or "working tree", snap.listing, snap.read)


def run_diff(repo: git.Repo, base: str = "HEAD~1", head: str | None = "HEAD", topology: str | None = None,
             cache_dir: str | None = None) -> DiffReport:
    root = Path(repo.working_tree_dir or ".")
    loaded = None
    if topology is not None:
        (root / "topo.yaml").write_text(topology)
        loaded, diags = load_topology(str(root / "topo.yaml"))
        assert loaded is not None, diags
    report, _, _ = diff_trees(tree(root, base), tree(root, head), loaded, cache_dir, jobs=1)
    return report


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


# --------------------------------------------------------------------------
# Changes that must not show
# --------------------------------------------------------------------------

def test_comment_and_formatting_only_change_is_empty(repo: git.Repo) -> None:
    noisy = "# a new header comment\n\n" + PIPELINE.replace("  trigger: on push\n", "  # why: nightly data\n"
                                                            "  trigger:   on push    # inline\n\n")
    commit(repo, {"intents/pipeline.intent": noisy,
                  "intents/serve.yaml": "# comment\n" + SERVE.replace("replicas: 2", "replicas: 2   # two")},
           "comments")
    report = run_diff(repo)
    assert not report.changed
    assert report.declarations == () and report.graph.empty and report.impacts == ()


@pytest.mark.parametrize("path,to,new_path", [
    ("intents/pipeline.intent", Surface.YAML, "intents/pipeline.yaml"),
    ("intents/serve.yaml", Surface.DSL, "intents/serve.intent"),
])
def test_dsl_yaml_conversion_is_empty(repo: git.Repo, path: str, to: Surface, new_path: str) -> None:
    text, diags = convert(SourceFile(path, BASE[path]), to)
    assert text is not None, diags
    commit(repo, {path: None, new_path: text}, "convert")
    report = run_diff(repo)
    assert not report.changed, render_report(report, "text")


def test_moving_an_intent_to_another_file_is_empty(repo: git.Repo) -> None:
    prep, train = PIPELINE.split("\nintent train", 1)
    commit(repo, {"intents/pipeline.intent": prep, "intents/train/train.intent": "intent train" + train}, "split")
    assert not run_diff(repo).changed


def test_reordering_a_set_like_field_is_empty(repo: git.Repo) -> None:
    two = edit(PIPELINE, "  produces: model\n", "  produces: model, metrics\n")
    commit(repo, {"intents/pipeline.intent": two}, "two outputs")
    swapped = edit(two, "produces: model, metrics", "produces: metrics, model")
    commit(repo, {"intents/pipeline.intent": swapped}, "swap")
    assert not run_diff(repo).changed


# --------------------------------------------------------------------------
# Changes that must show, precisely
# --------------------------------------------------------------------------

def test_field_change_with_positions_on_both_sides(repo: git.Repo) -> None:
    moved = "\n\n" + edit(PIPELINE, '"ghcr.io/acme/train:2.0"', '"ghcr.io/acme/train:2.1"')
    commit(repo, {"intents/pipeline.intent": moved}, "bump")
    report = run_diff(repo)
    (change,) = report.declarations
    assert (change.kind, change.status, change.name) == ("intent", Status.CHANGED, "train")
    (f,) = change.changes
    assert (f.path, f.old, f.new) == ("action.image", "ghcr.io/acme/train:2.0", "ghcr.io/acme/train:2.1")
    assert f.base_span is not None and f.head_span is not None
    assert (f.base_span.file, f.base_span.line) == ("intents/pipeline.intent", 13)
    assert (f.head_span.file, f.head_span.line) == ("intents/pipeline.intent", 15)   # two lines were added above
    assert f.base_span.column == f.head_span.column == 26
    (impact,) = report.impacts
    assert (impact.intent, impact.impact) == ("train", ImpactClass.RESTART)


def test_yaml_field_positions(repo: git.Repo) -> None:
    commit(repo, {"intents/serve.yaml": edit(SERVE, "replicas: 2", "replicas: 3")}, "scale")
    (change,) = run_diff(repo).declarations
    (f,) = change.changes
    assert (f.path, f.old, f.new) == ("action.replicas", 2, 3)
    assert f.head_span is not None and (f.head_span.line, f.head_span.column) == (10, 15)


def test_rename_detection(repo: git.Repo) -> None:
    renamed = PIPELINE.replace("intent prep {", "intent prepare {").replace("after prep", "after prepare")
    commit(repo, {"intents/pipeline.intent": renamed}, "rename")
    report = run_diff(repo)
    by_name = {c.name: c for c in report.declarations}
    assert by_name["prepare"].status is Status.RENAMED and by_name["prepare"].old_name == "prep"
    assert "prep" not in by_name                      # not reported as removed + added
    assert by_name["train"].status is Status.CHANGED   # its `after` now names the new intent
    assert [(f.path, f.old, f.new) for f in by_name["train"].changes] == [("trigger.after", "prep", "prepare")]
    impacts = {i.intent: i.impact for i in report.impacts}
    assert impacts["prepare"] is ImpactClass.RESTART
    assert impacts["train"] is ImpactClass.METADATA_ONLY     # ordering only: the Job spec is unchanged


def test_rename_with_a_content_change_is_remove_and_add(repo: git.Repo) -> None:
    text = PIPELINE.replace("intent prep {", "intent prepare {").replace('"prep", "--all"', '"prep", "--some"')
    commit(repo, {"intents/pipeline.intent": text.replace("after prep", "after prepare")}, "rename+edit")
    statuses = {c.name: c.status for c in run_diff(repo).declarations}
    assert statuses["prep"] is Status.REMOVED and statuses["prepare"] is Status.ADDED


def test_added_removed_and_tenant_dataset_changes(repo: git.Repo) -> None:
    tenants = edit(TENANTS, "quota: gpus 16", "quota: gpus 24").replace(
        'dataset raw { uri: "s3://acme/raw" }', 'dataset raw { uri: "s3://acme/raw-v2" }')
    extra = "intent report {\n  trigger: after train\n  action: batch image \"r:1\"\n  context: tenant team-a\n}\n"
    commit(repo, {"intents/tenants.intent": tenants, "intents/serve.yaml": None, "intents/report.intent": extra},
           "mixed")
    report = run_diff(repo)
    got = {(c.kind, c.name, c.status) for c in report.declarations}
    assert got == {("tenant", "team-a", Status.CHANGED), ("dataset", "raw", Status.CHANGED),
                   ("intent", "serve", Status.REMOVED), ("intent", "report", Status.ADDED)}
    tenant = next(c for c in report.declarations if c.kind == "tenant")
    assert [(f.path, f.old, f.new) for f in tenant.changes] == [("quota_gpus", 16, 24)]
    assert {(e.source, e.target) for e in report.graph.added} == {("train", "report")}
    assert {(e.source, e.target) for e in report.graph.removed} == {("train", "serve")}


def test_new_cycle_and_wave_moves(repo: git.Repo) -> None:
    cyc = edit(PIPELINE, "  trigger: on push\n", "  trigger: after train\n")
    commit(repo, {"intents/pipeline.intent": cyc}, "cycle")
    report = run_diff(repo)
    assert report.graph.new_cycles == (("prep", "train"),)
    text = render_report(report, "text")
    assert "new cycle: prep -> train -> prep" in text


def test_wave_move_is_reported(repo: git.Repo) -> None:
    commit(repo, {"intents/serve.yaml": SERVE.replace("consumes: [model]", "consumes: []")}, "decouple")
    report = run_diff(repo)
    assert [(w.intent, w.old, w.new) for w in report.graph.waves] == [("serve", 2, 0)]


def test_metadata_only_change(repo: git.Repo) -> None:
    commit(repo, {"intents/pipeline.intent": edit(PIPELINE, "tags [nightly]", "tags [nightly, big]")}, "tag")
    (impact,) = run_diff(repo).impacts
    assert impact.impact is ImpactClass.METADATA_ONLY


def test_plan_diff_reschedule_and_capacity(repo: git.Repo) -> None:
    base = run_diff(repo, "HEAD", "HEAD", TOPOLOGY)
    assert base.plan is not None and base.plan.empty and not base.changed
    # train grows to 20 GPUs: more than the cluster (and the quota) has -> capacity
    bigger = edit(PIPELINE, 'gpus 8 x "H100-80GB" within node', 'gpus 20 x "H100-80GB" within node')
    commit(repo, {"intents/pipeline.intent": bigger}, "grow")
    report = run_diff(repo, topology=TOPOLOGY)
    assert report.plan is not None
    impacts = {i.intent: i.impact for i in report.impacts}
    assert impacts["train"] is ImpactClass.CAPACITY
    # serve runs after train, which can never be placed: it can never start either (reason "dependency")
    assert [c.intent for c in report.plan.capacity if not c.placeable] == ["serve", "train"]
    shares = {s.tenant: (s.old_requested, s.new_requested) for s in report.plan.shares}
    assert shares["team-a"] == (10, 22)


def test_reschedule_of_an_unchanged_intent(repo: git.Repo) -> None:
    small = edit(PIPELINE, 'gpus 8 x "H100-80GB" within node', 'gpus 4 x "H100-80GB" within node')
    commit(repo, {"intents/pipeline.intent": small}, "shrink")
    report = run_diff(repo, topology=TOPOLOGY)
    assert report.plan is not None
    moved = {m.intent for m in report.plan.moved}
    impacts = {i.intent: i for i in report.impacts}
    assert "train" in moved and impacts["train"].impact is ImpactClass.RESCHEDULE
    for name in moved - {"train"}:
        assert impacts[name].impact is ImpactClass.RESCHEDULE and not impacts[name].changed


# --------------------------------------------------------------------------
# The cache, formats and the command line
# --------------------------------------------------------------------------

def test_blob_cache_gives_identical_results(repo: git.Repo, tmp_path: Path) -> None:
    commit(repo, {"intents/pipeline.intent": edit(PIPELINE, "cpu 4,", "cpu 6,")}, "cpu")
    cold = run_diff(repo, cache_dir=str(tmp_path / "cache"))
    warm = run_diff(repo, cache_dir=str(tmp_path / "cache"))
    none = run_diff(repo)
    assert cold.stats is not None and warm.stats is not None
    assert cold.stats.parsed == 4 and cold.stats.cached == 0          # 3 files, one changed: 4 distinct blobs
    assert warm.stats.parsed == 0 and warm.stats.cached == 4
    assert render_report(cold, "json") == render_report(warm, "json") == render_report(none, "json")


def test_markdown_and_json(repo: git.Repo) -> None:
    commit(repo, {"intents/pipeline.intent": edit(PIPELINE, "cpu 4,", "cpu 6,")}, "cpu")
    report = run_diff(repo)
    md = render_report(report, "markdown")
    assert md.startswith("<!-- intentc:diff -->") and "<details>" in md and "| ~ changed | intent | `prep` |" in md
    data = json.loads(render_report(report, "json"))
    (decl,) = data["declarations"]
    assert decl["changes"][0]["path"] == "constraints.cpu"
    assert decl["changes"][0]["base"]["line"] == 6


runner = CliRunner()


def test_cli_exit_codes(repo: git.Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(repo.working_tree_dir or ".")
    monkeypatch.setenv("INTENTC_CACHE_DIR", str(tmp_path / "cache"))
    res = runner.invoke(app, ["diff", "--base", "HEAD"])
    assert res.exit_code == 0, res.output
    assert "no semantic change" in res.output
    Path("intents/pipeline.intent").write_text(edit(PIPELINE, "cpu 4,", "cpu 6,"))
    res = runner.invoke(app, ["diff", "--base", "HEAD", "-o", "markdown"])
    assert res.exit_code == 1 and "`prep`" in res.output
    Path("intents/pipeline.intent").write_text(edit(PIPELINE, "cpu 4, memory", "cpu 4,, memory"))
    for _ in range(2):          # the second run serves the broken file from the cache: still a caret
        res = runner.invoke(app, ["diff", "--base", "HEAD"])
        assert res.exit_code == 2 and "does not compile" in res.output
        assert "intents/pipeline.intent:" in res.output and "^" in res.output


def test_cli_unknown_revision(repo: git.Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo.working_tree_dir or ".")
    res = runner.invoke(app, ["diff", "--base", "origin/main"])
    assert res.exit_code == 2 and "'origin/main' is not available" in res.output


def test_cli_shallow_clone_says_fetch_more_history(repo: git.Repo, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    commit(repo, {"intents/pipeline.intent": edit(PIPELINE, "cpu 4,", "cpu 6,")}, "second")
    clone = git.Repo.clone_from(f"file://{repo.working_tree_dir}", tmp_path / "shallow", depth=1)
    monkeypatch.chdir(clone.working_tree_dir or ".")
    res = runner.invoke(app, ["diff", "--base", "HEAD~1"])
    assert res.exit_code == 2
    assert "not available in this shallow clone" in res.output
    assert "git fetch --unshallow" in res.output and "fetch-depth: 0" in res.output


def test_cli_merge_base(repo: git.Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit that landed on the base branch after the fork is not shown as reverted."""
    main = repo.active_branch.name
    repo.git.checkout("-b", "feature")
    commit(repo, {"intents/pipeline.intent": edit(PIPELINE, "cpu 4,", "cpu 6,")}, "feature work")
    repo.git.checkout(main)
    commit(repo, {"intents/serve.yaml": edit(SERVE, "replicas: 2", "replicas: 5")}, "main moved on")
    repo.git.checkout("feature")
    monkeypatch.chdir(repo.working_tree_dir or ".")
    plain = json.loads(runner.invoke(app, ["diff", "--base", main, "-o", "json"]).output)
    fork = json.loads(runner.invoke(app, ["diff", "--base", main, "--merge-base", "-o", "json"]).output)
    assert {d["name"] for d in plain["declarations"]} == {"prep", "serve"}
    assert {d["name"] for d in fork["declarations"]} == {"prep"}


def test_blob_cache_writes_small_deltas_then_compacts(repo: git.Repo, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from intentc.diff.cache import BlobCache
    monkeypatch.setattr(BlobCache, "COMPACT_RATIO", 10.0)     # a tiny repository: compact on count only
    cache_dir = str(tmp_path / "cache")
    run_diff(repo, "HEAD", "HEAD", cache_dir=cache_dir)                 # first run: the main file
    (folder,) = (tmp_path / "cache").iterdir()
    assert sorted(p.name for p in folder.iterdir()) == ["main.pickle"]
    commit(repo, {"intents/pipeline.intent": edit(PIPELINE, "cpu 4,", "cpu 6,")}, "push 1")
    report = run_diff(repo, cache_dir=cache_dir)                          # one new blob: a delta file
    assert report.stats is not None and report.stats.parsed == 1
    assert len(list(folder.glob("delta-*.pickle"))) == 1
    assert len(BlobCache(cache_dir).entries) == 4
    monkeypatch.setattr(BlobCache, "MAX_DELTAS", 1)
    commit(repo, {"intents/pipeline.intent": edit(PIPELINE, "cpu 4,", "cpu 8,")}, "push 2")
    run_diff(repo, cache_dir=cache_dir)                                   # too many deltas: compacted
    assert sorted(p.name for p in folder.iterdir()) == ["main.pickle"]
    assert len(BlobCache(cache_dir).entries) == 4                         # only this run's two trees


def test_pull_request_workflow_runs_the_three_commands() -> None:
    import yaml
    root = Path(__file__).resolve().parents[1]
    for path in (root / ".github/workflows/pr.yml", root / "examples/github/intentc-pr.yml"):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        steps = doc["jobs"]["review"]["steps"]
        checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
        assert checkout["with"]["fetch-depth"] == 0
        scripts = "\n".join(str(s.get("run", "")) for s in steps)
        assert "intentc check intents/" in scripts
        assert "intentc diff --base" in scripts and "-o markdown" in scripts
        assert "intentc schema-diff --base" in scripts
        assert any("github-script" in s.get("uses", "") for s in steps)     # the sticky comment


def test_golden_outputs(repo: git.Repo) -> None:
    """The three formats of one diff that has a bit of everything, byte for byte
    (no topology: placements are the planner's to change, and other tests check them)."""
    from golden_support import assert_golden
    pipeline = (PIPELINE.replace("intent prep {", "intent prepare {").replace("after prep", "after prepare")
                .replace('"ghcr.io/acme/train:2.0"', '"ghcr.io/acme/train:2.1"')
                .replace('gpus 8 x "H100-80GB" within node', 'gpus 4 x "H100-80GB" within node'))
    extra = "intent report {\n  trigger: after train\n  action: batch image \"r:1\"\n  context: tenant team-a\n}\n"
    commit(repo, {"intents/pipeline.intent": pipeline, "intents/report.intent": extra,
                  "intents/tenants.intent": edit(TENANTS, "tier: gold", "tier: silver")}, "everything")
    report = run_diff(repo)
    golden = Path(__file__).parent / "golden" / "diff"
    for fmt, suffix in (("text", "txt"), ("markdown", "md"), ("json", "json")):
        assert_golden(golden / f"intent_diff.{suffix}", render_report(report, fmt))


def test_what_the_render_target_creates(repo: git.Repo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Per added or changed intent, the objects the chosen target makes, in text, JSON and markdown."""
    commit(repo, {"intents/pipeline.intent": edit(PIPELINE, "cpu 32,", "cpu 48,")}, "bigger")
    monkeypatch.chdir(repo.working_tree_dir or ".")
    monkeypatch.setenv("INTENTC_CACHE_DIR", str(tmp_path / "cache"))
    Path("topo.yaml").write_text(TOPOLOGY)
    found = {}
    for target in ("device-plugin", "dra", "kueue"):
        res = runner.invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "-t", "topo.yaml",
                                  "--render-target", target, "-o", "json"])
        assert res.exit_code == 1, res.output
        doc = json.loads(res.stdout)
        assert doc["target"] == target
        found[target] = {c["intent"]: c["objects"] for c in doc["creates"]}
    # a training Job and the suspended steps of its fallback chain (docs/failure-fallback.md)
    steps = ["Job team-a/train", "Job team-a/train-fallback-chunk", "Job team-a/train-fallback-power"]
    assert found["device-plugin"] == {"train": steps}
    assert found["dra"] == {"train": ["ResourceClaimTemplate team-a/train-fallback-chunk-gpus",
                                      "ResourceClaimTemplate team-a/train-fallback-power-gpus",
                                      "ResourceClaimTemplate team-a/train-gpus", *steps]}
    assert found["kueue"] == {"train": ["Job team-a/train"]}
    res = runner.invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "-t", "topo.yaml",
                              "--render-target", "dra", "-o", "markdown"])
    assert "What `dra` creates:" in res.stdout
    assert "| `train` | `ResourceClaimTemplate team-a/train-fallback-chunk-gpus`, " in res.stdout
    res = runner.invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "--render-target", "dra"])
    assert "objects (dra):\n  train: Job team-a/train\n" in res.stdout, \
        "no topology: no plan, no device claim, no GPU fallback steps"
    res = runner.invoke(app, ["diff", "--base", "HEAD~1", "--render-target", "slurm"])
    assert res.exit_code == 2 and "unknown render target 'slurm'" in res.output
# --------------------------------------------------------------------------
# --format github: workflow annotations on the head-side positions
# --------------------------------------------------------------------------

def test_github_annotations(repo: git.Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    commit(repo, {"intents/pipeline.intent": edit(edit(PIPELINE, 'prep:1.0', 'prep:1.1'), 'gpus 8 x', 'gpus 16 x'),
                  "intents/serve.yaml": None}, "bump")
    report = run_diff(repo, topology=TOPOLOGY)
    lines = render_report(report, "github").splitlines()
    assert lines[0].startswith("::notice title=intentc diff::HEAD~1") and lines[0].endswith("HEAD: 1 removed, 2 changed")
    by_title = {line.split("title=")[1].split("::")[0]: line for line in lines[1:]}
    prep = by_title["intentc diff%3A intent prep changed"]
    assert prep.startswith("::notice file=intents/pipeline.intent,line=2,col=1,")
    assert "action.image: \"ghcr.io/acme/prep:1.0\" -> \"ghcr.io/acme/prep:1.1\"" in prep
    train = by_title["intentc diff%3A intent train changed"]
    assert train.startswith("::warning file=intents/pipeline.intent,line=11,")      # 16 GPUs: no node has them
    assert "constraints.gpus.count: 8 -> 16%0Aimpact capacity" in train
    unplaceable = by_title["intentc diff%3A train no longer placeable"]
    assert unplaceable.startswith("::warning file=intents/pipeline.intent,line=11,")
    serve = by_title["intentc diff%3A intent serve removed"]
    assert serve.startswith("::notice title=")            # nothing on the head side to annotate
    monkeypatch.chdir(repo.working_tree_dir or ".")
    res = runner.invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "-t", "topo.yaml", "-o", "github"])
    assert res.exit_code == 1 and res.stdout.splitlines()[1:] == lines[1:]      # the CLI labels add SHAs


def test_the_plans_are_made_with_the_seed_compile_is_given(repo: git.Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two equal nodes: the seed breaks the tie of where `train` goes.  The diff's plans
    # are made with the seed, so a placement it reports moved is one the compile moves.
    from intentc.diff.plan_diff import diff_plans
    from intentc.plan.planner import make_plan
    small = edit(PIPELINE, 'gpus 8 x "H100-80GB" within node', 'gpus 4 x "H100-80GB" within node')
    commit(repo, {"intents/pipeline.intent": small}, "shrink")
    root = Path(repo.working_tree_dir or ".")
    (root / "topo.yaml").write_text(TOPOLOGY)
    loaded, _ = load_topology(str(root / "topo.yaml"))
    assert loaded is not None
    _, base, head = diff_trees(tree(root, "HEAD~1"), tree(root, "HEAD"), loaded, None, jobs=1)

    def planned(seed: int) -> object:
        return diff_plans(make_plan(base.program, loaded, seed)[0], make_plan(head.program, loaded, seed)[0])
    seed = next(s for s in range(1, 50) if planned(s) != planned(0))
    report, _, _ = diff_trees(tree(root, "HEAD~1"), tree(root, "HEAD"), loaded, None, jobs=1, seed=seed)
    assert report.plan == planned(seed) != planned(0)
    monkeypatch.chdir(root)             # the command line passes its --seed on
    res = CliRunner().invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "--topology", "topo.yaml",
                                   "--seed", str(seed), "-o", "json", "--no-cache"])
    assert res.exit_code == 1, res.output
    assert json.loads(res.output)["plan"] == json.loads(render_report(report, "json"))["plan"]


NIGHTLY_RULE = """\
apiVersion: intentc.dev/v1alpha1
kind: Policy
metadata: {name: nightly}
spec:
  tag: nightly
  requires: [persistent-volume]
"""


def test_each_side_renders_with_its_own_revisions_tag_rules(repo: git.Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    # The head edits `train` (tagged nightly) and adds a repository rule for that tag:
    # what the head creates is what `compile` of the head renders, the rule's claim
    # included, and the base side (without the rule) renders without it.
    newer = edit(PIPELINE, "ghcr.io/acme/train:2.0", "ghcr.io/acme/train:2.1")
    commit(repo, {"intents/pipeline.intent": newer, "policies/nightly.yaml": NIGHTLY_RULE}, "nightly rule")
    monkeypatch.chdir(repo.working_tree_dir or ".")
    res = CliRunner().invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "-o", "json", "--no-cache"])
    assert res.exit_code == 1, res.output
    out = json.loads(res.output)
    train = next(c["objects"] for c in out["creates"] if c["intent"] == "train")
    assert any(o.startswith("PersistentVolumeClaim ") for o in train), train
    impact = next(i for i in out["impacts"] if i["intent"] == "train")
    assert any("+PersistentVolumeClaim" in r for r in impact["reasons"]), impact     # the base rendered none
    # the rule read from the revision, not from the working tree: gone there, still the head's
    (Path(repo.working_tree_dir or ".") / "policies" / "nightly.yaml").unlink()
    again = CliRunner().invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "-o", "json", "--no-cache"])
    assert json.loads(again.output)["creates"] == out["creates"]
    # and the working tree as the head has no rule now: no claim
    tree_head = CliRunner().invoke(app, ["diff", "--base", "HEAD~1", "-o", "json", "--no-cache"])
    train = next(c["objects"] for c in json.loads(tree_head.output)["creates"] if c["intent"] == "train")
    assert not any(o.startswith("PersistentVolumeClaim ") for o in train), train


def test_a_broken_rule_in_the_head_fails_the_diff_as_it_fails_compile(repo: git.Repo,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    commit(repo, {"policies/nightly.yaml": NIGHTLY_RULE.replace("persistent-volume", "persistent-volumes")}, "typo")
    monkeypatch.chdir(repo.working_tree_dir or ".")
    res = CliRunner().invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "--no-cache"])
    assert res.exit_code == 2, res.output
    assert "policies/nightly.yaml:" in res.stderr and "does not compile" in res.stderr


def test_the_plans_are_made_with_each_sides_tag_rules() -> None:
    # The same program on both sides; the head's rules pin j3 (no-repack), so the planner
    # may not move it to make room for j4 and places differently: the plan diff shows it.
    from intentc import ir
    from intentc.diff.plan_diff import diff_plans
    from intentc.diff.report import diff_compiled
    from intentc.diff.sides import Side
    from intentc.plan.planner import make_plan
    from intentc.policy import BUILTIN, Requirement, Rule
    from intentc.topology.load import LoadedTopology
    from intentc.topology.nvsmi import default_matrix

    nodes = tuple(ir.TopologyNode(n, 8, "H100-80GB", "80Gi", domains=(("zone", "z"), ("rack", "r1")))
                  for n in ("n1", "n2"))
    topo = LoadedTopology(ir.Topology("t", ("zone", "rack", "nvlink", "node"), nodes),
                          tuple((n.name, default_matrix(n.gpu_count, n.gpu_product)) for n in nodes))

    def job(name: str, gpus: int, sla: str, tags: tuple[str, ...] = ()) -> ir.Intent:
        return ir.Intent(name, ir.Trigger("push"), ir.Action("batch", "img"), ir.Context(ir.Ref("team-a"), tags),
                         ir.Constraints(gpus=ir.GpuRequest(gpus, within="node"), sla=sla, duration="1h"))
    program = ir.Program(intents=(job("j0", 6, "P1"), job("j1", 1, "P0"), job("j2", 3, "P2"),
                                  job("j3", 3, "P0", ("pinned",)), job("j4", 5, "P0")))
    pinned = BUILTIN.with_rules([Rule("pinned", (Requirement.NO_REPACK,))])
    base = Side("base", program, (), {}, {}, "b")
    head = Side("head", program, (), {}, {}, "h", pinned)
    expected = diff_plans(make_plan(program, topo)[0], make_plan(program, topo, policies=pinned)[0])
    assert not expected.empty, "the scenario places differently when j3 is pinned"
    assert diff_compiled(base, head, topo).plan == expected


def test_a_pull_request_that_changes_only_a_tag_rule_shows_the_rule_and_what_it_changes(
        repo: git.Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    # No declaration changes; the new rule gives `train` (tagged nightly) a claim: the
    # diff says so, in every format, and exits 1 as for any other change.
    commit(repo, {"policies/nightly.yaml": NIGHTLY_RULE}, "nightly rule")
    monkeypatch.chdir(repo.working_tree_dir or ".")
    runner = CliRunner()
    res = runner.invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "-o", "json", "--no-cache"])
    assert res.exit_code == 1, res.output
    out = json.loads(res.output)
    assert out["declarations"] == [] and out["changed"]
    assert out["rules"] == [{"tag": "nightly", "status": "added", "old": None, "new": "requires persistent-volume "
                             "(10Gi)", "head": {"file": "policies/nightly.yaml", "line": 5, "column": 8,
                                                "end_line": 5, "end_column": 15}}]
    assert out["impacts"] == [{"intent": "train", "impact": "restart", "changed": False, "reasons": [
        "tag rule nightly changed: objects replaced: +PersistentVolumeClaim team-a/train-state"]}]
    text = runner.invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "--no-cache"]).output
    assert "1 tag rule(s) changed" in text and "  + nightly: requires persistent-volume (10Gi)" in text
    assert "restart       train: tag rule nightly changed" in text
    md = runner.invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "-o", "markdown", "--no-cache"]).output
    assert "- added `nightly`: requires persistent-volume (10Gi)" in md and "`train`: **restart**" in md
    gh = runner.invoke(app, ["diff", "--base", "HEAD~1", "--head", "HEAD", "-o", "github", "--no-cache"]).output
    assert "::notice file=policies/nightly.yaml,line=5" in gh and "tag rule nightly added" in gh


def test_rules_compare_by_what_they_require_not_where_they_are_written() -> None:
    from intentc.diff.rules import RuleStatus, diff_rules
    from intentc.policy import BUILTIN, Requirement, Rule
    hipaa = Rule("hipaa", (Requirement.EXCLUSIVE_DOMAIN,), "HIPAA", origin="policies/a.yaml")
    moved = Rule("hipaa", (Requirement.EXCLUSIVE_DOMAIN,), "HIPAA", origin="policies/b.yaml")
    assert diff_rules(BUILTIN.with_rules([hipaa]), BUILTIN.with_rules([moved])) == ()
    stricter = Rule("stateful", (Requirement.NO_REPACK,), origin="policies/s.yaml")
    changes = diff_rules(BUILTIN.with_rules([hipaa]), BUILTIN.with_rules([stricter]))
    assert [(c.tag, c.status) for c in changes] == [("hipaa", RuleStatus.REMOVED), ("stateful", RuleStatus.CHANGED)]
    assert changes[1].old is not None and changes[1].old.startswith(
        "requires persistent-volume, disruption-budget, no-repack (10Gi)")
    assert changes[1].new == "requires no-repack"
