import csv, glob, statistics, sys, os
d = sys.argv[1]
def load(v):
    r = {}
    for f in sorted(glob.glob(os.path.join(d, f"{v}-*.csv"))):
        rnd = f.rsplit("-r", 1)[1]
        for row in csv.DictReader(open(f)):
            k = (int(row["npes"]), row["collective"])
            r.setdefault(k, {})[rnd] = (float(row["median_us"]), float(row["roofline_pct"] or 0), float(row["roofline_GBps"] or 0), int(row["wrong"]))
    return r
o, n = load(sys.argv[2] if len(sys.argv) > 3 else "old"), load(sys.argv[3] if len(sys.argv) > 3 else "new")
print("row: median us old/new | roofline_pct old/new (median over rounds) | bar GB/s old/new | wrong")
for k in sorted(o):
    f = lambda s, i: statistics.median(v[i] for v in s[k].values())
    print(k, f"us {f(o,0):.0f}/{f(n,0):.0f}", f"pct {f(o,1):.1f}/{f(n,1):.1f}", "rounds new", [round(v[1],1) for v in n[k].values()], f"bar {f(o,2):.0f}/{f(n,2):.0f}", "wrong", sum(v[3] for v in o[k].values())+sum(v[3] for v in n[k].values()))
