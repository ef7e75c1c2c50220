"""Organisation rules in CEL (intentc/policy/cel_*.py, docs/rules.md): loading, positions, evaluation,
the command line, the catalogue, the rendered admission policies and `intentc diff`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from golden_support import assert_golden
from intentc import ir
from intentc.frontend.dsl import parse
from intentc.frontend.sources import SourceFile
from intentc.plan.cel_check import evaluate
from intentc.plan.planner import make_plan
from intentc.policy.catalogue import Policies
from intentc.policy.cel_rules import CelRule, RuleMatch, RuleSeverity, compile_diagnostics, reads
from intentc.policy.load import policies_of
from intentc.topology.load import LoadedTopology
from intentc.topology.nvsmi import default_matrix

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "rules"

INTENTS = """\
tenant team-x { tier: gold }
tenant team-y { tier: silver  max_sla: P0 }

dataset raw { uri: "s3://acme-ml/raw" }
dataset elsewhere { uri: "gs://other/data" }

intent train-long {
  trigger: on push
  action: training image "ghcr.io/acme/train:1.0"
  context: tenant team-x
  constraints: gpus 8 within nvlink, duration 36h
  consumes: raw
}

intent train-short {
  trigger: on push
  action: training image "ghcr.io/acme/train:1.0"
  context: tenant team-x
  constraints: gpus 2, duration 12h
}

intent serve-p0 {
  trigger: on push
  action: serve image "ghcr.io/acme/serve:2.1" replicas 1 port 8000
  context: tenant team-y
  constraints: gpus 2 within node, sla P0
  consumes: elsewhere
}

intent tool {
  trigger: on push
  action: batch image "ghcr.io/acme/tool:latest"
  context: tenant team-y
}
"""

NO_LATEST = """\
apiVersion: intentc.dev/v1alpha1
kind: Policy
metadata: {name: org}
spec:
  rules:
    - name: no-latest-images
      expression: '!intent.image.endsWith(":latest")'
      message: images are pinned to a version
"""


def env() -> dict[str, str]:
    """The command as a user types it, importing this checkout's intentc (not an installed one)."""
    return {"INTENTC_CACHE_DIR": "", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT)}


def intentc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "intentc", *args], cwd=cwd, capture_output=True, text=True,
                          env=env())


def write_repo(tmp_path: Path, policies: dict[str, str], intents: str = INTENTS) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "intents").mkdir()
    (tmp_path / "intents" / "all.intent").write_text(intents)
    (tmp_path / "policies").mkdir()
    for name, text in policies.items():
        (tmp_path / "policies" / name).write_text(text)
    return tmp_path


def program() -> ir.Program:
    prog, diags = parse(SourceFile("intents/all.intent", INTENTS))
    assert not diags, diags
    return prog


def rules_of(text: str, name: str = "policies/org.yaml") -> tuple[Policies, list[Any]]:
    policies, diags, _ = policies_of([(name, text)])
    return policies, diags


def rule(expression: str, name: str = "r", severity: RuleSeverity = RuleSeverity.ERROR,
         match: RuleMatch = RuleMatch()) -> CelRule:
    return CelRule(name, expression, "m", severity, match)


def found(prog: ir.Program, *rules: CelRule, plan: Any = None) -> list[tuple[str, str]]:
    """(code, intent or rule named first in the message) of each finding."""
    out = []
    for d in evaluate(prog, rules, plan):
        m = re.search(r"intent '([^']+)'", d.message) or re.search(r"rule '([^']+)'", d.message)
        out.append((d.code, m.group(1) if m else ""))
    return sorted(out)


# -- what a rule reads ----------------------------------------------------------

def test_reads_finds_variables_fields_and_comprehension_variables() -> None:
    r = reads('intent.tags.exists(t, t == "x") && tenant.tier == "gold" && datasets.all(n, n != "")')
    assert r.roots == {"intent", "tenant", "datasets"} and r.intent_fields == {"tags"} and not r.unknown
    assert r.depth == 1 and not r.admissible
    assert reads('!intent.image.endsWith(":latest") && intent.kind == "serve"').admissible
    assert not reads("intent.image == intent.gpus.product").admissible          # gpus: not on the pod
    assert not reads('size(intent) > 0').admissible                             # the whole intent
    assert [t.text for t in reads('intnet.image == "x" || "intent" == y').unknown] == ["intnet", "y"]
    assert reads("[1].map(a, [2].map(b, [3].all(c, a + b + c > 0)))").depth == 3
    assert reads("placement == null").placement


