"""The live forecast: every intent's phase, planned and actual times, and ETA.

`model` is the data (what was observed, what is forecast), `observe` turns
the API server's objects into an observation, `core.forecast` re-plans the
part that has not started on the live state with the existing planner.
All of it is pure: no cluster client, no clock (`now` is passed in), so the
same observation gives the same forecast in `intentc status`, the daemon and
the tests.  The package itself imports nothing, like `intentc.plan`.
"""
