import csv,sys,glob,statistics,collections,os
d=sys.argv[1]; names=sys.argv[2:]
t=collections.defaultdict(list)
for n in names:
    for f in glob.glob(f"{d}/{n}-*.csv"):
        for r in csv.DictReader(open(f)):
            t[(r['collective'],r['scope'],r['npes'],r['bytes'],n)].append(float(r['median_us']))
keys=sorted({k[:4] for k in t})
for k in keys:
    vals=[statistics.median(t[k+(n,)]) if t.get(k+(n,)) else float('nan') for n in names]
    print(" ".join(k), " ".join(f"{v:9.1f}" for v in vals), " ".join(f"{v/vals[0]:5.2f}" for v in vals[1:]), "runs", len(t[k+(names[0],)]))
