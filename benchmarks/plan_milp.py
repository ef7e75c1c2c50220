"""Optima for bench_plan.py's small instances, by scipy's MILP solver (HiGHS).

Two references, both under intentc's hard constraints (gangs all or nothing,
`within` keeps a job inside one domain of that level, product/memory filters,
node capacity, tenant quotas):

`policy_optimum`, the same admission policy with a perfect packer
    Jobs are offered in intentc's own order (SLA class, weighted fair share,
    smaller gangs first; `FairShare.order`), and a job is admitted whenever
    *some* placement of everything admitted so far plus this job exists,
    however the earlier jobs would have to be rearranged.  What intentc
    misses against it is lost to placement alone: the target of the issue.

`unconstrained_optimum`, no admission policy at all
    Lexicographic: the most P0 jobs, then the most P1, P2 and P3 jobs, then
    the most GPUs.  It ignores fair share, so it may starve a tenant to fit
    more jobs; it bounds every policy from above and is reported for scale.

Each then minimises, with its job set fixed, the jobs spanning NVLink domains
and then the idle GPUs on used nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_matrix, lil_matrix, vstack

from benchmarks.plan_baselines import terms_of
from benchmarks.plan_workload import SLA_CLASSES, sla_of
from intentc import ir
from intentc.plan.admission import FairShare
from intentc.plan.cluster import Cluster
from intentc.plan.placer import Request
from intentc.topology.load import LoadedTopology

Row = tuple[dict[int, float], float, float]      # coefficients, lower bound, upper bound
INF = np.inf


class _Vars:
    def __init__(self) -> None:
        self.n = 0
        self.integral: list[int] = []
        self.upper: list[float] = []

    def add(self, upper: float) -> int:
        self.integral.append(1)
        self.upper.append(upper)
        self.n += 1
        return self.n - 1


def _matrix(rows: list[Row], n: int) -> tuple[csr_matrix, np.ndarray, np.ndarray]:
    a = lil_matrix((len(rows), n))
    lo, hi = np.empty(len(rows)), np.empty(len(rows))
    for r, (coef, lb, ub) in enumerate(rows):
        for col, val in coef.items():
            a[r, col] = val
        lo[r], hi[r] = lb, ub
    return a.tocsr(), lo, hi


class Model:
    """Every GPU job of a program on every eligible node, as 0/1 and integer variables.

    y[j]: job j placed; x[j, n]: its GPUs on node n; z: the one domain at its
    `within` level it uses; w: the NVLink domains it touches, sigma[j]: it
    touches more than one; u[n]: node n is used.
    """

    def __init__(self, program: ir.Program, topo: LoadedTopology, time_limit: float) -> None:
        cluster = Cluster(topo.topology, lambda n: topo.matrix(n.name))
        self.time_limit = time_limit
        self.jobs = jobs = [i for i in program.intents if i.gpu_count]
        self.nodes = nodes = [n for n in cluster.nodes if n.capacity]
        v = self.vars = _Vars()
        self.y = y = [v.add(1) for _ in jobs]
        self.u = u = [v.add(1) for _ in nodes]
        x: dict[tuple[int, int], int] = {}
        self.sigma: list[int] = []
        rows: list[Row] = []
        for j, intent in enumerate(jobs):
            req = Request.of(intent)
            view = cluster.view(req.filter)
            depth = cluster.depth_of(req.within) if req.within else 0
            k = req.count
            ok = [(ni, n) for ni, n in enumerate(nodes) if view.eligible[cluster.nodes.index(n)]]
            for ni, n in ok:
                x[j, ni] = v.add(min(k, n.capacity))
            self.sigma.append(v.add(1))
            rows.append(({**{x[j, ni]: 1.0 for ni, _ in ok}, y[j]: -float(k)}, 0.0, 0.0))   # gang
            doms: dict[int, list[int]] = {}
            nvs: dict[int, list[int]] = {}
            for ni, n in ok:
                doms.setdefault(n.leaf.at_depth(depth).id, []).append(ni)
                nvs.setdefault(n.leaf.at_depth(cluster.nvlink_depth).id, []).append(ni)
            z = {d: v.add(1) for d in doms}
            for d, members in doms.items():
                for ni in members:
                    rows.append(({x[j, ni]: 1.0, z[d]: -float(min(k, nodes[ni].capacity))}, -INF, 0.0))
            rows.append(({**{z[d]: 1.0 for d in doms}, y[j]: -1.0}, -INF, 0.0))             # one domain
            w = {d: v.add(1) for d in nvs}
            for d, members in nvs.items():
                for ni in members:
                    rows.append(({x[j, ni]: 1.0, w[d]: -float(min(k, nodes[ni].capacity))}, -INF, 0.0))
            rows.append(({**{w[d]: 1.0 for d in nvs}, self.sigma[j]: -float(len(nvs))}, -INF, 1.0))
        for ni, n in enumerate(nodes):
            on_node = {x[j, m]: 1.0 for (j, m) in x if m == ni}
            rows.append(({**on_node, u[ni]: -float(n.capacity)}, -INF, 0.0))                 # capacity, used
        for t in program.tenants:
            if t.quota_gpus is not None:
                rows.append(({y[j]: float(i.gpu_count) for j, i in enumerate(jobs) if i.tenant == t.name},
                             -INF, float(t.quota_gpus)))
        self.base = _matrix(rows, v.n)
        self.statuses: list[int] = []

    def solve(self, objective: dict[int, float], extra: list[Row]) -> Any:
        n = self.vars.n
        a, lo, hi = self.base
        if extra:
            ea, elo, ehi = _matrix(extra, n)
            a, lo, hi = vstack([a, ea]).tocsr(), np.concatenate([lo, elo]), np.concatenate([hi, ehi])
        c = np.zeros(n)
        for col, val in objective.items():
            c[col] = val
        res = milp(c, integrality=np.array(self.vars.integral), bounds=Bounds(np.zeros(n), np.array(self.vars.upper)),
                   constraints=LinearConstraint(a, lo, hi),
                   options={"time_limit": self.time_limit, "disp": False})
        self.statuses.append(res.status)
        return res

    def placed(self, j: int) -> Row:
        return ({self.y[j]: 1.0}, 1.0, INF)

    def finish(self, fixed: list[Row], chosen: list[int]) -> dict[str, object]:
        """With the job set fixed, minimise NVLink-spanning jobs, then idle GPUs on used nodes."""
        cap_total = float(sum(n.capacity for n in self.nodes) + 1)
        res = self.solve({**{s: cap_total for s in self.sigma},
                          **{self.u[ni]: float(n.capacity) for ni, n in enumerate(self.nodes)}}, fixed)
        by_sla = {s: 0 for s in SLA_CLASSES}
        for j in chosen:
            by_sla[sla_of(self.jobs[j])] += 1
        gpus = sum(self.jobs[j].gpu_count for j in chosen)
        out: dict[str, object] = {"placed_by_sla": by_sla, "placed_jobs": len(chosen), "placed_gpus": gpus}
        if res.x is not None:
            used = np.round(res.x[self.u]).astype(int)
            out["jobs_spanning_nvlink_domains"] = int(np.round(res.x[self.sigma]).sum())
            out["idle_gpus_on_used_nodes"] = int(sum(n.capacity for n, on in zip(self.nodes, used) if on) - gpus)
        out["proven_optimal"] = all(s in (0, 2) for s in self.statuses)     # optimal, or proven infeasible
        return out


def policy_optimum(program: ir.Program, topo: LoadedTopology, time_limit: float) -> dict[str, object]:
    model = Model(program, topo, time_limit)
    index = {i.name: j for j, i in enumerate(model.jobs)}
    fair = FairShare(terms_of(program))
    chosen: list[int] = []
    fixed: list[Row] = []
    for intent in fair.order(model.jobs, {}):
        if fair.over_quota(intent.tenant, intent.gpu_count):
            continue
        j = index[intent.name]
        res = model.solve({}, fixed + [model.placed(j)])
        if res.status == 0 and res.x is not None:
            chosen.append(j)
            fixed.append(model.placed(j))
            fair.charge(intent.tenant, intent.gpu_count)
        elif res.status != 2:                        # 2: proven infeasible; anything else is unknown
            return {"status": res.message}
    return model.finish(fixed, sorted(chosen))


def unconstrained_optimum(program: ir.Program, topo: LoadedTopology, time_limit: float) -> dict[str, object]:
    model = Model(program, topo, time_limit)
    fixed: list[Row] = []
    for sla in SLA_CLASSES:
        members = {model.y[j]: 1.0 for j, i in enumerate(model.jobs) if sla_of(i) == sla}
        if not members:
            continue
        res = model.solve({col: -1.0 for col in members}, fixed)
        if res.x is None:
            return {"status": res.message}
        fixed.append((members, float(round(-res.fun)), INF))
    gpus_row = {model.y[j]: float(i.gpu_count) for j, i in enumerate(model.jobs)}
    res = model.solve({col: -c for col, c in gpus_row.items()}, fixed)
    if res.x is None:
        return {"status": res.message}
    chosen = [j for j, on in enumerate(np.round(res.x[model.y]).astype(int)) if on]
    return model.finish([model.placed(j) for j in chosen], chosen)
