"""What a pull request changes, for reviewers: `intentc diff` and `intentc schema-diff`.

Pure: every function here takes plain data (file contents, blob listings,
compiled programs); reading revisions is `intentc.vcs.gitrepo`'s job.

  sides.py, cache.py      compile two trees, parsing each git blob once (cached by blob SHA)
  intents.py              semantic IR diff of declarations (deepdiff), renames, positions
  graph_diff.py           edges, cycles and waves of the dependency graph
  plan_diff.py            placements, capacity and fair share on one topology
  impact.py               capacity / reschedule / restart / metadata-only per intent
  report.py, format.py    `DiffReport` and its text / json / markdown views
  schema_rules.py         the schema-diff rule catalogue (stable ids, severities)
  schema_refs.py          one revision's schemas with `$ref`s resolved
  schema_diff.py          walk of both revisions -> classified findings with fingerprints
  schema_inline.py        self-contained fragments (`$ref`s inlined) to decide and sample on
  schema_prove.py         sound proof that a change admits every value it admitted before
  schema_witness.py       counter-examples: boundary values, then hypothesis-jsonschema sampling
  schema_verdict.py       each finding's verdict: INFO proved, ERR with a counter-example, else WARN
  schema_impact.py        which base documents (YAML and DSL) a finding breaks, with positions
  schema_report.py, schema_format.py   `SchemaReport` and its text / json / markdown / github / sarif views
"""