def test_compile_errors_are_at_the_mistake_in_the_policy_file() -> None:
    text = NO_LATEST + """\
    - name: typo
      expression: intent.kind == "serve" && intnet.port > 1
      message: x
    - name: syntax
      expression: intent.kind == (
      message: x
    - name: deep
      expression: "[1].all(a, [2].all(b, [3].all(c, a < b)))"
      message: x
    - name: long
      expression: "%s"
      message: x
""" % ("true && " * 600 + "true")
    policies, diags = rules_of(text)
    got = [(d.code, d.span.line, d.span.column, d.message) for d in diags]
    assert got[0] == ("E1031", 10, 45, "rule 'typo': undeclared reference to 'intnet' (did you mean \"intent\"?)")
    assert got[1][:3] == ("E1031", 13, 35) and "does not compile: Syntax error" in got[1][3]
    assert got[2][:3] == ("E1031", 16, 19) and "nested 3 deep" in got[2][3]
    assert got[3][:2] == ("E1031", 19) and "longer than the 4096 allowed" in got[3][3]
    assert [r.name for r in policies.cel] == ["no-latest-images", "typo", "syntax", "deep", "long"]
    assert found(program(), *policies.cel) == [("E1030", "tool")]     # only the rule that compiles is evaluated


def test_a_rule_name_given_twice_and_misspelt_keys() -> None:
    text = NO_LATEST + """\
    - name: no-latest-images
      expresion: "true"
      message: again
---
apiVersion: intentc.dev/v1alpha1
kind: Polcy
metadata: {name: x}
spec: {rules: [{name: a, expression: "true", message: m}]}
"""
    _, diags = rules_of(text)
    got = [(d.code, d.span.line, d.span.column, d.message) for d in diags]
    assert ("E0212", 10, 7, 'unknown property "expresion" in rules[1] (did you mean "expression"?)') in got
    assert ("E0204", 14, 7, 'unknown kind "Polcy" (did you mean "Policy"?)') in got
    again = NO_LATEST + NO_LATEST.split("rules:\n")[1]
    _, diags = rules_of(again)
    (d,) = diags
    assert (d.code, d.span.line, d.message) == ("E0304", 9, "rule 'no-latest-images' is declared twice")
    assert d.related[0].span.line == 6


def test_a_tag_rule_and_organisation_rules_share_a_file() -> None:
    both = NO_LATEST.replace("spec:\n", "spec:\n  tag: hipaa\n  requires: [exclusive-domain]\n")
    policies, diags = rules_of(both)
    assert not diags and policies.rule("hipaa") is not None and len(policies.cel) == 1
    _, diags = rules_of(NO_LATEST.replace("spec:\n", "spec:\n  tag: hipaa\n"))
    assert [(d.code, d.message) for d in diags] == [("E0210", 'missing required property "requires" in spec')]


# -- evaluation -----------------------------------------------------------------

def test_evaluation_positions_severity_and_match() -> None:
    prog = program()
    duration = rule("intent.duration_seconds != null && intent.duration_seconds <= 86400", "day",
                    match=RuleMatch(("team-x",), ("training",)))
    (d,) = evaluate(prog, [duration])
    assert (d.code, d.span.line, d.span.column, d.message) == (
        "E1030", 11, 47, "intent 'train-long' breaks rule 'day': m")
    assert d.related[0].message == "rule 'day' is declared here"
    warn = rule('intent.image.startsWith("docker.io/")', "hub", RuleSeverity.WARNING)
    assert found(prog, warn) == [("W1030", i) for i in ("serve-p0", "tool", "train-long", "train-short")]
    assert found(prog, rule("true", match=RuleMatch(kinds=("serve",)))) == []


def test_errors_at_evaluation_are_diagnostics_never_tracebacks() -> None:
    prog = program()
    missing = rule("intent.settings.nope == 1", "missing")
    typed = rule("intent.retries <= 3", "typed")           # null <= 3: no such overload
    number = rule("intent.gpus.count", "number")
    regex = rule('intent.image.matches("(")', "regex")
    for r, why in ((missing, "no such key: nope"), (typed, "No such overload"), (number, "evaluated to an int"),
                   (regex, "not a valid regex")):
        diags = evaluate(prog, [r])
        assert {d.code for d in diags} == {"E1032"} and len(diags) == 4, (r.name, diags)
        assert why in diags[0].message, diags[0].message


