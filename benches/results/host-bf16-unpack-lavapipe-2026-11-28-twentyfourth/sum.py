"""Median over rounds of each (PEs, bytes) row's median_us, old against new, with the rounds the
new build won. Usage: sum.py DIR [OLD NEW] (the CSVs' name prefixes; show and bf by default)."""
import csv, glob, statistics, sys, os
d = sys.argv[1]
def load(v):
    r = {}
    for f in sorted(glob.glob(os.path.join(d, f"{v}-*.csv"))):
        rnd = f.rsplit("-r", 1)[1]
        for row in csv.DictReader(open(f)):
            r.setdefault((int(row["npes"]), int(row["bytes"])), {})[rnd] = (float(row["median_us"]), int(row["wrong"]))
    return r
o, n = (load(v) for v in (sys.argv[2:4] if len(sys.argv) > 3 else ("show", "bf")))
for k in sorted(o):
    mo = statistics.median(v[0] for v in o[k].values()); mn = statistics.median(v[0] for v in n[k].values())
    won = sum(1 for r in n[k] if r in o[k] and n[k][r][0] < o[k][r][0])
    wrong = sum(v[1] for v in o[k].values()) + sum(v[1] for v in n[k].values())
    print(f"{k[0]} PEs {k[1]>>20} MiB: {mo:7.1f} -> {mn:7.1f} us ({mo/mn:.2f}x, new won {won}/{len(n[k])}) wrong {wrong}")
