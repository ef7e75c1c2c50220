"""`intentc compile`: outputs on disk, byte-stability, commit stamping, failure modes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import git
import pytest
import yaml
from typer.testing import CliRunner

from intentc.cli import app
from intentc.frontend.sources import OUTPUT_MARKER
from intentc.pipeline import CommitError, compile_paths, resolve_commit
from tests.kube_schema import validate_manifest
from intentc.plan.jsonio import plan_to_json

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "repo"
EXAMPLE_INTENTS = ROOT / "intents"
EXAMPLE_TOPOLOGY = ROOT / "examples" / "topologies" / "cluster.yaml"
SHA = "0123456789abcdef0123456789abcdef01234567"
runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, list(args))
    return res.exit_code, res.output


def tree(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def make_repo(tmp: Path) -> tuple[git.Repo, Path]:
    work = tmp / "repo"
    shutil.copytree(FIXTURE, work)
    repo = git.Repo.init(work)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "test").set_value("user", "email", "test@example.com")
    repo.index.add(["intents/tenants.intent", "intents/pipeline.intent", "clusters/small.yaml"])
    repo.index.commit("intents")
    return repo, work


@pytest.mark.skipif(not EXAMPLE_TOPOLOGY.exists(), reason="example repository not present")
def test_compile_example_repository_is_byte_stable_and_schema_valid(tmp_path: Path) -> None:
    outs = []
    for n in (1, 2):
        out = tmp_path / f"out{n}"
        code, output = run("compile", str(EXAMPLE_INTENTS), "--topology", str(EXAMPLE_TOPOLOGY),
                           "--out-dir", str(out), "--commit", SHA)
        assert code == 0, output
        outs.append(tree(out))
    assert outs[0] == outs[1]
    files = outs[0]
    assert {"plan.json", "graph.json"} <= set(files)
    manifests = {k: v for k, v in files.items() if k.startswith("manifests/") and k.endswith(".yaml")}
    assert len(manifests) > 10
    for name, text in manifests.items():
        body = yaml.safe_load(text)
        assert validate_manifest(body) == [], name
        assert body["metadata"]["annotations"]["intentc.dev/commit-sha"] == SHA
    graph = json.loads(files["graph.json"])
    assert graph and isinstance(graph, dict)


def test_compile_writes_plan_graph_and_one_file_per_object(tmp_path: Path) -> None:
    out = tmp_path / "build"
    code, output = run("compile", str(FIXTURE / "intents"), "-t", str(FIXTURE / "clusters/small.yaml"),
                       "-d", str(out), "--commit", SHA)
    assert code == 0, output
    result = compile_paths([str(FIXTURE / "intents")], str(FIXTURE / "clusters/small.yaml"), SHA)
    assert result.plan is not None and result.rendered is not None
    assert (out / "plan.json").read_text() == plan_to_json(result.plan)
    names = sorted(p.name for p in (out / "manifests").iterdir() if p.name != "Kustomization")
    assert len(names) == len(result.rendered.manifests)
    assert "05-job-tn-alpha-train.yaml" in names and "00-namespace-tn-alpha.yaml" in names
    assert "indexed" in output, "the gang-mode choice is reported"


def test_compile_refuses_an_unsupported_kubernetes(tmp_path: Path) -> None:
    out = tmp_path / "build"
    code, output = run("compile", str(FIXTURE / "intents"), "-t", str(FIXTURE / "clusters/small.yaml"),
                       "-d", str(out), "--commit", SHA, "--kube-version", "1.20")
    assert code == 2 and "supports 1.33 and later" in output, output
    assert not out.exists()
    code, output = run("compile", str(FIXTURE / "intents"), "-t", str(FIXTURE / "clusters/small.yaml"),
                       "-d", str(out), "--commit", SHA, "--kube-version", "1.37")
    assert code == 0, output
    train = yaml.safe_load((out / "manifests" / "05-job-tn-alpha-train.yaml").read_text())
    assert train["spec"]["completionMode"] == "Indexed"


def test_commit_comes_from_git_head(tmp_path: Path) -> None:
    repo, work = make_repo(tmp_path)
    out = tmp_path / "build"
    code, output = run("compile", str(work / "intents"), "-t", str(work / "clusters/small.yaml"), "-d", str(out))
    assert code == 0, output
    ns = yaml.safe_load((out / "manifests" / "00-namespace-tn-alpha.yaml").read_text())
    assert ns["metadata"]["annotations"]["intentc.dev/commit-sha"] == repo.head.commit.hexsha
    assert resolve_commit([str(work / "intents" / "pipeline.intent")]) == repo.head.commit.hexsha


def test_no_repository_and_no_commit_is_a_usage_error(tmp_path: Path) -> None:
    work = tmp_path / "plain"
    shutil.copytree(FIXTURE, work)
    code, output = run("compile", str(work / "intents"), "-t", str(work / "clusters/small.yaml"),
                       "-d", str(tmp_path / "out"))
    assert code == 2
    assert "not inside a git repository" in output and "--commit" in output
    assert not (tmp_path / "out").exists()
    with pytest.raises(CommitError):
        resolve_commit([str(work)], "abc123")
    code, output = run("compile", str(work / "intents"), "-t", str(work / "clusters/small.yaml"),
                       "-d", str(tmp_path / "out"), "--commit", "HEAD")
    assert code == 2 and "40-hex" in output


def test_compile_errors_write_nothing(tmp_path: Path) -> None:
    """An error no single tenant owns (here a syntax error: the declaration it
    broke is lost, so is its tenant) stops the whole compile."""
    out = tmp_path / "build"
    code, _ = run("compile", str(FIXTURE / "intents"), "-t", str(FIXTURE / "clusters/small.yaml"),
                  "-d", str(out), "--commit", SHA)
    assert code == 0
    before = tree(out)
    bad = tmp_path / "bad"
    shutil.copytree(FIXTURE / "intents", bad)
    text = (bad / "pipeline.intent").read_text().replace("tenant tn-beta\n  constraints: cpu 1",
                                                         "tenant tn-beta\n  constraints: cpu 1 }}")
    (bad / "pipeline.intent").write_text(text)
    code, output = run("compile", str(bad), "-t", str(FIXTURE / "clusters/small.yaml"), "-d", str(out),
                       "--commit", SHA)
    assert code == 1
    assert "E01" in output and "pipeline.intent" in output
    assert tree(out) == before, "a failed compile leaves the previous outputs untouched"
    assert not [p for p in out.iterdir() if p.name.startswith(".") and p.name != OUTPUT_MARKER], \
        "no staging leftovers"


def test_bad_flags_are_usage_errors(tmp_path: Path) -> None:
    base = ["compile", str(FIXTURE / "intents"), "-t", str(FIXTURE / "clusters/small.yaml"),
            "-d", str(tmp_path / "o"), "--commit", SHA]
    code, output = run(*base, "--kube-version", "latest")
    assert code == 2 and "not a Kubernetes version" in output
    code, output = run(*base, "--render-target", "slurm")
    assert code == 2 and "available: device-plugin, dra, kueue" in output
    code, output = run(*base, "--render-target", "dra")
    assert code == 2 and "'dra' needs Kubernetes 1.34 or later" in output
    code, output = run("compile", str(FIXTURE / "intents"), "-t", str(tmp_path / "missing.yaml"),
                       "-d", str(tmp_path / "o"), "--commit", SHA)
    assert code == 2
    assert not (tmp_path / "o").exists()


def test_recompile_replaces_stale_manifests(tmp_path: Path) -> None:
    out = tmp_path / "build"
    (out / "manifests").mkdir(parents=True)
    (out / "manifests" / "99-job-gone-old.yaml").write_text("stale\n")
    (out / "README").write_text("mine\n")
    code, _ = run("compile", str(FIXTURE / "intents"), "-t", str(FIXTURE / "clusters/small.yaml"),
                  "-d", str(out), "--commit", SHA)
    assert code == 0
    assert not (out / "manifests" / "99-job-gone-old.yaml").exists()
    assert (out / "README").read_text() == "mine\n", "files intentc does not own are left alone"


def test_compile_dot_twice_with_the_topology_in_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`intentc compile . -o build`, twice: the one Topology document in the repository is the
    default --topology, and the second run does not read the first one's output."""
    import shutil

    shutil.copytree(FIXTURE / "intents", tmp_path / "intents")
    shutil.copy(FIXTURE / "clusters" / "small.yaml", tmp_path / "cluster.yaml")
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        code, output = run("compile", ".", "-d", "build", "--commit", SHA)
        assert code == 0, output
    assert (tmp_path / "build" / "plan.json").is_file()
    (tmp_path / "other.yaml").write_text((tmp_path / "cluster.yaml").read_text().replace("name: small", "name: other"))
    code, output = run("compile", ".", "-d", "build", "--commit", SHA)
    assert code == 2 and "--topology is needed: 2 Topology documents" in output, output


