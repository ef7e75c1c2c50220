"""compact.intern_strings: the Reloader's own parses share one string object per repeated
IR value (as check's unpickled results do), and the IR stays equal."""

from __future__ import annotations

from intentc.compact import intern_strings
from intentc.frontend import parse_source
from intentc.frontend.sources import SourceFile


def job(i: int) -> str:
    # values built at run time: the parser slices them out of each text, one object per file
    image = "".join(["busy", "box:1"])
    return (f"intent job-{i} {{\n  trigger: on push\n  action: batch image \"{image}\" command [\"true\"]\n"
            f"  context: tenant team-a\n  constraints: cpu 1, memory 1Gi, sla P1\n}}\n")


def test_repeated_values_become_one_object_and_the_program_stays_equal() -> None:
    a = parse_source(SourceFile("a.intent", job(1))).program
    b = parse_source(SourceFile("b.intent", job(2))).program
    ia, ib = a.intents[0], b.intents[0]
    assert ia.action.image == ib.action.image and ia.action.image is not ib.action.image
    copies = (parse_source(SourceFile("a.intent", job(1))).program, parse_source(SourceFile("b.intent", job(2))).program)
    intern_strings(a)
    intern_strings(b)
    assert ia.action.image is ib.action.image
    assert ia.constraints.memory is ib.constraints.memory and ia.constraints.sla is ib.constraints.sla
    assert ia.context.tenant.name is ib.context.tenant.name
    assert (a, b) == copies                        # equal to parses left as they were
    assert ia.name != ib.name                      # names (not INTERNED) untouched


def test_equal_batch_settings_are_one_object_parsed_or_unpickled() -> None:
    """`batch: auto` in every file is one `Batch`, from either surface and after a worker's pickle."""
    import pickle

    from intentc.ir import Batch, batch

    dsl = 'intent a {\n  trigger: on push\n  action: inference model "m" image "i:1" { batch: auto }\n' \
          '  context: tenant t\n}\n'
    yaml = ("apiVersion: intentc.dev/v1alpha1\nkind: Intent\nmetadata: {name: b}\nspec:\n  trigger: push\n"
            "  action: {kind: inference, model: m, image: 'i:1', settings: {batch: auto}}\n"
            "  context: {tenant: t}\n")
    settings = [parse_source(SourceFile(name, text)).program.intents[0].action.settings
                for name, text in (("a.intent", dsl), ("b.yaml", yaml))]
    assert settings[0] is not None and settings[1] is not None
    assert settings[0].batch is settings[1].batch is batch(True)
    assert pickle.loads(pickle.dumps(Batch(True))) is batch(True)
    assert batch(False, 32) is batch(False, 32) and batch(False, 32) is not batch(True, None, 32)
    assert batch(False, 1) is not batch(False, True)       # equal as values in Python, not as settings
