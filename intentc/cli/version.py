"""`intentc version`: the release, the Kubernetes versions it supports, and which
compiled speed-ups this installation runs (`intentc --version` prints the first line)."""

from __future__ import annotations

import enum
import json
from typing import Any

import typer

from intentc import __version__
from intentc.cli.app import app
from intentc.cli.common import format_option


class VersionFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


def version_info() -> dict[str, Any]:
    """What `intentc version -o json` prints."""
    from intentc.compact import SPEEDUPS, compiled_module
    from intentc.render.capabilities import DEFAULT_KUBE_VERSION, MINIMUM_KUBE_VERSION, TESTED_KUBE_VERSION

    return {
        "version": __version__,
        "kubernetes": {"minimum": str(MINIMUM_KUBE_VERSION), "default": str(DEFAULT_KUBE_VERSION),
                       "tested": str(TESTED_KUBE_VERSION)},
        "speedups": {name: compiled_module(module, off) is not None for name, module, off in SPEEDUPS},
    }


def version_text(info: dict[str, Any]) -> str:
    kube = info["kubernetes"]
    on = ", ".join(f"{name} {'on' if enabled else 'off'}" for name, enabled in info["speedups"].items())
    return (f"intentc {info['version']}\n"
            f"Kubernetes: {kube['minimum']} and later (compile's default target {kube['default']}; "
            f"tested on {kube['tested']})\n"
            f"compiled speed-ups: {on}\n")


@app.command(epilog="""Examples:

  intentc version

  intentc version -o json | jq .speedups

A speed-up is off when its C module was not built (the install says so) or
its INTENTC_PURE_YAML / INTENTC_PURE_DSL variable is 1; the Python code
beside it then runs, with the same results.
""")
def version(
    format: VersionFormat = format_option(VersionFormat.TEXT),
) -> None:
    """Print the version, the supported Kubernetes versions and which compiled speed-ups are on."""
    info = version_info()
    if format is VersionFormat.JSON:
        typer.echo(json.dumps(info, indent=2, sort_keys=True))
    else:
        typer.echo(version_text(info), nl=False)
