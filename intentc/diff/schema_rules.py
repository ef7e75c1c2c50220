"""The schema-diff rule catalogue: every kind of schema change, with a stable id.

Rule ids are part of the interface (CI annotations, acknowledgements and
docs/schema-diff-rules.md refer to them), so an id is never reused for a
different meaning; new rules get new ids.  The rule's severity is its
*default*: what the change usually does to documents that were valid under
the base schema.  Each finding then gets a verdict (`schema_verdict`):
compatible when proved, breaking when a counter-example is found or a real
document of the base becomes invalid, "maybe" otherwise.

* ``ERR``  breaking: some valid documents become invalid, or their meaning
  changes silently (every ``default`` change: running workloads change
  without anyone editing an intent);
* ``WARN`` maybe-breaking: not decided (a changed regular expression for
  which no counter-example was found), or a planned removal;
* ``INFO`` compatible: every valid document stays valid and means the same.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Level(enum.Enum):
    INFO = "INFO"
    WARN = "WARN"
    ERR = "ERR"

    @property
    def rank(self) -> int:
        return {"INFO": 0, "WARN": 1, "ERR": 2}[self.value]


@dataclass(frozen=True)
class Rule:
    id: str            # stable, e.g. "SD101"
    name: str          # stable slug, e.g. "property-removed"
    level: Level
    summary: str       # one line, for --help, docs and SARIF-like outputs


_RULES: tuple[Rule, ...] = (
    # whole schemas
    Rule("SD001", "schema-removed", Level.ERR, "a schema file present in the base is gone in the head"),
    Rule("SD002", "schema-added", Level.INFO, "a new schema file"),
    # properties
    Rule("SD101", "property-removed", Level.ERR, "a property was removed"),
    Rule("SD102", "deprecated-property-removed", Level.WARN,
         "a property marked `deprecated: true` in the base was removed"),
    Rule("SD103", "property-added", Level.INFO, "a new optional property"),
    Rule("SD104", "required-property-added", Level.ERR, "a new property that is required"),
    Rule("SD105", "property-became-required", Level.ERR, "an existing optional property became required"),
    Rule("SD106", "property-became-optional", Level.INFO, "a required property became optional"),
    Rule("SD107", "property-deprecated", Level.INFO, "a property was marked `deprecated: true`"),
    Rule("SD108", "additional-properties-closed", Level.ERR,
         "`additionalProperties: false` now rejects properties the base accepted"),
    Rule("SD109", "additional-properties-opened", Level.INFO,
         "`additionalProperties` no longer rejects unknown properties"),
    Rule("SD111", "dependency-added", Level.ERR,
         "`dependentRequired` asks for more properties when a property is present"),
    Rule("SD112", "dependency-removed", Level.INFO, "`dependentRequired` asks for fewer properties"),
    Rule("SD113", "property-names-changed", Level.WARN, "`propertyNames` changed (decided by the verdict)"),
    # types and values
    Rule("SD201", "type-narrowed", Level.ERR, "the type accepts fewer kinds of values"),
    Rule("SD202", "type-widened", Level.INFO, "the type accepts more kinds of values"),
    Rule("SD203", "type-changed", Level.ERR, "the type changed to an unrelated one"),
    Rule("SD211", "enum-value-removed", Level.ERR, "an allowed value was removed from an enum"),
    Rule("SD212", "enum-value-added", Level.INFO, "an allowed value was added to an enum"),
    Rule("SD213", "enum-added", Level.ERR, "values are now restricted to an enum"),
    Rule("SD214", "enum-removed", Level.INFO, "an enum restriction was lifted"),
    Rule("SD215", "const-changed", Level.ERR, "a `const` was added or changed"),
    Rule("SD216", "const-removed", Level.INFO, "a `const` restriction was lifted"),
    # defaults: always ERR, a default change alters workloads nobody edited
    Rule("SD301", "default-added", Level.ERR, "a default was added (documents without the value change meaning)"),
    Rule("SD302", "default-changed", Level.ERR, "a default changed (documents without the value change meaning)"),
    Rule("SD303", "default-removed", Level.ERR, "a default was removed (documents without the value change meaning)"),
    # bounds
    Rule("SD401", "minimum-tightened", Level.ERR, "`minimum` added or raised"),
    Rule("SD402", "minimum-loosened", Level.INFO, "`minimum` removed or lowered"),
    Rule("SD403", "maximum-tightened", Level.ERR, "`maximum` added or lowered"),
    Rule("SD404", "maximum-loosened", Level.INFO, "`maximum` removed or raised"),
    Rule("SD405", "exclusive-minimum-tightened", Level.ERR, "`exclusiveMinimum` added or raised"),
    Rule("SD406", "exclusive-minimum-loosened", Level.INFO, "`exclusiveMinimum` removed or lowered"),
    Rule("SD407", "exclusive-maximum-tightened", Level.ERR, "`exclusiveMaximum` added or lowered"),
    Rule("SD408", "exclusive-maximum-loosened", Level.INFO, "`exclusiveMaximum` removed or raised"),
    Rule("SD409", "multiple-of-tightened", Level.ERR,
         "`multipleOf` added, or changed to a value the old one is no multiple of"),
    Rule("SD410", "multiple-of-loosened", Level.INFO, "`multipleOf` removed, or changed to a divisor of the old one"),
    Rule("SD411", "min-length-tightened", Level.ERR, "`minLength` added or raised"),
    Rule("SD412", "min-length-loosened", Level.INFO, "`minLength` removed or lowered"),
    Rule("SD413", "max-length-tightened", Level.ERR, "`maxLength` added or lowered"),
    Rule("SD414", "max-length-loosened", Level.INFO, "`maxLength` removed or raised"),
    Rule("SD421", "min-items-tightened", Level.ERR, "`minItems` added or raised"),
    Rule("SD422", "min-items-loosened", Level.INFO, "`minItems` removed or lowered"),
    Rule("SD423", "max-items-tightened", Level.ERR, "`maxItems` added or lowered"),
    Rule("SD424", "max-items-loosened", Level.INFO, "`maxItems` removed or raised"),
    Rule("SD425", "unique-items-added", Level.ERR, "`uniqueItems: true` now rejects arrays with repeated items"),
    Rule("SD426", "unique-items-removed", Level.INFO, "`uniqueItems: true` was lifted"),
    Rule("SD431", "min-properties-tightened", Level.ERR, "`minProperties` added or raised"),
    Rule("SD432", "min-properties-loosened", Level.INFO, "`minProperties` removed or lowered"),
    Rule("SD433", "max-properties-tightened", Level.ERR, "`maxProperties` added or lowered"),
    Rule("SD434", "max-properties-loosened", Level.INFO, "`maxProperties` removed or raised"),
    # patterns
    Rule("SD501", "pattern-added", Level.ERR, "strings must now match a pattern"),
    Rule("SD502", "pattern-changed", Level.WARN, "the pattern changed (may reject values the old one accepted)"),
    Rule("SD503", "pattern-removed", Level.INFO, "a pattern restriction was lifted"),
    # structure
    Rule("SD601", "ref-changed", Level.WARN, "a `$ref` points at a different definition"),
    Rule("SD602", "composition-changed", Level.WARN, "`oneOf`/`anyOf`/`allOf` gained or lost branches"),
    Rule("SD603", "keyword-changed", Level.WARN, "another validation keyword changed (not classified further)"),
    Rule("SD604", "not-changed", Level.WARN, "a `not` was added, removed or changed"),
    Rule("SD605", "conditional-changed", Level.WARN, "`if`/`then`/`else` was added, removed or changed"),
)

RULES: dict[str, Rule] = {r.id: r for r in _RULES}
BY_NAME: dict[str, Rule] = {r.name: r for r in _RULES}

# Numeric bound keywords -> (rule when the bound gets stricter, rule when it relaxes).
# "Stricter" is direction-dependent: a larger minimum, a smaller maximum.
BOUNDS: dict[str, tuple[str, str, bool]] = {
    # keyword: (tightened rule name, loosened rule name, larger-is-stricter)
    "minimum": ("minimum-tightened", "minimum-loosened", True),
    "maximum": ("maximum-tightened", "maximum-loosened", False),
    "exclusiveMinimum": ("exclusive-minimum-tightened", "exclusive-minimum-loosened", True),
    "exclusiveMaximum": ("exclusive-maximum-tightened", "exclusive-maximum-loosened", False),
    "minLength": ("min-length-tightened", "min-length-loosened", True),
    "maxLength": ("max-length-tightened", "max-length-loosened", False),
    "minItems": ("min-items-tightened", "min-items-loosened", True),
    "maxItems": ("max-items-tightened", "max-items-loosened", False),
    "minProperties": ("min-properties-tightened", "min-properties-loosened", True),
    "maxProperties": ("max-properties-tightened", "max-properties-loosened", False),
}
# The numeric bounds, compared as the interval they describe together: (side, inclusive, exclusive).
INTERVAL_SIDES: tuple[tuple[str, str, str], ...] = (
    ("lower", "minimum", "exclusiveMinimum"),
    ("upper", "maximum", "exclusiveMaximum"),
)


def rule(name: str) -> Rule:
    return BY_NAME[name]


def catalogue_markdown() -> str:
    """The table in docs/schema-diff-rules.md, generated so docs and code agree."""
    lines = ["| id | rule | severity | meaning |", "|---|---|---|---|"]
    for r in _RULES:
        lines.append(f"| `{r.id}` | `{r.name}` | {r.level.value} | {r.summary} |")
    return "\n".join(lines) + "\n"
