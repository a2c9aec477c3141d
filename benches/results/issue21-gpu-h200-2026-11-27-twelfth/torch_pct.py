#!/usr/bin/env python3
"""busbw of the host sweeps and the share of torch's copy that each row's least
memory traffic reaches (bytes read plus written that any implementation must
move, as the sixth session's torch_pct.py counts them, over the row's median
time, against torch's device-to-device copy at 1 GiB: 4237-4265 GB/s read plus
written in these calls), for the two arms of the wide copies' and pushes'
workgroup: 64 (the default before this session) and auto (256 on the GPU).

Arm 64: call2 and call3 wg64-*. Arm auto: call2 and call3 wgauto-* and call3
host-*pe (call2's auto arm ran the reductions in workgroups of 256 too, so its
reduce rows are left out; since call3 both arms run them in 64). Per row: the
median over the runs of each run's median time, the busbw and % of torch at
that median, and the fastest run's % (the 4-PE broadcast and collect run at
one of two speeds per job, see README.md)."""
import csv, glob, os, statistics
TORCH = 4.25e12
here = os.path.dirname(os.path.abspath(__file__))
def least(c, b, n):
    return {"broadcast": b + n * b, "collect": n * (b + n * b), "fcollect": n * (b + n * b),
            "alltoall": 2 * n * n * b, "alltoalls": 2 * n * n * b, "reduce": 2 * n * b}[c]
def files(arm, n):
    if arm == "64":
        return sorted(glob.glob(f"{here}/call[23]/wg64-{n}pe*.csv"))
    return sorted(glob.glob(f"{here}/call[23]/wgauto-{n}pe*.csv")) + [f"{here}/call3/host-{n}pe.csv"]
for n in (2, 4, 8):
    for arm in ("64", "auto"):
        rows = {}
        for path in files(arm, n):
            with open(path) as f:
                for row in csv.DictReader(f):
                    c, b = row["collective"], int(row["bytes"])
                    if b < (4 << 20):
                        continue
                    if arm == "auto" and c == "reduce" and "/call2/" in path:
                        continue
                    rows.setdefault((c, b), []).append(float(row["median_us"]))
        print(f"# {n} PEs, workgroup {arm}: collective bytes runs median_us busbw_GBps pct_of_torch best_pct")
        for (c, b), us in sorted(rows.items()):
            m = statistics.median(us)
            alg = (b * n if c in ("collect", "fcollect", "alltoall", "alltoalls") else b) / (m * 1e-6)
            f = {"reduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(c, (n - 1) / n)
            pct = 100 * least(c, b, n) / (m * 1e-6) / TORCH
            best = 100 * least(c, b, n) / (min(us) * 1e-6) / TORCH
            print(f"{n} {arm:4} {c:9} {b:>10} {len(us)} {m:9.1f} {alg * f / 1e9:7.0f} {pct:5.0f} {best:5.0f}")
