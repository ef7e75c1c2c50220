"""What the target Kubernetes version can take, like Helm's `Capabilities.KubeVersion`.

Rendering is pure, so the version is an input: `intentc apply` asks the
server, `intentc compile` takes `--kube-version` (default: the oldest
version intentc supports, 1.33, so compiled manifests apply everywhere it
is supported).  Servers older than that are refused with a clear message:
1.33 is the oldest release still in upstream support when this was decided,
and every field intentc renders today (Indexed Jobs, CronJob `batch/v1`,
`podFailurePolicy`) is served from it on.
A field a server does not know is rejected by server-side apply, which is
why version-dependent fields are decided here and nowhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"^v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.\d+)?(?:[-+].*)?$")


@dataclass(frozen=True, order=True)
class KubeVersion:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> "KubeVersion":
        """Accepts "1.20", "v1.20.2", "1.27.3-gke.100"; raises ValueError otherwise."""
        m = _VERSION.match(text.strip())
        if not m:
            raise ValueError(f"not a Kubernetes version: {text!r} (expected MAJOR.MINOR, e.g. 1.29)")
        return cls(int(m["major"]), int(m["minor"]))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def at_least(self, major: int, minor: int) -> bool:
        return (self.major, self.minor) >= (major, minor)

    @property
    def supported(self) -> bool:
        return self >= MINIMUM_KUBE_VERSION

    @property
    def dra_v1(self) -> bool:
        """`resource.k8s.io/v1` (DRA GA) is served from 1.34."""
        return self.at_least(1, 34)


MINIMUM_KUBE_VERSION = KubeVersion(1, 33)
DEFAULT_KUBE_VERSION = MINIMUM_KUBE_VERSION
# The release the cluster tests run on (hack/testenv/kubernetes/go.mod; `intentc version` says it).
TESTED_KUBE_VERSION = KubeVersion(1, 37)


def unsupported_message(version: KubeVersion, where: str = "the cluster") -> str:
    return (f"{where} is Kubernetes {version}; intentc supports {MINIMUM_KUBE_VERSION} and later "
            f"(older releases are out of upstream support)")