def test_a_rule_past_its_budget_stops_with_the_intents_it_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("intentc.plan.cel_check.RULE_BUDGET_S", -1.0)
    (d,) = evaluate(program(), [rule("true", "slow")])
    assert d.code == "E1033" and "3 intent(s) were not checked (first: 'train-short')" in d.message


def loaded() -> LoadedTopology:
    nodes = tuple(ir.TopologyNode(f"n{i}", 8, "H100-80GB", "80Gi", domains=(("nvlink", f"nvl-{i}"), ("node", f"n{i}")))
                  for i in range(3))
    topo = ir.Topology("t", levels=("nvlink", "node"), nodes=nodes)
    return LoadedTopology(topo, tuple((n.name, default_matrix(8, n.gpu_product)) for n in nodes))


def test_placement_rules_wait_for_a_plan_and_run_in_the_planner() -> None:
    prog = program()
    small = rule("placement == null || placement.gpus <= 2", "small")
    assert evaluate(prog, [small]) == []                       # no plan: not evaluated
    policies = Policies(cel=(small,))
    _, diags = make_plan(prog, loaded(), policies=policies)    # policy.check.check_plan evaluates it
    assert [(d.code, d.message) for d in diags if d.code.endswith("1030")] == [
        ("E1030", "intent 'train-long' breaks rule 'small': m")]


def test_every_field_the_docs_list_is_in_the_view() -> None:
    from intentc.plan.cel_view import Views
    doc = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    row = re.search(r"^\| `intent` \| (.+) \|$", doc, re.M)
    assert row is not None
    view = Views(program(), {}).of(program().intents[0])
    names = set(re.findall(r"`([a-z_]+)`", row.group(1)))
    flat = set(view["intent"]) | {k for v in view["intent"].values() if isinstance(v, dict) for k in v}
    assert names == flat


# -- the catalogue in docs/rules.md ----------------------------------------------

def catalogue() -> Policies:
    doc = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    block = re.search(r"## The catalogue.*?```yaml\n(.*?)```", doc, re.S)
    assert block is not None
    policies, diags = rules_of(block.group(1), "docs/rules.md")
    assert not diags, diags
    return policies


CATALOGUE_FAILS = {
    "training-duration-team-x": ["train-long"],
    "p0-within-nvlink": ["serve-p0"],
    "no-latest-images": ["tool"],
    "p0-gold-tenants": ["serve-p0"],
    "datasets-in-acme-buckets": ["serve-p0"],
    "pcie-gangs-stay-small": [],                  # a placement rule: see the next test
}


@pytest.mark.parametrize("name", sorted(CATALOGUE_FAILS))
def test_each_catalogue_rule_passes_and_fails_what_it_says(name: str) -> None:
    (r,) = [r for r in catalogue().cel if r.name == name]
    assert not compile_diagnostics(r)
    assert [i for _, i in found(program(), r)] == CATALOGUE_FAILS[name]


def test_the_catalogue_placement_rule_judges_the_plan() -> None:
    (r,) = [r for r in catalogue().cel if r.name == "pcie-gangs-stay-small"]
    prog = program()
    plan, _ = make_plan(prog, loaded(), policies=Policies(cel=(r,)))
    pcie = {p.intent for p in plan.placements if p.interconnect == "pcie" and p.gpu_count > 2}
    nvlink = {p.intent for p in plan.placements if p.interconnect == "nvlink"}
    assert [i for _, i in found(prog, r, plan=plan)] == sorted(pcie) and "train-long" in nvlink
    ungrouped = dataclasses_replace_interconnect(plan, "train-long", "pcie")
    assert [(c, i) for c, i in found(prog, r, plan=ungrouped)] == [("W1030", "train-long")]


def dataclasses_replace_interconnect(plan: Any, intent: str, interconnect: str) -> Any:
    import dataclasses
    placements = tuple(dataclasses.replace(p, interconnect=interconnect) if p.intent == intent else p
                       for p in plan.placements)
    return dataclasses.replace(plan, placements=placements)


def test_only_the_rule_reading_what_a_pod_shows_is_rendered_for_the_cluster() -> None:
    from intentc.render.admission import admissible
    assert [r.name for r in admissible(catalogue().cel)] == ["no-latest-images"]


