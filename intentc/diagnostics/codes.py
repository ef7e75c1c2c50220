"""The catalogue of diagnostic codes.

Codes are stable: CI annotations, SARIF rule ids and users' suppressions
refer to them, so a code is never reused for a different meaning.  Ranges:

  E00xx  reading files            E01xx  DSL syntax
  E02xx  YAML and JSON Schema     E03xx  names and references
  E04xx  domain rules             E05xx  dependency graph
  E06xx  placement                E07xx  topology and nvidia-smi files
  E08xx  revisions and diffs       E09xx  tenancy
  W0xxx  warnings (same ranges)
"""

from __future__ import annotations

CODES: dict[str, str] = {
    # reading files
    "E0001": "path cannot be read",
    "E0002": "file is not valid UTF-8 text",
    "E0003": "file is binary, not text",
    "E0004": "file declares nothing",
    "E0005": "path or symbolic link leads outside the repository",
    "E0006": "not a regular file (FIFO, device, socket)",
    "E0007": "file larger than the size limit",
    "E0008": "too many errors in one file; the rest is not reported",
    # DSL syntax
    "E0101": "unexpected token",
    "E0102": "unexpected character",
    "E0103": "unexpected end of file",
    "E0104": "unterminated string",
    "E0105": "clause given twice in one block",
    "E0106": "required clause missing",
    "E0107": "invalid literal",
    "E0108": "formatter could not keep the file's meaning (intentc fmt bug)",
    # YAML and schema
    "E0201": "YAML syntax error",
    "E0202": "YAML aliases expand too much (alias bomb)",
    "E0203": "YAML nesting too deep",
    "E0204": "unknown apiVersion or kind",
    "E0205": "duplicate key in a YAML mapping",
    "E0206": "YAML document is not a mapping",
    "E0207": "YAML file holds too many values",
    "E0210": "required property missing",
    "E0211": "value has the wrong type",
    "E0212": "unknown property",
    "E0213": "value not among the allowed ones",
    "E0214": "value does not match the expected format",
    "E0215": "value out of range",
    "E0216": "too few or too many items",
    "E0219": "schema violation",
    # names and references
    "E0301": "unknown tenant",
    "E0302": "unknown dataset",
    "E0303": "unknown intent",
    "E0304": "name declared twice",
    # domain rules
    "E0401": "batch size out of range",
    "E0402": "auto batch maximum out of range",
    "E0403": "seq_len out of range",
    "E0404": "unknown kv_cache policy",
    "E0405": "kv_cache policy not allowed for this seq_len",
    "E0406": "unknown precision",
    "E0407": "unknown SLA class",
    "E0408": "unknown tenant tier",
    "E0409": "weight must be a positive integer",
    "E0410": "name is not a DNS-1123 label",
    "E0411": "invalid quantity",
    "E0412": "GPU count must be greater than zero",
    "E0413": "tenant quota must be greater than zero",
    "E0414": "tolerance must be in (0, 1]",
    "E0415": "invalid duration",
    "E0416": "unknown placement scope",
    "E0417": "invalid cron schedule",
    "E0418": "unknown drift policy",
    "E0419": "setting not valid for this action kind",
    "E0420": "unknown action kind or trigger",
    "E0421": "integer larger than the Kubernetes field holds (int32 or int64)",
    "E0422": "quantity Kubernetes would cap or round",
    "W0401": "GPU product not offered by any topology",
    "W0402": "model settings on an action that does not use them",
    # dependency graph
    "E0501": "dependency cycle",
    "E0503": "dataset produced by more than one intent",
    # placement
    "E0601": "intent cannot be placed",
    "W0601": "preferred placement scope not met",
    "W0602": "GPU intent without a duration: planned with the default for its kind",
    "W0603": "`within nvlink` placed on GPUs that no NVLink joins",
    # topology files, node import and nvidia-smi matrices
    "E0701": "nvidia-smi matrix line cannot be read",
    "E0702": "unknown link type in an nvidia-smi matrix cell",
    "E0703": "nvidia-smi matrix is not symmetric",
    "E0704": "nvidia-smi matrix device has no row, or two",
    "E0705": "file is not nvidia-smi topo -m output",
    "E0706": "invalid CPU or NUMA affinity value",
    "E0707": "NIC legend names an unknown NIC",
    "E0708": "topology node's GPU count differs from its nvidia-smi matrix",
    "E0709": "topology file must hold exactly one Topology document",
    "E0710": "node list cannot be read (expected kubectl get nodes -o json)",
    "E0711": "topology node domain names a level the topology does not have",
    "W0701": "node label value cannot be used",
    # revisions and diffs (intentc diff, intentc schema-diff)
    "E0801": "schema file is not valid JSON",
    "E0802": "schema beyond schema-diff's limits (nesting, enum size, catastrophic pattern)",
    # sizing, failure fallback, tag policies, the Intent CRD (issue 15)
    "E1001": "invalid parameter count",
    "E1002": "kv_reuse must be in [0, 1]",
    "E1003": "unknown throughput mode",
    "E1004": "slack out of range",
    "E1005": "retries out of range",
    "E1006": "unknown fallback",
    "E1007": "Job-only constraint on a serve action",
    "E1010": "model weights do not fit in one pod's GPUs",
    "E1011": "precision not allowed by the SLA class and tolerance",
    "E1020": "placement breaks a tag rule",
    "W1021": "tag is not a rule's tag but nearly one's",
    "W1001": "batch: auto cannot be sized (model size or GPU memory unknown)",
    "W1003": "Policy document outside policies/",
    # organisation rules in CEL (intentc.policy.cel_rules, cel_check; docs/rules.md)
    "E1030": "intent breaks an organisation rule",
    "W1030": "intent breaks an organisation rule of severity warning",
    "E1031": "organisation rule does not compile",
    "E1032": "organisation rule cannot be evaluated for an intent",
    "E1033": "organisation rule used up its evaluation budget",
    # fleets (intentc.fleet: clusters/*.yaml and the intents' clusters:)
    "E1120": "duplicate cluster name",
    "E1121": "a cluster needs exactly one of context and kubeconfig",
    "E1122": "cluster topology file not found",
    "E1123": "intent selects an unknown cluster",
    "E1124": "cluster selector label is not a valid Kubernetes label",
    "E1125": "no Cluster documents in the clusters directory",
    "E1126": "cluster kubeconfig file not found",
    "W1130": "intent selects no cluster",
    # tenancy (intentc.passes.tenancy, intentc.pipeline.holdback)
    "E0901": "tenant name is a reserved namespace",
    "E0902": "tenant group is a Kubernetes system group",
    "E0903": "serve GPU count does not divide into its replicas",
    "E0904": "SLA class above the tenant's ceiling",
    "W0901": "tenant held back: its intents were not rendered",
}


def describe(code: str) -> str:
    return CODES.get(code, code)
