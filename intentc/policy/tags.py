"""W1021: a tag that is not the tag of any rule, but nearly one's.

Tags are free-form (`nightly`, `online`), so an unknown tag is fine; but a
tag one typo away from a rule's tag (`pci-dss-complaint`) silently drops
the rule's requirements — no isolation, no NetworkPolicy — and nothing else
would say so.  The warning is at the tag, with the rule's tag as a
did-you-mean.

The pass (`intentc.passes.tags`) runs per file, cached with it, and knows
the built-in rules only.  Where the repository's rules are loaded
(`load_policies`), `with_rules` adjusts its warnings: one about a tag a
repository rule declares is dropped (a rule `pci-dss-compliant-v2` makes
that tag a rule's own), and, where the program is at hand (`compile`,
`plan`, `check --topology`), a tag close to the tag of a repository rule
warns too.  `intentc check` without --topology reports from its remembered
summary, without the program: there only the built-in rules suggest.
"""

from __future__ import annotations

import functools
import re
from typing import Iterable, Iterator, Sequence

from intentc.diagnostics import Diagnostic, excerpt, warning
from intentc.diagnostics.suggest import closest
from intentc.ir import Intent, Program
from intentc.policy.catalogue import BUILTIN_RULES, Policies

BUILTIN_TAGS: frozenset[str] = frozenset(r.tag for r in BUILTIN_RULES)

_MESSAGE = 'tag "{tag}" is not the tag of any rule (did you mean "{rule}"?)'
_TAG = re.compile(r'tag "(.*)" is not the tag of any rule')


@functools.lru_cache(maxsize=4096)
def _nearest(tag: str, rule_tags: frozenset[str]) -> str | None:
    """The rule tag `tag` nearly is (a repository has a few distinct tags on many intents)."""
    return None if tag in rule_tags else closest(tag, rule_tags)


def near_misses(intent: Intent, rule_tags: Iterable[str], skip: Iterable[str] = ()) -> Iterator[Diagnostic]:
    """W1021 for each tag of `intent` that is no rule's tag (nor in `skip`) but close to one."""
    tags = rule_tags if isinstance(rule_tags, frozenset) else frozenset(rule_tags)
    skipped = frozenset(skip)
    for index, tag in enumerate(intent.context.tags):
        if tag in skipped:
            continue
        rule = _nearest(tag, tags)
        if rule is None:
            continue
        yield warning("W1021", _MESSAGE.format(tag=excerpt(tag), rule=rule), intent.context.tag_span(index),
                      hint=f"a rule's tag is written exactly (docs/policies.md); as it is, "
                           f"none of the requirements of {rule} apply")


def with_rules(diags: Sequence[Diagnostic], policies: Policies, program: Program | None = None) -> list[Diagnostic]:
    """`diags` with the W1021 warnings as the repository's rules leave them (see the module)."""
    rule_tags = frozenset(r.tag for r in policies.rules)
    kept: list[Diagnostic] = []
    for d in diags:
        if d.code == "W1021":
            m = _TAG.match(d.message)
            if m is not None and m.group(1) in rule_tags:
                continue
        kept.append(d)
    if program is None or all(r.origin == "built-in" for r in policies.rules):
        return kept
    for intent in program.intents:
        # the pass warned already about a tag close to a built-in rule's
        warned = [t for t in intent.context.tags if _nearest(t, BUILTIN_TAGS)]
        kept.extend(near_misses(intent, rule_tags, skip=warned))
    return kept
