#!/usr/bin/env python3
"""busbw of the host sweeps (run-1..3/host-*pe.csv) and the share of the torch
copy roofline each row's least memory traffic reaches (the bench's
least_traffic: bytes read plus written that any implementation must move,
over the row's median time, against torch's device-to-device copy, read plus
written, at 1 GiB: 4246-4273 GB/s in these runs). Median of the three runs."""
import csv, statistics, sys, os
TORCH = 4.25e12
def least(c, b, n):
    return {"broadcast": b + n * b, "collect": n * (b + n * b), "fcollect": n * (b + n * b),
            "alltoall": 2 * n * n * b, "alltoalls": 2 * n * n * b, "reduce": 2 * n * b}[c]
here = os.path.dirname(os.path.abspath(__file__))
for n in (2, 4, 8):
    rows = {}
    for r in ("run-1", "run-2", "run-3"):
        with open(f"{here}/{r}/host-{n}pe.csv") as f:
            for row in csv.DictReader(f):
                k = (row["collective"], int(row["bytes"]))
                rows.setdefault(k, []).append(float(row["median_us"]))
    print(f"# {n} PEs: collective bytes median_us(3 runs) busbw_GBps pct_of_torch_copy")
    for (c, b), us in rows.items():
        m = statistics.median(us)
        alg = (b * n if c in ("collect", "fcollect", "alltoall", "alltoalls") else b) / (m * 1e-6)
        f = {"reduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(c, (n - 1) / n)
        pct = 100 * least(c, b, n) / (m * 1e-6) / TORCH
        print(f"{n} {c:9} {b:>10} {m:9.1f} {alg * f / 1e9:7.0f} {pct:5.0f}  ({' '.join(f'{u:.0f}' for u in us)})")
