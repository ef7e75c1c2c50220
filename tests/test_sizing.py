"""`batch: auto` sized at plan time (plan/batch_size.py): the rule, its inputs, its outputs."""

from __future__ import annotations

import json
from pathlib import Path

from intentc import ir
from intentc.frontend.dsl import parse
from intentc.frontend.sources import SourceFile
from intentc.plan.batch_size import human_bytes, size_batches
from intentc.plan.html import render_html
from intentc.plan.jsonio import plan_from_json, plan_to_json
from intentc.plan.planner import make_plan
from intentc.plan.text import render_text
from intentc.render import render
from intentc.topology.load import LoadedTopology
from intentc.topology.nvsmi import default_matrix

GiB = 2**30


def program_of(text: str) -> ir.Program:
    prog, diags = parse(SourceFile("t.intent", text))
    assert not [d for d in diags if d.severity.value == "error"], diags
    return prog


def embed(settings: str, gpus: str = '8 x "H100-80GB"', extra: str = "") -> str:
    return f"""
tenant team-a {{ tier: gold }}
intent embed {{
  trigger: on push
  action: inference model "llama3-8b" image "vllm:0.6" {{
    {settings}
  }}
  context: tenant team-a
  constraints: gpus {gpus}, duration 1h{extra}
}}
"""


def topology(*nodes: tuple[str, str, str]) -> LoadedTopology:
    """(name, product, memory per GPU) → 8-GPU nodes."""
    made = tuple(ir.TopologyNode(n, 8, product, memory, domains=(("node", n),)) for n, product, memory in nodes)
    topo = ir.Topology("t", ("zone", "rack", "nvlink", "node"), made)
    return LoadedTopology(topo, tuple((n.name, default_matrix(8, n.gpu_product)) for n in made))


H100 = topology(("h1", "H100-80GB", "80Gi"))


def test_the_rule_by_hand() -> None:
    # 8 × 80Gi − 16Gi = 624Gi = 4992 slots of 128Mi; × 1024/4096 = 1248; clamped to 256
    prog = program_of(embed("batch: auto(max 256)\n    seq_len: 4096\n    model_memory: 16Gi"))
    plan, diags = make_plan(prog, H100)
    assert not diags
    (b,) = plan.batches
    assert (b.intent, b.size, b.max, b.estimate) == ("embed", 256, 256, 1248)
    assert "624Gi free" in b.derivation and "4992.0 slots" in b.derivation and "→ 256 (max 256)" in b.derivation


def test_kv_reuse_above_threshold_multiplies_by_1_8_and_seq_len_scales() -> None:
    base = "batch: auto\n    seq_len: 8192\n    model_memory: 16Gi\n    kv_cache: retain"
    plain, _ = make_plan(program_of(embed(base)), H100)
    reused, _ = make_plan(program_of(embed(base + "\n    kv_reuse: 0.8")), H100)
    at_threshold, _ = make_plan(program_of(embed(base + "\n    kv_reuse: 0.7")), H100)
    assert plain.batches[0].size == 4992 * 1024 // 8192 == 624
    assert reused.batches[0].size == int(4992 * 1.8 * 1024 / 8192) == 1123
    assert at_threshold.batches[0].size == 624       # "above 0.7": 0.7 itself does not count


def test_parameters_times_precision_give_the_weights() -> None:
    # 70B × 1 B (fp8) = 65.2Gi on 2 × 80Gi: (160Gi − 70e9 B) / 128Mi = 758.5 slots
    prog = program_of(embed("batch: auto\n    parameters: 70B\n    precision: fp8", gpus='2 x "H100-80GB"'))
    plan, diags = make_plan(prog, H100)
    assert not diags
    expected = (2 * 80 * GiB - 70 * 10**9) // (128 * 2**20)
    assert plan.batches[0].size == expected == 758
    assert "70B parameters × 1 B (fp8)" in plan.batches[0].derivation


def test_the_batch_follows_the_placement() -> None:
    prog = program_of(embed("batch: auto\n    model_memory: 16Gi", gpus="1"))
    on_h100, _ = make_plan(prog, H100)
    on_a100, _ = make_plan(prog, topology(("a1", "A100-40GB", "40Gi")))
    assert on_h100.batches[0].size == (80 - 16) * 8 == 512
    assert on_a100.batches[0].size == (40 - 16) * 8 == 192
    assert "A100-40GB" in on_a100.batches[0].derivation


