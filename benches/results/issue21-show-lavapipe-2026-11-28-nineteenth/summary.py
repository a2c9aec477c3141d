"""Median roofline_pct per row over the rounds' summaries (run.sh).

Each summary line: tag, collective, type, op, PEs, roofline_pct, wrong.
Prints one line per row: the median, the rounds' values, and the summed wrong.
"""
import statistics
import sys

rows = {}
for path in sys.argv[1:]:
    for line in open(path):
        f = line.split()
        if len(f) != 7:
            continue
        key = tuple(f[:5])
        rows.setdefault(key, []).append((float(f[5]), int(f[6])))
for key, vals in rows.items():
    pcts = [p for p, _ in vals]
    wrong = sum(w for _, w in vals)
    print(" ".join(key), f"median {statistics.median(pcts):.1f}",
          "rounds", " ".join(f"{p:.1f}" for p in pcts), f"wrong {wrong}")
