#!/usr/bin/env python3
"""busbw of call2's host sweeps and the share of torch's copy that each row's
least memory traffic reaches (bytes read plus written that any
implementation must move, as the twelfth session's torch_pct.py counts them,
over the row's median time, against torch's device-to-device copy at 1 GiB:
4262 GB/s read plus written in call1), for the two benches: old (a4b9a63,
submissions of at most 8 launches) and new (64 launches within one
descriptor pool, this session's first change; the windows' growth with the
device's range came after and is not in it). Per row: the median over the
runs of each run's median time, the busbw and % of torch at that median, and
the fastest run's %."""
import csv, glob, os, statistics
TORCH = 4.262e12
here = os.path.dirname(os.path.abspath(__file__))
def least(c, b, n):
    return {"broadcast": b + n * b, "collect": n * (b + n * b), "fcollect": n * (b + n * b),
            "alltoall": 2 * n * n * b, "alltoalls": 2 * n * n * b, "reduce": 2 * n * b}[c]
for n in (2, 4, 8):
    for arm in ("old", "new"):
        rows = {}
        for path in sorted(glob.glob(f"{here}/call2/{arm}-{n}pe*.csv")):
            with open(path) as f:
                for row in csv.DictReader(f):
                    c, b = row["collective"], int(row["bytes"])
                    rows.setdefault((c, b), []).append(float(row["median_us"]))
        print(f"# {n} PEs, {arm}: collective bytes runs median_us busbw_GBps pct_of_torch best_pct")
        for (c, b), us in sorted(rows.items()):
            m = statistics.median(us)
            alg = (b * n if c in ("collect", "fcollect", "alltoall", "alltoalls") else b) / (m * 1e-6)
            f = {"reduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(c, (n - 1) / n)
            pct = 100 * least(c, b, n) / (m * 1e-6) / TORCH
            best = 100 * least(c, b, n) / (min(us) * 1e-6) / TORCH
            print(f"{n} {arm:4} {c:9} {b:>10} {len(us)} {m:9.1f} {alg * f / 1e9:7.0f} {pct:5.0f} {best:5.0f}")
