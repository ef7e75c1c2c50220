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
line of) the YAML key of the clause it precedes (or trails), down to the
keys of an action and of its settings block.  A comment that fits no key
stays above its document: none is dropped.
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


# A place a comment can go in a YAML document: (source line of the clause,
# depth, the mapping, its key).  Depth 0 is a spec key; deeper ones are keys
# of a clause's block (an action's image, a settings block's seq_len).
_Place = tuple[int, int, CommentedMap, str]


def _places(decl: Declaration, spec: CommentedMap) -> list[_Place]:
    out: list[_Place] = []

    def add(spans: Any, node: Any, depth: int, prefix: str = "") -> None:
        if not isinstance(node, CommentedMap):
            return
        for key, span in spans.items:
            if prefix and key.startswith(prefix):
                # tenant quota_gpus -> quota: {gpus: ...}; the DSL clause has no span of its own,
                # its line is its first value's line, so comments go next to the values
                inner = node.get(prefix.rstrip("_"))
                if isinstance(inner, CommentedMap) and key[len(prefix):] in inner:
                    out.append((span.line, depth + 1, inner, key[len(prefix):]))
            elif key in node:
                out.append((span.line, depth, node, key))

    add(decl.spans, spec, 0, "quota_" if isinstance(decl, Tenant) else "")
    if isinstance(decl, Intent):
        action = spec.get("action")
        add(decl.action.spans, action, 1)
        if decl.action.settings is not None and isinstance(action, CommentedMap):
            add(decl.action.settings.spans, action.get("settings"), 2)
    # on one line, outer keys first, then the YAML order of the keys
    return sorted(out, key=lambda p: (p[0], p[1], list(p[2]).index(p[3])))


def _place_for(decl: Declaration, comment: Comment, spec: CommentedMap) -> _Place | None:
    """Where a comment inside `decl` goes: a trailing one with the outermost
    key written on its line (at the end of that key's first YAML line); one on
    its own line above the next key below it (the outermost one, when a line
    opens a clause and its block)."""
    places = _places(decl, spec)
    if comment.trailing:
        same = [p for p in places if p[0] == comment.line]
        return same[0] if same else None
    below = [p for p in places if p[0] > comment.line]
    if not below:
        return None
    return below[0]


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
        place = _place_for(decls[at], c, spec) if isinstance(spec, CommentedMap) else None
        if place is None:
            above.setdefault(at, []).append(c.text)
        elif c.trailing:
            _end_of_first_line(place[2], place[3], c.text)
        else:
            _before_key(place[2], place[3], c.text, indent=2 * (place[1] + 1))
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


def _before_key(node: CommentedMap, key: str, text: str, indent: int) -> None:
    """Add a comment line above `key` in `node` (below any already there);
    `indent` is the key's column in the YAML text."""
    previous = node.ca.items.get(key)
    lines = [text]
    if previous and previous[1]:
        lines = [t.value.strip() for t in previous[1] if t is not None] + lines
        previous[1] = None
    node.yaml_set_comment_before_after_key(key, before="\n".join(_body(t) for t in lines), indent=indent)


def _body(text: str) -> str:
    """A comment without its `#` (ruamel writes `# ` back)."""
    body = text[1:]
    return body[1:] if body.startswith(" ") else body
