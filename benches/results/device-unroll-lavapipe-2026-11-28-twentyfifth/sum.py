# Per (collective, scope): median time and roofline_pct over the rounds, old against new.
# Usage: sum.py DIR [PREFIX] (files PREFIXold-*.csv and PREFIXnew-*.csv)
import csv, glob, os, statistics, sys
d = sys.argv[1]
pre = sys.argv[2] if len(sys.argv) > 2 else ""
def load(v):
    r = {}
    for f in sorted(glob.glob(os.path.join(d, f"{pre}{v}-*.csv"))):
        for row in csv.DictReader(open(f)):
            k = (int(row["npes"]), row["collective"], row["scope"])
            r.setdefault(k, []).append((float(row["median_us"]), float(row["roofline_pct"] or 0), int(row["wrong"] or 0)))
    return r
o, n = load("old"), load("new")
print("row: median us old/new (speedup) | roofline_pct old/new | wrong")
for k in sorted(o):
    m = lambda s, i: statistics.median(v[i] for v in s[k])
    if k in n:
        print(k, f"us {m(o,0):.1f}/{m(n,0):.1f} ({m(o,0)/m(n,0):.2f}x)", f"pct {m(o,1):.1f}/{m(n,1):.1f}", "wrong", sum(v[2] for v in o[k] + n[k]))
