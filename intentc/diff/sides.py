"""Compiling the two sides of a diff from blob listings, parsing each blob once.

A side is a `Tree`: path -> blob SHA, and a function that returns the bytes
of some paths (from git's object database, or from the working tree).  Both
sides are compiled together: a blob that appears on both sides (almost every
file of a pull request) is looked up or parsed once and its `FileResult`
object is shared, so only the files whose blob changed cost a parse, and with
a warm `BlobCache` not even the unchanged ones of the other side do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from intentc.diagnostics import Diagnostic, sorted_diagnostics
from intentc.diff.cache import BlobCache, BlobKey, listing_digest
from intentc.frontend import FileResult, merge
from intentc.frontend.sources import SourceFile, decode
from intentc.ir import Program
from intentc.pipeline.checked import global_pass_findings
from intentc.pipeline.findings import prefer_specific
from intentc.pipeline.loading import parse_all
from intentc.policy import BUILTIN, Policies

Reader = Callable[[Sequence[str]], Mapping[str, bytes]]


@dataclass(frozen=True)
class Tree:
    label: str                        # what the user named it: "origin/main (1a2b3c4d5e6f)", "working tree"
    listing: Mapping[str, str]        # repository-relative path -> blob SHA
    read: Reader = field(compare=False)
    # the revision's tag rules (`policy.load.policies_of`): what it plans and renders with
    policies: Policies = field(default=BUILTIN, compare=False)
    policy_findings: tuple[Diagnostic, ...] = field(default=(), compare=False)
    policy_texts: Mapping[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Side:
    label: str
    program: Program                  # after the semantic passes
    diagnostics: tuple[Diagnostic, ...]
    sources: dict[str, str]           # texts of the files parsed in this run (for carets)
    listing: Mapping[str, str]
    digest: str                       # identifies the tree (see `cache.listing_digest`)
    policies: Policies = BUILTIN      # the tree's tag rules


@dataclass(frozen=True)
class CompileStats:
    files: int                        # distinct (path, blob) pairs over both sides
    cached: int                       # served by the blob cache
    parsed: int                       # parsed in this run


def _fetch(tree: Tree, paths: list[str]) -> dict[str, bytes]:
    return dict(tree.read(paths)) if paths else {}


def compile_sides(base: Tree, head: Tree, cache: BlobCache | None = None, jobs: int | None = None,
                  check_base: bool = False) -> tuple[Side, Side, CompileStats]:
    """Both sides parsed (each distinct blob once); the semantic passes run on
    the head only unless `check_base`: the passes only report (they never
    change the IR), and what the base got wrong is not the pull request's news.
    New parses are put in `cache`; saving it is the caller's move."""
    cache = cache or BlobCache(None)
    keys: set[BlobKey] = set(base.listing.items()) | set(head.listing.items())
    results: dict[BlobKey, FileResult] = {}
    for key in keys:
        hit = cache.get(key)
        if hit is not None:
            results[key] = hit
    missing = sorted(keys - set(results))
    # read each missing blob from the side where it is cheapest: the head (often the working tree) first
    from_head = [p for p, sha in missing if head.listing.get(p) == sha]
    from_base = [p for p, sha in missing if head.listing.get(p) != sha]
    data = {(p, head.listing[p]): b for p, b in _fetch(head, from_head).items()}
    data.update({(p, base.listing[p]): b for p, b in _fetch(base, from_base).items()})
    texts: dict[BlobKey, str] = {}
    read_diags: dict[BlobKey, tuple[Diagnostic, ...]] = {}
    sources: list[tuple[BlobKey, SourceFile]] = []
    for key in missing:
        text, diags = decode(key[0], data[key])
        read_diags[key] = tuple(diags)
        if text is None:
            results[key] = FileResult(Program(), tuple(diags))
            continue
        texts[key] = text
        sources.append((key, SourceFile(key[0], text)))
    for position, result, _ in parse_all([s for _, s in sources], jobs):
        key = sources[position][0]
        results[key] = FileResult(result.program, read_diags[key] + result.diagnostics)
    for key in missing:
        cache.put(key, results[key])
    stats = CompileStats(len(keys), len(keys) - len(missing), len(missing))
    return _side(base, results, texts, check_base), _side(head, results, texts, True), stats


def _side(tree: Tree, results: Mapping[BlobKey, FileResult], texts: Mapping[BlobKey, str],
          passes: bool) -> Side:
    keys = sorted(tree.listing.items())
    program, diags = merge(results[k] for k in keys)
    pass_diags: list[Diagnostic] = []
    if passes:
        pass_diags = global_pass_findings(program)     # parse_all ran the local ones
    all_diags = sorted_diagnostics(prefer_specific(diags + pass_diags) + list(tree.policy_findings))
    sources = {k[0]: texts[k] for k in keys if k in texts}
    sources.update(tree.policy_texts)
    return Side(tree.label, program, tuple(all_diags), sources, tree.listing, listing_digest(tree.listing),
                tree.policies)
