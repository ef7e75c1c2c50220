"""Comments across surfaces, for `intentc convert`: they are not in the IR, so
they travel by position.

YAML → DSL: ruamel.yaml's round-trip scanner finds every comment of the YAML
text with its line (a `#` inside a quoted or block scalar is text, not a
comment — a line scanner would get that wrong).  The IR's spans point
into the same YAML text, so the DSL printer places these comments exactly as
it places a DSL file's own (`dsl_print.format_program`): before the line
whose source comes next, or at the end of the line they trail.

DSL → YAML: each comment of the DSL file goes into the ruamel document of
the declaration it sits in or before — a header (before the first
declaration) on top of the file, a comment between blocks above the next
block's document, a comment inside a block above (or at the end of the
line of) the YAML key of the clause it precedes (or trails).  A comment
that fits no key stays above its document: none is dropped.
"""

from __future__ import annotations

import bisect
from typing import Any, Iterator, Sequence

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from intentc.frontend.dsl import Comment
from intentc.ir import Dataset, Intent, Program, Tenant

# The editor modeline `convert --to yaml` may add means nothing in a .intent file.
MODELINE = "# yaml-language-server:"

Declaration = Tenant | Dataset | Intent


def _comment_tokens(value: Any) -> Iterator[Any]:
    """The CommentTokens in a token's comment slot (nested lists, Nones)."""
    if value is None:
        return
    if isinstance(value, list):
        for v in value:
            yield from _comment_tokens(v)
    elif hasattr(value, "value") and hasattr(value, "start_mark"):
        yield value


def yaml_comments(text: str) -> tuple[Comment, ...]:
    """Every comment of a YAML text, 1-based like spans, one per line; the
    editor modeline left out."""
    lines = text.splitlines()
    found: dict[int, Comment] = {}
    try:
        for token in YAML(typ="rt").scan(text):
            for c in _comment_tokens(getattr(token, "comment", None)):
                first = c.start_mark.line
                for n, part in enumerate(c.value.split("\n")):
                    body = part.strip()
                    if not body.startswith("#") or body.startswith(MODELINE):
                        continue
                    line = first + n
                    column = c.start_mark.column if n == 0 else (len(part) - len(part.lstrip()))
                    before = lines[line][:column] if line < len(lines) else ""
                    found[line + 1] = Comment(line + 1, column + 1, body, trailing=bool(before.strip()))
    except YAMLError:
        return ()          # convert only runs on files that parsed; a scanner quirk must not stop it
    return tuple(found[k] for k in sorted(found))


def _declarations(program: Program) -> list[Declaration]:
    decls: list[Declaration] = [*program.tenants, *program.datasets, *program.intents]
    return sorted(decls, key=lambda d: (d.span.line, d.span.column))


def _spec_key(decl: Declaration, comment: Comment, spec: CommentedMap) -> str | None:
    """The top-level spec key a comment inside `decl` belongs to: the clause on
    its line (trailing), else the next clause below it."""
    lines = sorted((span.line, key) for key, span in decl.spans.items if key in spec)
    if comment.trailing:
        return next((key for line, key in lines if line == comment.line), None)
    at = bisect.bisect_right([line for line, _ in lines], comment.line)
    return lines[at][1] if at < len(lines) else None


def attach_to_documents(program: Program, comments: Sequence[Comment],
                        documents: Sequence[tuple[str, CommentedMap]]) -> tuple[list[str], list[str]]:
    """Put the DSL file's comments into the YAML documents of its declarations
    (in place); return the header and footer comments, which go on top and
    at the end of the file."""
    decls = _declarations(program)
    by_name = {(kind, doc["metadata"]["name"]): doc for kind, doc in documents}
    kinds = {Tenant: "Tenant", Dataset: "Dataset", Intent: "Intent"}
    header: list[str] = []
    footer: list[str] = []
    above: dict[int, list[str]] = {}
    starts = [d.span.line for d in decls]
    for c in sorted(comments, key=lambda c: (c.line, c.column)):
        if not decls or c.line < starts[0] and not c.trailing:
            header.append(c.text)
            continue
        at = bisect.bisect_right(starts, c.line) - 1      # the declaration starting at or before it
        inside = at >= 0 and c.line <= decls[at].span.end_line
        if not inside:                                      # between blocks: above the next one
            if at + 1 >= len(decls):
                footer.append(c.text)
            else:
                above.setdefault(at + 1, []).append(c.text)
            continue
        doc = by_name[(kinds[type(decls[at])], decls[at].name)]
        spec = doc.get("spec")
        key = _spec_key(decls[at], c, spec) if isinstance(spec, CommentedMap) else None
        if key is None:
            above.setdefault(at, []).append(c.text)
        elif c.trailing:
            _end_of_first_line(spec, key, c.text)
        else:
            _before_key(spec, key, c.text)
    for index, texts in above.items():
        d = decls[index]
        by_name[(kinds[type(d)], d.name)].yaml_set_start_comment("\n".join(_body(t) for t in texts))
    return header, footer


def _end_of_first_line(node: Any, key: Any, text: str) -> None:
    """A trailing comment goes at the end of the first YAML line that holds a
    value of `key` (a clause whose value is a mapping or a list continues
    on the lines below its key; the DSL printer places it back on the clause)."""
    value = node[key]
    while isinstance(value, (CommentedMap, CommentedSeq)) and len(value):
        node, key = value, (next(iter(value)) if isinstance(value, CommentedMap) else 0)
        value = node[key]
    node.yaml_add_eol_comment(text, key)


def _before_key(spec: CommentedMap, key: str, text: str) -> None:
    """Add a comment line above `key` in `spec` (below any already there)."""
    previous = spec.ca.items.get(key)
    lines = [text]
    if previous and previous[1]:
        lines = [t.value.strip() for t in previous[1] if t is not None] + lines
        previous[1] = None
    spec.yaml_set_comment_before_after_key(key, before="\n".join(_body(t) for t in lines), indent=2)


def _body(text: str) -> str:
    """A comment without its `#` (ruamel writes `# ` back)."""
    body = text[1:]
    return body[1:] if body.startswith(" ") else body
