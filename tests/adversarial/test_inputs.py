"""Input that cannot hurt: hostile files, sizes, values and discovery (issue 16).

Each row builds a hostile repository, runs the real CLI in a child process
and states what must come out: the code and its position, the exit code, no
traceback, and where the attack is about it, that a secret is not echoed or
that memory stays a small multiple of the input.  A hang fails through the
subprocess timeout of `run_intentc`.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from adversarial import Run, run_intentc

SECRET = "ghp_" + "S3cr3tT0k3n" * 3          # what a token file might hold
LONG = "".join(f"{i:03d}" for i in range(100))     # 300 characters, no substring repeats
MIB = 2**20
TENANT = "tenant team-a { tier: gold }\n"
PRE = 'tenant t { tier: gold }\nintent j {\n  trigger: on push\n  action: batch image "'
POST = '"\n  context: tenant t\n}\n'
YINTENT = ("apiVersion: intentc.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: t\n---\n"
           "apiVersion: intentc.dev/v1alpha1\nkind: Intent\nmetadata:\n  name: j\nspec:\n  trigger: push\n"
           "  action:\n    kind: batch\n    image: b:1\n")
TOPOLOGY = ("apiVersion: intentc.dev/v1alpha1\nkind: Topology\nmetadata: {name: c}\nspec:\n"
            "  levels: [zone, node]\n  nodes:\n    - name: n1\n"
            "      gpu: {product: H100-80GB, count: 8}\n      domains: {zone: z1}\n")


@dataclass(frozen=True)
class Env:
    repo: Path        # the repository: has a .git entry, so links are confined to it
    outside: Path     # a directory beside it, holding a token file

    def write(self, rel: str, text: str | bytes) -> Path:
        p = self.repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8")
        return p

    def link(self, rel: str, target: str | Path) -> None:
        p = self.repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, p)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / ".git").mkdir(parents=True)
    outside.mkdir()
    (outside / "token").write_text(SECRET + "\n", encoding="utf-8")
    (outside / "leak.yaml").write_text(SECRET + "\n", encoding="utf-8")
    return Env(repo, outside)


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[Env], list[str]]     # makes the input; returns the paths to check
    code: str | None                      # the diagnostic expected, None: no error at all
    exit_code: int
    at: tuple[str, int, int] | None = None    # file (as shown), line, column of `code`
    no_secret: bool = False               # SECRET must not appear in any output format
    max_mib_per_input_mib: float | None = None   # peak RSS over the baseline, per MiB of input
    max_peak_mib: float | None = None     # the child's whole peak RSS (issue 39: the 4 MiB worst case)
    max_output_chars: int | None = None   # bounded output (text format)
    no_control: bool = False              # no control character (terminal escape) in any output
    max_excerpt: bool = False             # LONG is quoted by 40 characters at most (160 under text carets)
    env: dict[str, str] = field(default_factory=dict)


def _fifo(e: Env) -> list[str]:
    os.mkfifo(e.repo / "a.yaml")
    return ["."]


def _big_comment(e: Env) -> list[str]:
    e.write("a.intent", TENANT + ("#" + "x" * 1023 + "\n") * (4 * 1024) + "#\n")
    return ["."]


CASES = [
    # --- files: links, file types, sizes --------------------------------
    Case("link-to-token-outside", lambda e: (e.link("a.yaml", e.outside / "token"), ["."])[1],
         "E0005", 1, ("a.yaml", 1, 1), no_secret=True),
    Case("relative-link-out", lambda e: (e.link("sub/a.intent", "../../outside/token"), ["."])[1],
         "E0005", 1, ("sub/a.intent", 1, 1), no_secret=True),
    Case("explicit-link-out", lambda e: (e.link("a.yaml", e.outside / "token"), ["a.yaml"])[1],
         "E0005", 1, ("a.yaml", 1, 1), no_secret=True),
    Case("dir-link-out-not-followed", lambda e: (e.link("sub", e.outside), e.write("t.intent", TENANT), ["."])[2],
         None, 0, no_secret=True),
    Case("link-inside-followed", lambda e: (e.write(".shared/t.intent", TENANT), e.link("a.intent", ".shared/t.intent"),
                                            ["."])[2], None, 0),
    Case("fifo-named-yaml", _fifo, "E0006", 1, ("a.yaml", 1, 1)),
    Case("fifo-explicit", lambda e: (_fifo(e), ["a.yaml"])[1], "E0006", 1, ("a.yaml", 1, 1)),
    Case("char-device-explicit", lambda e: ["/dev/zero"], "E0006", 1, ("/dev/zero", 1, 1)),
    Case("link-to-device", lambda e: (e.link("z.yaml", "/dev/zero"), ["."])[1], "E0005", 1, ("z.yaml", 1, 1)),
    Case("over-size-limit", _big_comment, "E0007", 1, ("a.intent", 1, 1), max_mib_per_input_mib=2),
    Case("size-limit-configurable", lambda e: (e.write("a.intent", TENANT * 10), ["."])[1],
         "E0007", 1, ("a.intent", 1, 1), env={"INTENTC_MAX_FILE_BYTES": "100"}),
    # --- what diagnostics may quote ----------------------------------------
    Case("token-file-in-repo", lambda e: (e.write("token.yaml", SECRET + "\n"), ["."])[1],
         "E0206", 1, ("token.yaml", 1, 1), no_secret=True),
    Case("dotenv-file-in-repo", lambda e: (e.write("env.yaml", f"GITHUB_TOKEN={SECRET}\n"), ["."])[1],
         "E0206", 1, ("env.yaml", 1, 1), no_secret=True),
    Case("long-value-excerpt", lambda e: (e.write("a.intent", f"tenant {LONG}_x {{ tier: gold }}\n"), ["."])[1],
         "E0410", 1, ("a.intent", 1, 8), max_excerpt=True),
    Case("long-key-excerpt", lambda e: (e.write("a.yaml", "apiVersion: intentc.dev/v1alpha1\nkind: Tenant\n"
                                                           f'metadata:\n  name: t\nspec:\n  "{LONG}": 1\n'), ["."])[1],
         "E0212", 1, ("a.yaml", 6, 3), max_excerpt=True),
    Case("terminal-escape-in-a-name", lambda e: (e.write("a.yaml", "apiVersion: intentc.dev/v1alpha1\nkind: Tenant\n"
                                                                    'metadata:\n  name: "\\e]2;owned\\a\\e[2J"\n'), ["."])[1],
         "E0410", 1, ("a.yaml", 4, 9), no_control=True),
    Case("long-line-error-at-end", lambda e: (e.write("a.intent", "tenant t { tier: gold " + " " * MIB + "@ }\n"),
                                              ["."])[1], "E0102", 1, ("a.intent", 1, MIB + 23), max_output_chars=2000),
    Case("long-yaml-name", lambda e: (e.write("a.yaml", "apiVersion: intentc.dev/v1alpha1\nkind: Tenant\n"
                                                        "metadata:\n  name: " + "A" * (3 * MIB) + "\n"), ["."])[1],
         "E0410", 1, ("a.yaml", 4, 9), max_output_chars=2000),
    Case("syntax-error-flood", lambda e: (e.write("a.intent", "tenant a { @ }\n" * 50_000), ["."])[1],
         "E0008", 1, ("a.intent", 101, 12), max_output_chars=40_000),
    Case("schema-error-flood", lambda e: (e.write("a.yaml", YINTENT + "    command: [" + "1," * 150_000 + "1]\n"
                                                  "  context:\n    tenant: t\n"), ["."])[1],
         "E0008", 1, ("a.yaml", 15, 213), max_mib_per_input_mib=150, max_output_chars=40_000),
    # the densest 4 MiB YAML: two million values took 380 MiB to read; refused at the 200,001st
    Case("yaml-flow-list-4mb", lambda e: (e.write("a.yaml", YINTENT + "    command: [" + "1," * (2 * MIB - 300) + "1]\n"
                                                  "  context:\n    tenant: t\n"), ["."])[1],
         "E0207", 1, ("a.yaml", 15, 15 + 2 * (200_000 - 16)), max_peak_mib=150, max_output_chars=2_000),
    Case("yaml-flow-maps-4mb", lambda e: (e.write("a.yaml", "[" + "{}," * (4 * MIB // 3 - 2) + "{}]\n"), ["."])[1],
         "E0207", 1, ("a.yaml", 1, 2 + 3 * 199_999), max_peak_mib=150, max_output_chars=2_000),
    Case("domain-error-flood", lambda e: (e.write("a.intent", "tenant T { tier: x }\n" * 100_000), ["."])[1],
         "E0008", 1, ("a.intent", 334, 8), max_output_chars=400_000),
    # --- memory ------------------------------------------------------------
    Case("dsl-string-4mb", lambda e: (e.write("a.intent", PRE + "a" * (4 * MIB - 200) + POST), ["."])[1],
         None, 0, max_mib_per_input_mib=8),
    Case("dsl-escaped-string-4mb", lambda e: (e.write("a.intent", PRE + "\\\"" * (2 * MIB - 100) + POST), ["."])[1],
         None, 0, max_mib_per_input_mib=8),
    Case("dsl-unterminated-string-4mb", lambda e: (e.write("a.intent", PRE + "a" * (4 * MIB - 200) + "\n"), ["."])[1],
         "E0104", 1, ("a.intent", 4, 23), max_mib_per_input_mib=8),
    # --- values the API server would refuse ----------------------------------
    Case("cron-out-of-range", lambda e: (e.write("a.intent", 'tenant t { tier: gold }\nintent j {\n'
                                                             '  trigger: schedule "99 25 32 13 8"\n'
                                                             '  action: batch image "b:1"\n  context: tenant t\n}\n'),
                                         ["."])[1], "E0417", 1, ("a.intent", 3, 12)),
    Case("duration-huge", lambda e: (e.write("a.intent", PRE + 'b:1"\n  context: tenant t\n  constraints: duration '
                                             + "9" * 100_000 + 's\n}\n'), ["."])[1], "E0415", 1, ("a.intent", 6, 25)),
]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The same CLI on a one-line file: what the interpreter and imports cost."""
    root = tmp_path_factory.mktemp("baseline")
    (root / "t.intent").write_text(TENANT, encoding="utf-8")
    return run_intentc(["check", "."], root)


