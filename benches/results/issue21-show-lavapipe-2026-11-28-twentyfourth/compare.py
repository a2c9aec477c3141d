import csv, glob, statistics, sys
def load(d):
    r = {}
    for f in glob.glob(f"{d}/r*/*.csv"):
        tag = f.split("/")[-1][:-4]
        for row in csv.DictReader(open(f)):
            k = (tag, row["collective"], row["scope"])
            r.setdefault(k, []).append((float(row["median_us"]), float(row["roofline_GBps"] or 0)))
    return r
a, b = load(sys.argv[1]), load(sys.argv[2])
for k in sorted(a):
    if k in b and k[2] == "host":
        ma = statistics.median(x[0] for x in a[k]); mb = statistics.median(x[0] for x in b[k])
        ba = statistics.median(x[1] for x in a[k]); bb = statistics.median(x[1] for x in b[k])
        print(f"{k[0]:26s} {k[1]:9s} us {ma:8.0f} -> {mb:8.0f} ({ma/mb:4.2f}x)  bar {ba:6.0f} -> {bb:6.0f}")
