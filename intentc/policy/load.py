"""A repository's tag rules and organisation rules: `policies/*.yaml` (schemas/policy.schema.json).

The directory is found the way tools find their configuration: the nearest
`policies/` at or above the first input path, stopping at the repository
root (the directory holding `.git`).  So `intentc check intents/` in a
repository with `policies/` beside `intents/` uses it, with no flag.
Files are read in name order and validated with the same schema machinery
as intents, so a mistake is a diagnostic at its line and column.  The YAML
reader and the schemas are imported only when there are files to read:
`intentc check` of a repository without policies (or without YAML) does
not load them.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from intentc.diagnostics import Diagnostic
from intentc.frontend.sources import read_source
from intentc.policy.catalogue import BUILTIN, Policies, Requirement, Rule
from intentc.policy.cel_rules import CelRule, rules_of
from intentc.policy.policy_files import checked_rules, not_a_policy

POLICY_DIR = "policies"


def find_policy_dir(paths: Sequence[str]) -> Path | None:
    """The nearest `policies/` at or above the first input path, named the way that path is:
    relative to the working directory when it is relative, so the policy files'
    diagnostics carry paths like the intents' (`policies/x.yaml`, not the absolute path the
    search resolved; an absolute path in a GitHub annotation or a SARIF log matches no file
    of the repository)."""
    start = Path(paths[0]) if paths else Path(".")
    here = (start if start.is_dir() else start.parent).resolve()
    for candidate in (here, *here.parents):
        if (candidate / POLICY_DIR).is_dir():
            found = candidate / POLICY_DIR
            return found if start.is_absolute() else Path(os.path.relpath(found))
        if (candidate / ".git").exists():
            return None
    return None


def rules_in(shown: str, text: str, cel: list[CelRule] | None = None) -> tuple[list[Rule], list[Diagnostic]]:
    """The rules of one policy file's text (shown as `shown` in diagnostics), and what is
    wrong with it: a file read from disk or from a revision (`intentc diff`) alike.  Its
    organisation rules (`rules:`, cel_rules.py) are appended to `cel` where given."""
    from intentc.frontend.schema import API_VERSION, POLICY_KIND, YMap, schema_diagnostics, to_span
    from intentc.frontend.yaml_read import Reader

    reader = Reader(shown, text)
    reader.read()
    diags = list(reader.diags)
    rules = []
    for root, _ in reader.docs:
        if not isinstance(root, YMap) or root.get("kind") != POLICY_KIND or root.get("apiVersion") != API_VERSION:
            diags.extend(not_a_policy(root, shown))      # other documents are the intent loader's
            continue
        found = schema_diagnostics(root, POLICY_KIND, shown, skip_top=())
        diags.extend(found)
        if found:
            continue
        spec = root["spec"]
        if cel is not None:
            cel.extend(rules_of(spec, shown, text))
        if "tag" not in spec:
            continue
        rules.append(Rule(spec["tag"], tuple(Requirement(r) for r in spec["requires"]),
                          str(spec.get("reason", "")), str(spec.get("volumeSize", "10Gi")), shown,
                          to_span(shown, spec.pos["tag"][1])))
    return rules, diags


def policy_folders(start: str) -> tuple[str, ...]:
    """Where `find_policy_dir` looks, as repository-relative folders, nearest first, for
    inputs starting at the repository-relative folder `start` ("" is the root): a revision
    has no working tree to walk (`intentc diff --base REV`)."""
    parts = [p for p in start.strip("/").split("/") if p and p != "."]
    return tuple("/".join(parts[:n] + [POLICY_DIR]) for n in range(len(parts), -1, -1))


def policies_of(files: Sequence[tuple[str, str]]) -> tuple[Policies, list[Diagnostic], dict[str, str]]:
    """`load_policies` for policy files already read: (shown path, text) in name order."""
    extra: list[Rule] = []
    cel: list[CelRule] = []
    diags: list[Diagnostic] = []
    for shown, text in files:
        rules, found = rules_in(shown, text, cel)
        extra.extend(rules)
        diags.extend(found)
    kept, found = checked_rules(cel)
    return replace(BUILTIN.with_rules(extra), cel=kept), diags + found, dict(files)


def load_policies(paths: Sequence[str]) -> tuple[Policies, list[Diagnostic], dict[str, str]]:
    """The catalogue for a run over `paths`: built-in rules plus the repository's.

    Returns the catalogue, diagnostics for the policy files, and their texts
    (for snippets).  Within the repository, a tag given by two files is
    decided by the later file name."""
    where = find_policy_dir(paths)
    if where is None:
        return BUILTIN, [], {}
    files: list[tuple[str, str]] = []
    diags: list[Diagnostic] = []
    for path in sorted(list(where.glob("*.yaml")) + list(where.glob("*.yml"))):
        source, read_diags = read_source(path)
        diags.extend(read_diags)
        if source is not None:
            files.append((source.path, source.text))
    policies, found, texts = policies_of(files)
    return policies, diags + found, texts