def test_weights_that_do_not_fit_are_an_error_at_the_field() -> None:
    prog = program_of(embed("batch: auto\n    model_memory: 200Gi", gpus="2"))
    _, diags = make_plan(prog, H100)
    (d,) = diags
    assert d.code == "E1010" and "do not fit" in d.message
    assert (d.span.line, d.span.column) == (7, 19)       # the value of model_memory


def test_undeclared_model_size_is_a_warning_and_batch_1() -> None:
    prog = program_of(embed("batch: auto(max 64)"))
    plan, diags = make_plan(prog, H100)
    assert [d.code for d in diags] == ["W1001"]
    assert (diags[0].span.line, diags[0].span.column) == (6, 12)
    assert plan.batches[0].size == 1 and plan.batches[0].estimate is None


def test_node_without_gpu_memory_is_a_warning() -> None:
    prog = program_of(embed("batch: auto\n    model_memory: 1Gi", gpus="1"))
    _, diags = make_plan(prog, topology(("x1", "H100-80GB", "")))
    assert [d.code for d in diags] == ["W1001"] and "declares no GPU memory" in diags[0].message


def test_fixed_batches_are_not_sized() -> None:
    prog = program_of(embed("batch: 32\n    model_memory: 16Gi"))
    plan, _ = make_plan(prog, H100)
    assert plan.batches == ()


def test_serve_sizes_per_replica() -> None:
    text = embed("batch: auto\n    model_memory: 16Gi", gpus="4").replace("inference", "serve replicas 2")
    plan, _ = make_plan(program_of(text), H100)
    assert plan.batches[0].size == (2 * 80 - 16) * 8          # 2 GPUs per replica


def test_plan_outputs_show_the_number_and_its_derivation() -> None:
    prog = program_of(embed("batch: auto(max 256)\n    seq_len: 4096\n    model_memory: 16Gi"))
    plan, _ = make_plan(prog, H100)
    doc = json.loads(plan_to_json(plan))
    assert doc["batches"] == [{"intent": "embed", "size": 256, "max": 256, "estimate": 1248,
                               "derivation": plan.batches[0].derivation}]
    assert plan_from_json(plan_to_json(plan)) == plan
    text = render_text(plan, width=200)
    assert "Batch sizes" in text and "1248" in text
    html = render_html(plan, H100.topology)
    assert "Batch sizes" in html and "624Gi free" in html


def test_plan_json_validates_against_its_schema() -> None:
    import jsonschema
    schema = json.loads((Path(__file__).parents[1] / "schemas" / "plan.schema.json").read_text())
    prog = program_of(embed("batch: auto(max 256)\n    model_memory: 16Gi"))
    plan, _ = make_plan(prog, H100)
    jsonschema.validate(json.loads(plan_to_json(plan)), schema)


def test_rendered_env_carries_the_number() -> None:
    prog = program_of(embed("batch: auto(max 256)\n    seq_len: 4096\n    model_memory: 16Gi"))
    plan, _ = make_plan(prog, H100)
    r = render(prog, plan, "a" * 40)
    job = next(m.body for m in r.manifests if m.ref.kind == "Job" and m.ref.name == "embed")
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["INTENTC_BATCH"] == "256"


def test_size_batches_is_pure_over_its_inputs() -> None:
    prog = program_of(embed("batch: auto\n    model_memory: 16Gi", gpus="1"))
    plan, _ = make_plan(prog, H100)
    again, diags = size_batches(prog.intents, plan.placements, H100.topology)
    assert again == plan.batches and not diags


