"""Median us per call, mean of the rounds: kernels / host, from run.sh's CSVs."""
import collections, csv, glob, statistics as st
d = collections.defaultdict(list)
for f in glob.glob('*.csv'):
    mode, n, r = f[:-4].split('-')
    for row in csv.DictReader(open(f)):
        d[(int(n), row['collective'], int(row['bytes']), mode)].append(float(row['median_us']))
sizes = sorted({k[2] for k in d})
lab = lambda b: f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"
print("| PEs | collective | " + " | ".join(lab(b) for b in sizes) + " |")
print("|---|---|" + "---|" * len(sizes))
for n in sorted({k[0] for k in d}):
    for c in ("broadcast", "collect", "fcollect", "alltoall", "alltoalls", "reduce"):
        cells = []
        for b in sizes:
            k, h = st.mean(d[(n, c, b, 'kernels')]), st.mean(d[(n, c, b, 'host')])
            cells.append(f"{k:.0f} / {h:.0f}")
        print(f"| {n} | {c} | " + " | ".join(cells) + " |")