def _input_mib(repo: Path) -> float:
    return sum(p.stat().st_size for p in repo.rglob("*") if p.is_file() and not p.is_symlink()) / MIB


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(env: Env, case: Case, baseline: Run) -> None:
    paths = case.build(env)
    run = run_intentc(["check", *paths, "-o", "json"], env.repo, case.env)
    assert "Traceback" not in run.output, run.output[-3000:]
    assert run.exit_code == case.exit_code, run.output[-3000:]
    diags = json.loads(run.stdout) if run.stdout.strip().startswith("[") else []
    errors = [d for d in diags if d["severity"] == "error"]
    if case.code is None:
        assert errors == [], errors
    else:
        found = [(d["code"], d["file"], d["line"], d["column"]) for d in errors]
        assert case.at is not None
        file, line, column = case.at
        assert (case.code, file, line, column) in found, found
    if case.max_mib_per_input_mib is not None:
        extra = run.peak_rss_mib - baseline.peak_rss_mib
        assert extra <= case.max_mib_per_input_mib * max(_input_mib(env.repo), 1.0), (run.peak_rss_mib, baseline)
    if case.max_peak_mib is not None:
        assert run.peak_rss_mib <= case.max_peak_mib, run.peak_rss_mib
    if case.max_excerpt:
        assert LONG[:41] not in run.output and LONG[:39] in run.output
    if case.no_secret:
        assert SECRET not in run.output
    if case.no_secret or case.max_output_chars is not None or case.max_excerpt or case.no_control:
        for fmt in ("text", "github"):
            shown = run_intentc(["check", *paths, "-o", fmt], env.repo, case.env)
            if case.no_secret:
                assert SECRET not in shown.output, fmt
            if case.max_output_chars is not None and fmt == "text":
                assert len(shown.output) <= case.max_output_chars, shown.output[:500]
            if case.no_control:
                assert not [c for c in shown.output if not c.isprintable() and c not in "\n"], fmt
            if case.max_excerpt:
                longest = 160 if fmt == "text" else 40
                assert LONG[:longest + 1] not in shown.output, fmt


