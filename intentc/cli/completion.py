"""`intentc completion SHELL`: print that shell's completion script.

The scripts are typer's, which its completion protocol (`_INTENTC_COMPLETE=
complete_bash`, ...) answers; click's own classes print scripts for click's
protocol, which typer's applications do not speak.  typer offers them only
through `--show-completion`, which takes the shell from the process tree
(shellingham) rather than from its argument: `intentc --show-completion zsh`
run from bash printed the bash script.  So this module — and only this
module — calls typer's internal `get_completion_script`;
tests/test_cli_conventions.py fails loudly when a typer release moves it.
"""

from __future__ import annotations

import enum

import typer

from intentc.cli.app import app

PROG = "intentc"
COMPLETE_VAR = "_INTENTC_COMPLETE"      # what typer derives from the program name


class Shell(str, enum.Enum):
    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"
    POWERSHELL = "powershell"


def completion_script(shell: Shell) -> str:
    """The completion script of `shell` for the `intentc` program."""
    from typer._completion_shared import get_completion_script

    return str(get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell.value))


@app.command(epilog="""Examples:

  intentc completion bash > ~/.local/share/bash-completion/completions/intentc

  intentc completion zsh > ~/.zfunc/_intentc      # with fpath+=~/.zfunc before compinit

  intentc completion fish > ~/.config/fish/completions/intentc.fish

  intentc completion powershell >> $PROFILE

`intentc --install-completion` writes the script of the shell it runs in
and sources it from that shell's start-up file.
""")
def completion(
    shell: Shell = typer.Argument(..., metavar="SHELL", help="bash, zsh, fish or powershell."),
) -> None:
    """Print the shell completion script of bash, zsh, fish or PowerShell."""
    typer.echo(completion_script(shell))
