"""intentc: a GitOps compiler and drift controller for AI workloads on Kubernetes."""

__version__ = "0.1.0"
