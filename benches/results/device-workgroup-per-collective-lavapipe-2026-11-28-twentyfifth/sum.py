# Per scope and size class: the median over rows of old/new time (each row's median over the
# rounds), and per collective for work_group. Usage: python3 sum.py (in this directory)
import csv, glob, statistics
def load(v):
    r = {}
    for f in sorted(glob.glob(f"{v}-4-r*.csv")):
        for row in csv.DictReader(open(f)):
            k = (row["collective"], row["scope"], int(row["bytes"]))
            r.setdefault(k, []).append((float(row["median_us"]), int(row["wrong"] or 0)))
    return r
o, n = load("old"), load("new")
print("rows old", len(o), "new", len(n), "wrong", sum(w for v in list(o.values()) + list(n.values()) for _, w in v))
ratio = lambda k: statistics.median(t for t, _ in o[k]) / statistics.median(t for t, _ in n[k])
for scope in ["work_group", "work_groups"]:
    for small in [True, False]:
        ks = [k for k in o if k in n and k[1] == scope and (k[2] <= 4096) == small]
        rat = [ratio(k) for k in ks]
        print(scope, "<= 4 KiB" if small else "> 4 KiB", len(ks), "rows: old/new median %.2fx (%.2f-%.2f)" % (statistics.median(rat), min(rat), max(rat)))
for c in sorted({k[0] for k in o}):
    ks = [k for k in o if k in n and k[0] == c and k[1] == "work_group"]
    if ks:
        print(" ", c, "work_group %.2fx" % statistics.median(ratio(k) for k in ks))