# --- the same file, the same exit code, whichever command reads it ------------

UNREADABLE: dict[str, Callable[[Env], None]] = {
    "broken-link": lambda e: e.link("a.yaml", "missing.yaml"),
    "link-out": lambda e: e.link("a.yaml", e.outside / "token"),
    "fifo": lambda e: os.mkfifo(e.repo / "a.yaml"),
    "too-large": lambda e: (e.write("a.intent", "#" * 2000),),
}


@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_check_and_compile_agree_on_exit_code(env: Env, name: str) -> None:
    UNREADABLE[name](env)
    env.write("t.intent", TENANT)
    (env.outside / "topology.yaml").write_text(TOPOLOGY, encoding="utf-8")
    limit = {"INTENTC_MAX_FILE_BYTES": "1000"}
    topo = str(env.outside / "topology.yaml")
    check = run_intentc(["check", "."], env.repo, limit)
    compiled = run_intentc(["compile", ".", "-t", topo, "-d", str(env.outside / "build"),
                            "--commit", "0" * 40], env.repo, limit)
    assert "Traceback" not in check.output + compiled.output
    assert check.exit_code == compiled.exit_code, (check.output, compiled.output)
    assert check.exit_code == (2 if name == "broken-link" else 1)
    assert not (env.outside / "build").exists()


