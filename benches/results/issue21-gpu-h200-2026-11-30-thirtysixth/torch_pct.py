#!/usr/bin/env python3
"""This session's H200 rows (call1/): the busbw sweep (two rounds, --warmup-ms
300) as % of torch's copy at 1 GiB (call1/torch.txt: 4267 GB/s read plus
written), each row's least memory traffic over the median of the rounds'
median times, as the eighteenth session's torch_pct.py counts it; then the
bench and launcher of e931804 (new) against d6275b8 (old: before the launch
read its device error words in its own submission, 89a192d), interleaved in
two rounds at 16 B to 16 MiB on 1, 2 and 4 PEs (median of each round's median
time, us, and old/new)."""
import csv, glob, os, statistics
TORCH = 4.267e12
here = os.path.dirname(os.path.abspath(__file__))
def least(c, b, n):
    return {"broadcast": b + n * b, "collect": n * (b + n * b), "fcollect": n * (b + n * b),
            "alltoall": 2 * n * n * b, "alltoalls": 2 * n * n * b, "reduce": 2 * n * b}[c]
def rows(pattern):
    out = {}
    for path in sorted(glob.glob(os.path.join(here, pattern))):
        with open(path) as f:
            for r in csv.DictReader(f):
                out.setdefault((int(r["npes"]), r["collective"], int(r["bytes"])), []).append(float(r["median_us"]))
    return out
print("# sweep: npes collective bytes rounds median_us pct_of_torch best_pct")
for (n, c, b), us in sorted(rows("call1/sweep-*pe-r*.csv").items()):
    m = statistics.median(us)
    print(f"{n} {c:9} {b:>10} {len(us)} {m:9.1f} {100 * least(c, b, n) / (m * 1e-6) / TORCH:4.0f} "
          f"{100 * least(c, b, n) / (min(us) * 1e-6) / TORCH:4.0f}")
old, new = rows("call1/old-small-*.csv"), rows("call1/new-small-*.csv")
print("# old (d6275b8) against new (e931804): npes collective bytes old_us new_us old/new")
for k in sorted(old):
    if k in new:
        o, w = statistics.median(old[k]), statistics.median(new[k])
        print(f"{k[0]} {k[1]:9} {k[2]:>10} {o:7.1f} {w:7.1f} {o / w:5.2f}")
