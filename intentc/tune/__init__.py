"""Batch sizes learned from the running system, proposed to git (docs/sizing.md, "Tuning from live metrics").

`batch: auto` is sized once, at compile time, from declared numbers.  This
package closes the loop the GitOps way, as the Vertical Pod Autoscaler does
in recommendation mode: it reads what serving intents do (P99 latency, GPU
memory used, OOM kills) from Prometheus, recommends a batch, and never
changes a running workload; `intentc tune` writes the recommendation into
the intent files so it arrives as a reviewed change.

* `recommend`, `subjects`, `rewrite` decide and are pure: observations and
  the intent in, a recommendation or new source text out.
* `queries` says what is asked (PromQL templates, SLA latency targets,
  hysteresis) and reads the configuration file.
* `prometheus` and `observe` act: HTTP to Prometheus' query API.

The daemon (`daemon/tune_pass.py`) publishes recommendations in the Intent
objects' status; `cli/tune.py` turns them into file edits.
"""