# --- discovery: .intentcignore, --exclude, intentc's own output -----------------

def test_compile_twice_into_the_repository(env: Env) -> None:
    """`intentc compile . -o build` twice in a row: the second run does not read build/."""
    shutil.copytree(Path(__file__).parents[2] / "intents", env.repo / "intents")
    topo = str(Path(__file__).parents[2] / "examples" / "topologies" / "cluster.yaml")
    args = ["compile", ".", "-t", topo, "-d", "build", "--commit", "1" * 40]
    first = run_intentc(args, env.repo)
    assert first.exit_code == 0, first.output
    assert (env.repo / "build" / ".intentc-output").is_file()
    second = run_intentc(args, env.repo)
    assert second.exit_code == 0, second.output
    assert "E0204" not in second.output
    check = run_intentc(["check", "."], env.repo)
    assert check.exit_code == 0, check.output


def test_output_of_a_release_before_the_marker_is_not_read(env: Env) -> None:
    env.write("t.intent", TENANT)
    env.write("build/plan.json", "{}")
    env.write("build/graph.json", "{}")
    env.write("build/manifests/00-namespace-x.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    run = run_intentc(["check", "."], env.repo)
    assert run.exit_code == 0, run.output


def test_intentcignore_and_exclude(env: Env) -> None:
    env.write("t.intent", TENANT)
    env.write("vendor/x.yaml", "apiVersion: v1\nkind: ConfigMap\n")          # not an intent: E0204
    env.write("drafts/a.intent", "tenant broken {\n")                       # E0103
    env.write("deep/er/scratch.intent", "tenant also-broken {\n")
    env.write(".intentcignore", "# third-party manifests\nvendor/\nscratch.intent\n")
    ignored = run_intentc(["check", "."], env.repo)
    assert ignored.exit_code == 1 and "E0103" in ignored.output, ignored.output
    assert "vendor/x.yaml" not in ignored.output and "scratch.intent" not in ignored.output
    excluded = run_intentc(["check", ".", "--exclude", "drafts/", "--exclude", "*.yml"], env.repo)
    assert excluded.exit_code == 0, excluded.output
    explicit = run_intentc(["check", "vendor/x.yaml", "--exclude", "vendor/"], env.repo)
    assert explicit.exit_code == 1 and "E0204" in explicit.output   # named on the command line: read
    for command in (["graph", "."], ["fmt", "."]):     # fmt rewrites t.intent; drafts/ would be E0103
        res = run_intentc([*command, "--exclude", "drafts/"], env.repo)
        assert res.exit_code == 0 and "Traceback" not in res.output, (command, res.output)
