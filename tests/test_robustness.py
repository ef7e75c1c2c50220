"""Random damage to valid files never crashes the compiler.

Mutations a real editor session produces: flipped bytes, deleted ranges,
duplicated lines, truncation.  Whatever comes out, `check` must return
diagnostics (not raise), and every diagnostic must point inside the file.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intentc.frontend import parse_source
from intentc.frontend.sources import SourceFile, decode
from intentc.passes import run_passes

EXAMPLES = sorted((Path(__file__).parents[1] / "intents").rglob("*"))
VALID = [(p.name, p.read_bytes()) for p in EXAMPLES if p.suffix in (".intent", ".yaml")]


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, bytes]:
    name, data = draw(st.sampled_from(VALID))
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "delete", "dup-line", "truncate", "insert"]))
        if not buf:
            break
        i = draw(st.integers(0, len(buf) - 1))
        if op == "flip":
            buf[i] = draw(st.integers(0, 255))
        elif op == "delete":
            del buf[i:i + draw(st.integers(1, 40))]
        elif op == "truncate":
            del buf[i:]
        elif op == "insert":
            buf[i:i] = draw(st.sampled_from([b"{", b"}", b":", b'"', b"&a ", b"*a", b"\t", b"- ", b"#"]))
        else:
            lines = bytes(buf).split(b"\n")
            j = i % len(lines)
            lines.insert(j, lines[j])
            buf = bytearray(b"\n".join(lines))
    return name, bytes(buf)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutations_never_raise(case: tuple[str, bytes]) -> None:
    name, data = case
    text, diags = decode(name, data)
    if text is None:
        assert diags and all(d.span.line >= 1 for d in diags)
        return
    result = parse_source(SourceFile(name, text))
    _, pass_diags = run_passes(result.program)
    n_lines = text.count("\n") + 1
    for d in list(result.diagnostics) + pass_diags:
        assert 1 <= d.span.line <= n_lines, d
        assert d.span.column >= 1, d


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.sampled_from(["x.intent", "x.yaml"]))
def test_random_bytes_never_raise(data: bytes, name: str) -> None:
    text, _ = decode(name, data)
    if text is not None:
        parse_source(SourceFile(name, text))
