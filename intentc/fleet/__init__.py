"""One repository, many clusters (the Flux model): `clusters/*.yaml` says what each
cluster is (how to reach it, its topology, its render target, its labels); intents
pick clusters with `clusters:`; compile, drift and the daemon work per cluster.

Pure, like the rest of the compiler side: reading the cluster files and choosing
the intents of each cluster touch neither a cluster nor git (docs/fleets.md)."""
