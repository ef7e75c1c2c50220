"""Commands imported when they run, not when `intentc` starts.

Each command module registers its command on the typer app when it is
imported, and typer builds a click command for everything registered on
every invocation.  Importing all of them so that `intentc check` can run
made every process pay for the render package, the reconciler's inventory,
the daemon's logging ... before the first file was read, as serial start-up.

So the root group (`LazyGroup`, the app's `cls`) knows the commands by
name and imports a command's module, then builds its click command with
typer's own `get_group`, only when that command is asked for: to run it,
for its `--help`, or to complete its options.  What needs every command
but not their parameters — the list in `intentc --help` and the names
offered by shell completion — is drawn from `LISTED` below: each
command's first sentence, which is all of its help that click shows there.
tests/test_cli_lazy.py checks that this prints exactly what the commands
themselves print, and that the table lists every registered command.

The app itself is made here, with `LazyGroup` as its root, because building a
command reads the app's registrations: `cli/app.py` adds the options every
command shares to it, and each command module registers on it.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, MutableMapping, cast

import typer.main
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class Listed:
    """A command as `intentc --help` lists it before its module is imported."""

    module: str     # registers the command on the app when imported
    summary: str    # its help up to the first sentence's end: what click shortens for the list


# In the order `intentc --help` lists them (the pipeline's; typer puts groups last).
LISTED: dict[str, Listed] = {
    "check": Listed("intentc.cli.check", "Parse and validate intents; exit 1 when any error is found, "
                                         "2 when a path cannot be read."),
    "convert": Listed("intentc.cli.convert", "Convert intents between the DSL and YAML; the result compiles "
                                             "to the same IR."),
    "graph": Listed("intentc.cli.graph", "Print the dependency graph (edges from `after` and from datasets) "
                                         "with waves and the critical path; cycles and missing datasets are "
                                         "reported on stderr and exit 1."),
    "plan": Listed("intentc.cli.plan", "Schedule every intent onto the topology over time (start and end in "
                                       "plan time; what does not fit yet is queued): gangs all-or-nothing, "
                                       "`within`/`prefer` scopes, SLA order, weighted fair share and quotas at "
                                       "every instant."),
    "schema-diff": Listed("intentc.cli.diff", "Classify every change to the JSON Schemas between two revisions "
                                              "(ERR breaking, WARN maybe-breaking, INFO compatible) and count the "
                                              "base documents each one breaks."),
    "diff": Listed("intentc.cli.diff", "Show what changes semantically between two revisions: intents, tenants "
                                       "and datasets (field by field, with positions), the dependency graph and, "
                                       "with --topology, the plan; with --kubeconfig/--context, where the live "
                                       "binding differs from the preview."),
    "compile": Listed("intentc.cli.compile", "Compile intents into Kubernetes manifests, plan.json and "
                                             "graph.json; exit 1 on errors."),
    "apply": Listed("intentc.cli.apply", "Compile, then server-side apply the result to a cluster, each intent as its prerequisites end."),
    "status": Listed("intentc.cli.status", "Show every intent's phase, planned and actual start, ETA and how "
                                           "far behind plan it is, from the cluster, re-planning what has not "
                                           "started on what the cluster has now."),
    "tune": Listed("intentc.cli.tune", "Write the batch recommended from live metrics (the daemon's, or "
                                       "Prometheus') into the intent files, keeping their comments and layout."),
    "fmt": Listed("intentc.cli.fmt", "Format *.intent files (idempotent; files with errors are never touched)."),
    "drift": Listed("intentc.cli.drift", "Compare the cluster with the compiled intents (read-only); "
                                         "exit 1 on drift."),
    "rollback": Listed("intentc.cli.drift", "Apply an earlier commit (default: the last known-good one) and "
                                            "quarantine the current one."),
    "daemon": Listed("intentc.cli.daemon", "Run the drift controller: follow a branch, apply, watch, detect, "
                                           "heal or roll back."),
    "watch": Listed("intentc.cli.daemon", "Recompile incrementally whenever an intent file changes."),
    "completion": Listed("intentc.cli.completion", "Print the shell completion script of bash, zsh, fish or "
                                                   "PowerShell."),
    "version": Listed("intentc.cli.version", "Print the version, the supported Kubernetes versions and which "
                                             "compiled speed-ups are on."),
    "topology": Listed("intentc.cli.topology", "Cluster topology: import node labels, inspect nvidia-smi "
                                               "matrices."),
}


def load_all() -> None:
    """Import every command module (what `intentc.cli` did on import before)."""
    for listed in LISTED.values():
        importlib.import_module(listed.module)


def _build(name: str) -> Any:
    """The click command typer makes for the command or group `name` registered on
    the app: typer's `get_group` run over a copy of the app holding that one entry,
    so that it is built exactly as when the whole app is."""
    one = copy.copy(app)
    one.registered_commands = [c for c in app.registered_commands if _name(c) == name]
    one.registered_groups = [g for g in app.registered_groups if g.name == name]
    group = typer.main.get_group(one)
    return group.commands[name]


def _name(info: Any) -> str:
    """The name typer gives a registered command (its function's, dashed, unless named)."""
    return str(info.name or typer.main.get_command_name(info.callback.__name__))


class LazyCommands(MutableMapping[str, Any]):
    """A group's commands by name: those typer built, then the `LISTED` ones, each
    imported and built the first time it is looked up.  Within `summaries()` an
    unbuilt command is looked up as a stub that has only its name and summary."""

    def __init__(self, built: Mapping[str, Any]) -> None:
        self._built = dict(built)
        self._names = list(LISTED) + [n for n in built if n not in LISTED]
        self._summaries = False

    def __getitem__(self, name: str) -> Any:
        if name in self._built:
            return self._built[name]
        if name not in self._names:
            raise KeyError(name)
        listed = LISTED[name]
        if self._summaries:
            return TyperCommand(name, help=listed.summary)
        importlib.import_module(listed.module)
        command = self._built[name] = _build(name)
        return command

    def __setitem__(self, name: str, command: Any) -> None:
        if name not in self._names:
            self._names.append(name)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    @contextlib.contextmanager
    def summaries(self) -> Iterator[None]:
        self._summaries = True
        try:
            yield
        finally:
            self._summaries = False


def _warn(message: str) -> None:
    typer.echo(f"intentc: warning: {message}", err=True)


class LazyGroup(TyperGroup):
    """The root group: its `commands` are a `LazyCommands`; listing them
    (`--help`, completing a command name) reads summaries, imports nothing."""

    def __init__(self, *, commands: Mapping[str, Any] | None = None, **attrs: Any) -> None:
        self.lazy = LazyCommands(commands or {})
        # typer declares a dict, click any mutable mapping; both only look commands up by name
        super().__init__(commands=cast(Any, self.lazy), **attrs)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.lazy)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Global options after the command, older spellings, bare --dry-run: put the way
        the commands declare them (cli/spellings.py) before click reads them; completion
        (resilient parsing) sees the words as typed."""
        if not ctx.resilient_parsing:
            from intentc.cli.spellings import rewrite

            args = rewrite(self, ctx, args, _warn)
        return list(super().parse_args(ctx, args))

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with self.lazy.summaries():
            super().format_commands(ctx, formatter)

    def shell_complete(self, ctx: Any, incomplete: str) -> Any:
        with self.lazy.summaries():
            return super().shell_complete(ctx, incomplete)


# `-h` is `--help` on every command (click contexts inherit this from the root).
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="intentc",
    help="GitOps compiler and drift controller for AI batch and inference workloads.",
    no_args_is_help=True,
    add_completion=True,       # --install-completion / --show-completion; `intentc completion SHELL` (cli/completion.py)
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings=CONTEXT_SETTINGS,
    cls=LazyGroup,             # a command's module is imported when that command runs
)