# -- the command line -------------------------------------------------------------

def test_check_reports_a_failing_intent_at_its_line_with_the_rule_as_a_note(tmp_path: Path) -> None:
    repo = write_repo(tmp_path, {"org.yaml": NO_LATEST})
    out = intentc("check", "intents/", cwd=repo)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert_golden(GOLDEN / "check-no-latest.txt", out.stdout)
    assert "intents/all.intent:32:23: error[E1030]: intent 'tool' breaks rule 'no-latest-images'" in out.stdout
    assert "policies/org.yaml:6:13: note: rule 'no-latest-images' is declared here" in out.stdout
    gh = intentc("check", "intents/", "-o", "github", cwd=repo)
    assert "::error file=intents/all.intent,line=32,col=23" in gh.stdout


def test_check_without_rules_stays_on_the_remembered_summary_and_passes(tmp_path: Path) -> None:
    repo = write_repo(tmp_path, {})
    fixed = INTENTS.replace("tool:latest", "tool:1.0")
    (repo / "intents" / "all.intent").write_text(fixed)
    assert intentc("check", "intents/", cwd=repo).returncode == 0
    (repo / "policies" / "org.yaml").write_text(NO_LATEST)
    out = intentc("check", "intents/", cwd=repo)
    assert out.returncode == 0 and out.stdout.startswith("ok: 4 intents"), out.stdout + out.stderr


def test_a_rule_that_does_not_compile_fails_check_at_its_position(tmp_path: Path) -> None:
    broken = NO_LATEST.replace("'!intent.image.endsWith(\":latest\")'", "'!intent.image.endsWith(\":latest\"'")
    repo = write_repo(tmp_path, {"org.yaml": broken})
    out = intentc("check", "intents/", cwd=repo)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert_golden(GOLDEN / "check-syntax.txt", out.stdout)
    assert "policies/org.yaml:7:" in out.stdout and "error[E1031]: rule 'no-latest-images' does not compile" \
        in out.stdout


def test_compile_renders_the_admission_policy_and_fails_the_intent(tmp_path: Path) -> None:
    repo = write_repo(tmp_path, {"org.yaml": NO_LATEST})
    (repo / "cluster.yaml").write_text(TOPOLOGY)
    out = intentc("compile", "intents/", "--topology", "cluster.yaml", "-d", "out", "--commit", "a" * 40,
                  cwd=repo)
    assert out.returncode == 1, out.stderr
    assert "intents/all.intent:32:23: error[E1030]" in out.stdout
    manifests = repo / "out" / "manifests"
    policy = manifests / "02-validatingadmissionpolicy-intentc-rule-no-latest-images.yaml"
    binding = manifests / "02-validatingadmissionpolicybinding-intentc-rule-no-latest-images.yaml"
    assert policy.is_file() and binding.is_file(), sorted(p.name for p in manifests.iterdir())
    assert_golden(GOLDEN / "vap-no-latest-images.yaml", policy.read_text() + "---\n" + binding.read_text())


TOPOLOGY = """\
apiVersion: intentc.dev/v1alpha1
kind: Topology
metadata: {name: t}
spec:
  levels: [nvlink, node]
  nodes:
    - {name: a1, gpu: {product: H100-80GB, count: 8, memory: 80Gi}, domains: {nvlink: nvl-a}}
    - {name: a2, gpu: {product: H100-80GB, count: 8, memory: 80Gi}, domains: {nvlink: nvl-b}}
"""


def test_admission_objects_are_valid_kubernetes_objects() -> None:
    from kube_schema import validate_manifest
    from intentc.render.admission import admission_objects, on_the_cluster
    policies, _ = rules_of(NO_LATEST.replace("message: images", "match: {tenants: [team-y], kinds: [batch]}\n"
                                             "      severity: warning\n      message: images"))
    policy, binding = admission_objects(policies.cel)
    for body in (policy, binding):
        assert validate_manifest(body) == [], body
    assert binding["spec"]["validationActions"] == ["Warn", "Audit"]
    assert [c["name"] for c in policy["spec"]["matchConditions"]] == ["tenants", "kinds"]
    assert on_the_cluster('intent.image != "" && [1].all(x, x > 0) && "intent" != intent.name') == \
        'variables.intent.image != "" && [1].all(x, x > 0) && "intent" != variables.intent.name'