def test_human_bytes() -> None:
    assert human_bytes(80 * GiB) == "80Gi"
    assert human_bytes(624 * GiB) == "624Gi"
    assert human_bytes(3 * 2**40 // 2) == "1.5Ti"
    assert human_bytes(512) == "512B"


# -- the decision table (intentc/ir/tolerance.py, plan/strategy.py) ---------------

def test_allowed_precisions_follow_tolerance_and_sla() -> None:
    from intentc.ir.tolerance import allowed_precisions
    full = ("fp32", "tf32", "bf16", "fp16")
    assert allowed_precisions("P2", 0.995) == full
    assert allowed_precisions("P2", 0.99) == (*full, "fp8")
    assert allowed_precisions("P2", 0.95) == (*full, "fp8", "int8")
    assert allowed_precisions("P2", 0.9) == (*full, "fp8", "int8", "int4")
    assert allowed_precisions("P0", 0.5) == (*full, "fp8", "int8")          # never int4 when user-facing
    assert allowed_precisions("P1", None) == (*full, "fp8", "int8", "int4")  # nothing declared to protect


def test_a_precision_the_tolerance_forbids_is_an_error_at_the_precision() -> None:
    from intentc.passes.domain import check_domain
    text = embed("precision: int4\n    model_memory: 4Gi", extra=", sla P1, tolerance 0.99")
    _, diags = check_domain(program_of(text))
    (d,) = diags
    assert d.code == "E1011" and "allows fp32, tf32, bf16, fp16, fp8" in d.message
    assert (d.span.line, d.span.column) == (6, 16)
    ok = embed("precision: int4\n    model_memory: 4Gi", extra=", sla P2, tolerance 0.9")
    assert check_domain(program_of(ok))[1] == []


def test_strategy_from_sla_and_the_fragmentation_of_the_chosen_domain() -> None:
    def two(sla_a: str, gpus_a: int) -> str:
        return f"""
tenant t {{ tier: gold }}
intent a {{ trigger: on push  action: batch image "a:1"  context: tenant t  constraints: gpus {gpus_a}, sla {sla_a} }}
"""
    whole, _ = make_plan(program_of(two("P2", 8)), H100)
    part, _ = make_plan(program_of(two("P2", 2)), H100)
    user, _ = make_plan(program_of(two("P0", 2)), H100)
    assert (whole.strategies[0].strategy, whole.strategies[0].fragmentation) == ("throughput", 0.0)
    assert (part.strategies[0].strategy, part.strategies[0].fragmentation) == ("elastic", 0.75)
    assert part.strategies[0].domain == "node h1"
    assert user.strategies[0].strategy == "latency"
    assert plan_from_json(plan_to_json(part)) == part
    r = render(program_of(two("P2", 2)), part, "a" * 40)
    job = next(m.body for m in r.manifests if m.ref.kind == "Job")
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["INTENTC_STRATEGY"] == "elastic" and env["INTENTC_ALLOWED_PRECISIONS"].endswith("int4")


def test_burst_serving_gets_an_autoscaler_and_steady_does_not() -> None:
    from intentc.render.capabilities import KubeVersion
    base = embed("batch: auto\n    model_memory: 16Gi\n    throughput_mode: MODE", gpus="4")
    base = base.replace("inference", "serve replicas 4")
    for mode, version in (("burst", KubeVersion(1, 33)), ("steady", KubeVersion(1, 33))):
        prog = program_of(base.replace("MODE", mode))
        plan, _ = make_plan(prog, H100)
        objs = {m.ref.kind: m.body for m in render(prog, plan, "a" * 40, version).manifests}
        env = {e["name"]: e.get("value") for e in objs["Deployment"]["spec"]["template"]["spec"]["containers"][0]["env"]}
        if mode == "steady":
            assert "HorizontalPodAutoscaler" not in objs and objs["Deployment"]["spec"]["replicas"] == 4
            assert env["INTENTC_BATCH_GROWTH"] == "linear"
            continue
        hpa = objs["HorizontalPodAutoscaler"]
        assert hpa["apiVersion"] == "autoscaling/v2"
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 4)
        assert hpa["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"] == 0
        assert "replicas" not in objs["Deployment"]["spec"]          # the autoscaler owns it
        assert env["INTENTC_BATCH_GROWTH"] == "exponential"
        from tests.kube_schema import validate_manifest
        assert validate_manifest(hpa) == []


def test_plan_diff_shows_the_batch_when_the_placement_moves() -> None:
    from intentc.diff.plan_diff import diff_plans
    topo = topology(("a1", "A100-40GB", "40Gi"), ("h1", "H100-80GB", "80Gi"))
    base, _ = make_plan(program_of(embed("batch: auto\n    model_memory: 16Gi", gpus='1 x "H100-80GB"')), topo)
    head, _ = make_plan(program_of(embed("batch: auto\n    model_memory: 16Gi", gpus='1 x "A100-40GB"')), topo)
    d = diff_plans(base, head)
    assert [(m.intent, m.old, m.new) for m in d.moved] == [("embed", "h1[0]", "a1[0]")]
    assert [(b.intent, b.old, b.new) for b in d.batches] == [("embed", 512, 192)]
    assert not diff_plans(base, base).batches
