"""What a command line says, put the way the commands declare it, before click parses it.

Three things, each decided here and nowhere else (docs/cli-conventions.md):

- Global options after the command: `intentc check intents/ --color never` is
  `intentc --color never check intents/`.  The root's options are moved in
  front of the command name; a command that declares an option of the same
  name keeps its own.
- Spellings that changed, still taken for one release with a warning on
  stderr: `--format` is `-o/--output` (the output format, in every command),
  `--out DIR` of a command that writes a tree is `-d/--out-dir`, and
  `compile -o DIR` (its old output directory) is `-d DIR` when DIR is not
  one of its formats — `compile -o json` is the diagnostics format.
- `--dry-run` alone is `--dry-run=client` (as kubectl's), also when a path
  follows it (`apply --dry-run intents/`); `--dry-run server` is taken too.
- `--show-completion SHELL` is `completion SHELL`: typer's option prints the
  script of the shell it detects, whatever shell is named.

The rewriting walks the tokens as click would: it knows which options take
a value (so a value that looks like an option is left alone) and stops at
`--`.  Shell completion (click's resilient parsing) sees the words as typed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, Sequence

# old spelling -> (new spelling, as the warning names it); applied in a command that
# declares the new option and not the old one (plan's and convert's --out FILE stay)
RENAMED: dict[str, tuple[str, str]] = {
    "--format": ("--output", "-o/--output"),
    "--out": ("--out-dir", "-d/--out-dir"),
}
# commands whose -o was their output directory: a value that is not a format still is, with a warning
OLD_O_DIRECTORY = {("compile",)}
GLOBAL = {"--color"}        # root options also taken after the command
DRY_RUN = "--dry-run"
# `--show-completion SHELL` prints SHELL's script (`intentc completion SHELL`), whatever shell runs it
SHOW_COMPLETION = "--show-completion"
SHELLS = ("bash", "zsh", "fish", "powershell")
DRY_RUN_BARE = "client"


@dataclass
class Options:
    """A command's options by every spelling, and which of them take a value."""

    by_name: dict[str, Any]

    @classmethod
    def of(cls, command: Any) -> Options:
        found: dict[str, Any] = {}
        for p in getattr(command, "params", ()):
            if getattr(p, "param_type_name", None) != "option":
                continue
            for name in list(p.opts) + list(p.secondary_opts):
                found[name] = p
        return cls(found)

    def takes_value(self, name: str) -> bool:
        p = self.by_name.get(name)
        return p is not None and not p.is_flag and not p.count

    def choices(self, name: str) -> list[str]:
        """The values an option of choices takes: click's Choice (typer up to 0.2x), or the
        enum typer's own parameters keep (later releases)."""
        p = self.by_name[name]
        listed = getattr(getattr(p, "type", None), "choices", None)
        if listed is None:
            annotation = getattr(getattr(p, "type_descriptor", None), "annotation", None)
            listed = list(annotation) if isinstance(annotation, type) and issubclass(annotation, enum.Enum) else []
        return [_value_of(c) for c in listed]


def _value_of(choice: Any) -> str:
    return str(getattr(choice, "value", choice))


@dataclass
class Rewritten:
    args: list[str]          # the command's own arguments, as declared
    hoisted: list[str]       # root options found among them, to go before the command


def rewrite_command(path: tuple[str, ...], command: Any, args: Sequence[str], root: Options,
                    warn: Callable[[str], None]) -> Rewritten:
    """`args` of the command at `path` with old spellings replaced (each reported through
    `warn`), a bare --dry-run made explicit, and root options taken out."""
    own = Options.of(command)
    out: list[str] = []
    hoisted: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            out += args[i - 1:]
            break
        if token.startswith("--"):
            name, eq, value = token.partition("=")
            if name in GLOBAL and name not in own.by_name and root.takes_value(name):
                hoisted.append(token)
                if not eq and i < len(args):
                    hoisted.append(args[i])
                    i += 1
                continue
            if name in RENAMED and name not in own.by_name and RENAMED[name][0] in own.by_name:
                new, shown = RENAMED[name]
                warn(f"{name} is deprecated, use {shown}")
                name = new
                token = name + eq + value
            if name == DRY_RUN and own.takes_value(name) and not eq:
                if i < len(args) and args[i] in own.choices(name):
                    out += [f"{name}={args[i]}"]
                    i += 1
                else:
                    out.append(f"{name}={DRY_RUN_BARE}")
                continue
            out.append(token)
            if not eq and own.takes_value(name) and i < len(args):
                out.append(args[i])
                i += 1
            continue
        if token.startswith("-") and len(token) > 1:
            name, attached = token[:2], token[2:]
            if own.takes_value(name) and (attached or i < len(args)):     # else click says a value is missing
                value = attached
                if not attached:
                    value = args[i]
                    i += 1
                if name == "-o" and path in OLD_O_DIRECTORY and value not in own.choices(name) \
                        and "--out-dir" in own.by_name:
                    warn(f"-o DIR is deprecated for the output directory, use -d/--out-dir "
                         f"(-o is the output format: {', '.join(own.choices(name))})")
                    out += ["--out-dir", value]
                else:
                    out += [name, value] if not attached else [token]
                continue
        out.append(token)
    return Rewritten(out, hoisted)


def _split(options: Options, args: Sequence[str],
           root: Options | None = None) -> tuple[list[str], str | None, list[str]]:
    """(the group's own options before the command name, the name, what follows it);
    `root`: the global options, which a group below the root takes too."""
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--" or not token.startswith("-") or token == "-":
            break
        i += 1
        global_value = root is not None and token in GLOBAL and root.takes_value(token)
        if "=" not in token and (options.takes_value(token) or global_value) and i < len(args):
            i += 1
    if i >= len(args) or args[i] == "--":
        return list(args), None, []
    return list(args[:i]), args[i], list(args[i + 1:])


def rewrite(group: Any, ctx: Any, args: Sequence[str], warn: Callable[[str], None]) -> list[str]:
    """The root group's arguments, put the way the commands declare them."""
    root = Options.of(group)
    before, name, rest = _split(root, args)
    if name is None:
        return list(args)
    if before and before[-1] == SHOW_COMPLETION and name in SHELLS:
        return before[:-1] + ["completion", name] + rest      # typer's would print the detected shell's
    command = group.get_command(ctx, name)
    if command is None:
        return list(args)
    path: tuple[str, ...] = (name,)
    lead: list[str] = [name]
    hoisted: list[str] = []
    if hasattr(command, "get_command"):        # a group (topology): its own options, then its command
        group_before, sub, sub_rest = _split(Options.of(command), rest, root)
        first = rewrite_command(path, command, group_before, root, warn)
        hoisted += first.hoisted
        if sub is None:
            return before + hoisted + lead + first.args + sub_rest
        lead += first.args + [sub]
        leaf = command.get_command(ctx, sub)
        if leaf is None:
            return before + hoisted + lead + sub_rest
        path, command, rest = path + (sub,), leaf, sub_rest
    done = rewrite_command(path, command, rest, root, warn)
    return before + hoisted + done.hoisted + lead + done.args
