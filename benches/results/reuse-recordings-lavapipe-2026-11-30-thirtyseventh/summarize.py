"""Reuse on against off: the median over rounds of each row's median time (us),
off/on, and the record phase's median (us), from out/*.csv and out/*.txt."""
import csv, glob, re, statistics, collections, sys
d = sys.argv[1] if len(sys.argv) > 1 else "out"
t = collections.defaultdict(list)   # (n, coll, bytes, mode) -> medians
rec = collections.defaultdict(list)
wrong = 0
for f in glob.glob(f"{d}/r*-n*-*.csv"):
    m = re.search(r"r(\d+)-n(\d+)-(on|off)\.csv", f)
    n, mode = int(m.group(2)), m.group(3)
    for row in csv.DictReader(open(f)):
        t[(n, row["collective"], int(row["bytes"]), mode)].append(float(row["median_us"]))
        wrong += int(row["wrong"] or 0)
    for line in open(f[:-4] + ".txt"):
        p = re.search(r"# phases (\S+) (\d+) B: .*record ([0-9.]+)", line)
        if p:
            rec[(n, p.group(1), int(p.group(2)), mode)].append(float(p.group(3)))
print(f"wrong={wrong}")
print(f"{'PEs':>3} {'collective':>10} {'bytes':>8} {'off_us':>8} {'on_us':>8} {'off/on':>6} {'rec_off':>7} {'rec_on':>6}")
keys = sorted({k[:3] for k in t})
for k in keys:
    off, on = statistics.median(t[k + ("off",)]), statistics.median(t[k + ("on",)])
    ro = statistics.median(rec[k + ("off",)]) if rec[k + ("off",)] else float("nan")
    rn = statistics.median(rec[k + ("on",)]) if rec[k + ("on",)] else float("nan")
    print(f"{k[0]:>3} {k[1]:>10} {k[2]:>8} {off:8.1f} {on:8.1f} {off/on:6.2f} {ro:7.1f} {rn:6.1f}")