def test_kustomization_lists_the_manifests_in_apply_order(tmp_path: Path) -> None:
    """manifests/Kustomization names every manifest file, in the NN- order `intentc apply` and
    `kubectl apply -f` use, as `files()` has it; rewriting gives the same bytes."""
    from intentc.pipeline import write_outputs
    from intentc.render.output import manifest_names

    result = compile_paths([str(FIXTURE / "intents")], str(FIXTURE / "clusters/small.yaml"), SHA)
    assert result.rendered is not None
    written = write_outputs(result, tmp_path / "a")
    assert "manifests/Kustomization" in written
    text = (tmp_path / "a" / "manifests" / "Kustomization").read_text()
    doc = yaml.safe_load(text)
    files = sorted(p.name for p in (tmp_path / "a" / "manifests").glob("*.yaml"))
    assert doc == {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                   "resources": manifest_names(result.rendered.manifests), "sortOptions": {"order": "fifo"}}
    assert sorted(doc["resources"]) == files
    steps = [int(n.split("-", 1)[0]) for n in doc["resources"]]
    assert steps == sorted(steps) and steps[0] == 0 < steps[-1]
    assert result.files()["manifests/Kustomization"] == text
    write_outputs(result, tmp_path / "b")
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
    # no YAML suffix: `kubectl apply -f manifests/` takes .yaml/.yml/.json files only and skips it
    assert not any(n.endswith((".yaml", ".yml", ".json")) for n in written if "Kustomization" in n)


def test_kustomization_follows_a_recompile(tmp_path: Path) -> None:
    """A manifest that is no longer produced leaves the Kustomization with the directory."""
    from intentc.pipeline import write_outputs

    out = tmp_path / "build"
    (out / "manifests").mkdir(parents=True)
    (out / "manifests" / "99-job-gone-old.yaml").write_text("stale\n")
    result = compile_paths([str(FIXTURE / "intents")], str(FIXTURE / "clusters/small.yaml"), SHA)
    write_outputs(result, out)
    listed = yaml.safe_load((out / "manifests" / "Kustomization").read_text())["resources"]
    assert "99-job-gone-old.yaml" not in listed
    assert sorted(listed) == sorted(p.name for p in (out / "manifests").glob("*.yaml"))
