#!/usr/bin/env python3
"""busbw of this session's host sweeps on the H200 and the share of torch's
copy that each row's least memory traffic reaches (bytes read plus written
that any implementation must move, as the twelfth and thirteenth sessions'
torch_pct.py count them, over the row's median time), against torch's
device-to-device copy at 1 GiB in call1 (torch.txt: 4265 GB/s read plus
written). Arms: old (a896a4f, 64-launch submissions, pieces of 64 MiB), new
(8404547, the code of bcc2228: pieces of 1 GiB on NVIDIA since eca5641), unitu32 and
unitu64 (VKSHMEM_WIDE_UNIT against one another, new bench), sweep (call2:
standard()'s sweep with --warmup-ms 300, two rounds). Per row: the median
over the runs of each run's median time, the busbw and % of torch at that
median, and the fastest run's %."""
import csv, glob, os, statistics, sys
TORCH = 4.265e12
here = os.path.dirname(os.path.abspath(__file__))
ARMS = {"old": "call1/old-{n}pe*.csv", "new": "call1/new-{n}pe*.csv",
        "unitu32": "call1/unitu32-{n}pe*.csv", "unitu64": "call1/unitu64-{n}pe*.csv",
        "sweep": "call2/sweep-{n}pe*.csv"}
def least(c, b, n):
    return {"broadcast": b + n * b, "collect": n * (b + n * b), "fcollect": n * (b + n * b),
            "alltoall": 2 * n * n * b, "alltoalls": 2 * n * n * b, "reduce": 2 * n * b}[c]
arms = sys.argv[1:] or list(ARMS)
for n in (2, 4, 8):
    for arm in arms:
        rows = {}
        for path in sorted(glob.glob(os.path.join(here, ARMS[arm].format(n=n)))):
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
            print(f"{n} {arm:7} {c:9} {b:>10} {len(us)} {m:9.1f} {alg * f / 1e9:7.0f} {pct:5.0f} {best:5.0f}")
