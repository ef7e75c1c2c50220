"""Which kubeconfig files to read, and how several of them merge — kubectl's rules.

`KUBECONFIG` may list several files (separated by `os.pathsep`, ':' on
Linux).  kubectl merges them: files that do not exist are skipped; for
clusters, users and contexts the first file that defines a name wins; the
current context is the first one any file sets.  `--kubeconfig` names exactly
one file, as in kubectl.

The `kubernetes` client's own merger (`KubeConfigMerger`) keeps every
cluster, user and context with the file it came from (so relative
certificate paths resolve next to their own file) and already lets the
first definition of a name win; it differs from kubectl only for
`current-context`, which it takes from the last file that sets it.  This
module uses that merger and applies kubectl's rule for the current context.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import yaml

from intentc.kube.errors import ConfigError

if TYPE_CHECKING:
    from kubernetes import client as k8s

DEFAULT_KUBECONFIG = "~/.kube/config"


@dataclass(frozen=True)
class KubeconfigFiles:
    """The kubeconfig files to merge, in precedence order, and how they were chosen."""

    files: tuple[str, ...]          # existing files only
    wanted: tuple[str, ...]         # every file asked for, for messages
    explicit: bool                  # --kubeconfig (one file, must exist)


def kubeconfig_files(flag: str | None, environ: Mapping[str, str] = os.environ) -> KubeconfigFiles:
    """The files `--kubeconfig`, else `$KUBECONFIG`, else ~/.kube/config, name."""
    if flag is not None:
        path = os.path.expanduser(flag)
        return KubeconfigFiles((path,) if Path(path).exists() else (), (path,), True)
    listed = environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    wanted = tuple(os.path.expanduser(p) for p in listed.split(os.pathsep) if p)
    seen: list[str] = []
    for p in wanted:                     # kubectl ignores duplicates and files that do not exist
        if p not in seen and Path(p).exists():
            seen.append(p)
    return KubeconfigFiles(tuple(seen), wanted, False)


def read_documents(files: tuple[str, ...]) -> list[dict[str, object]]:
    """Each kubeconfig file as a mapping; a ConfigError in intentc's words (the file, what
    is wrong with it: never its content, which holds credentials) for one that cannot be
    read, is not YAML, or is not a mapping."""
    docs: list[dict[str, object]] = []
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except OSError as e:
            raise ConfigError(f"cannot read kubeconfig {path}: {e.strerror or e}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"kubeconfig {path} is not UTF-8 text") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            raise ConfigError(f"kubeconfig {path} is not valid YAML{where}") from None
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            raise ConfigError(f"kubeconfig {path} is not a kubeconfig: it holds a YAML "
                              f"{'list' if isinstance(doc, list) else 'scalar'}, not a mapping")
        docs.append(doc)
    return docs


def context_names(docs: list[dict[str, object]]) -> list[str]:
    """The context names the files define, first definition first."""
    names: list[str] = []
    for doc in docs:
        listed = doc.get("contexts")
        for entry in listed if isinstance(listed, list) else []:
            name = entry.get("name") if isinstance(entry, dict) else None
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


def first_current_context(files: tuple[str, ...]) -> str | None:
    """kubectl's current context: the first non-empty `current-context` of the files, in order."""
    for doc in read_documents(files):
        if doc.get("current-context"):
            return str(doc["current-context"])
    return None


def _unknown_context(what: str, context: str, files: tuple[str, ...], names: list[str]) -> ConfigError:
    from intentc.diagnostics.suggest import did_you_mean

    available = f"available: {', '.join(names)}" if names else "it defines no contexts"
    return ConfigError(f"{what} {context} not found in {os.pathsep.join(files)}{did_you_mean(context, names)} "
                       f"({available})")


def load_merged(files: tuple[str, ...], context: str | None, cfg: k8s.Configuration) -> None:
    """Fill `cfg` from the merged kubeconfig `files` (at least one), using `context`
    or the merged current context.  Raises ConfigError for a file that is not a
    kubeconfig or a context it does not define, and the client's ConfigException,
    OSError or ValueError on other problems."""
    from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger

    names = context_names(read_documents(files))
    if context is not None and context not in names:
        raise _unknown_context("context", context, files, names)
    merger = KubeConfigMerger(os.pathsep.join(files))
    current = first_current_context(files)
    if context is None and current is not None and current not in names:
        raise _unknown_context("current-context", current, files, names)
    if current is not None:
        merger.config.value["current-context"] = current
    elif context is None:
        raise ConfigError(f"no current-context is set in {', '.join(files)} (pass --context)")
    KubeConfigLoader(config_dict=merger.config, active_context=context,
                     config_base_path=None).load_and_set(cfg)