# -- intentc diff ------------------------------------------------------------------

def test_diff_lists_a_changed_rule_and_the_intents_it_newly_fails() -> None:
    from intentc.diff.cel_diff import diff_cel_rules
    from intentc.diff.rules import RuleStatus
    prog = program()
    base, _ = rules_of(NO_LATEST)
    moved, _ = rules_of("# a comment moves it down\n" + NO_LATEST, "policies/other.yaml")
    assert diff_cel_rules(base, moved, prog, prog) == ()                     # where it is written: no change
    stricter, _ = rules_of(NO_LATEST.replace("'!intent.image.endsWith(\":latest\")'",
                                             "'!intent.image.endsWith(\":latest\") && intent.kind != \"serve\"'"))
    (c,) = diff_cel_rules(base, stricter, prog, prog)
    assert (c.name, c.status, [f.intent for f in c.newly_fails]) == ("no-latest-images", RuleStatus.CHANGED,
                                                                     ["serve-p0"])
    assert (c.newly_fails[0].code, c.newly_fails[0].span.line) == ("E1030", 24)
    (gone,) = diff_cel_rules(stricter, Policies(), prog, prog)
    assert gone.status is RuleStatus.REMOVED and gone.newly_fails == ()


def test_diff_command_shows_the_rule_change(tmp_path: Path) -> None:
    import git
    from git_support import commit
    repo = git.Repo.init(tmp_path / "repo")
    root = Path(repo.working_tree_dir or ".")
    commit(repo, {"intents/all.intent": INTENTS, "policies/org.yaml": NO_LATEST}, "base")
    commit(repo, {"policies/org.yaml": NO_LATEST.replace("'!intent.image.endsWith(\":latest\")'",
                                                         "'intent.image.contains(\"/acme/train\")'")}, "tighter")
    out = intentc("diff", "--base", "HEAD~1", "--head", "HEAD", "--no-cache", cwd=root)
    assert out.returncode == 1, out.stderr
    assert_golden(GOLDEN / "diff-rule.txt", re.sub(r"\([0-9a-f]{12}\)", "(SHA)", out.stdout))
    data = json.loads(intentc("diff", "--base", "HEAD~1", "--head", "HEAD", "--no-cache", "-o", "json",
                              cwd=root).stdout)
    (c,) = data["cel_rules"]
    assert [f["intent"] for f in c["newly_fails"]] == ["serve-p0"] and data["declarations"] == []


def test_a_context_holds_only_what_the_rules_read() -> None:
    from intentc.plan.cel_check import needs
    from intentc.plan.cel_view import Views
    prog = program()
    together = needs([rule('intent.image != "" && tenant != null && tenant.tier == "gold"'),
                      rule("intent.gpus.count < 9")])
    assert Views(prog, None, together).of(prog.intents[0]) == {
        "intent": {"image": "ghcr.io/acme/train:1.0",
                   "gpus": {"count": 8, "product": None, "memory": None, "within": "nvlink", "prefer": None}},
        "tenant": {"tier": "gold"}}
    whole = needs([rule("size(intent.tags) == 0"), rule('[intent].all(i, i.name != "")')])
    assert set(Views(prog, None, whole).of(prog.intents[0])["intent"]) >= {"name", "tags", "settings"}


def test_check_with_a_topology_evaluates_placement_rules(tmp_path: Path) -> None:
    spread = """\
apiVersion: intentc.dev/v1alpha1
kind: Policy
metadata: {name: spread}
spec:
  rules:
    - name: one-node
      expression: placement == null || size(placement.nodes) == 1
      message: an intent runs on one node
      severity: warning
"""
    wide = INTENTS.replace("gpus 8 within nvlink, duration 36h", "gpus 12, duration 12h")
    repo = write_repo(tmp_path, {"spread.yaml": spread}, wide.replace("tool:latest", "tool:1.0"))
    (repo / "cluster.yaml").write_text(TOPOLOGY)
    plain = intentc("check", "intents/", cwd=repo)
    assert plain.returncode == 0, plain.stdout         # no plan: the placement rule waits for one
    planned = intentc("check", "intents/", "--topology", "cluster.yaml", "-o", "json", cwd=repo)
    found = [(d["code"], d["message"]) for d in json.loads(planned.stdout) if d["code"] == "W1030"]
    assert found == [("W1030", "intent 'train-long' breaks rule 'one-node': an intent runs on one node")]
