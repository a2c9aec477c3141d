"""Median roofline_pct per row over the rounds' summaries (run.sh).

A row is named by its summary fields and #k, its k-th line of that name in
a round (#1 and #2 for the device forms' work_groups and work_group).

Each summary line: tag, collective, type, op, PEs, roofline_pct, wrong.
Prints one line per row: the median, the rounds' values, and the summed wrong.
"""
import statistics
import sys

rows = {}
for path in sys.argv[1:]:
    # The device rows name no scope: a key's k-th line in a round is its
    # k-th scope (work_groups, then work_group), the same in every round.
    seen = {}
    for line in open(path):
        f = line.split()
        if len(f) != 7:
            continue
        key = tuple(f[:5])
        k = seen.get(key, 0)
        seen[key] = k + 1
        rows.setdefault(key + (f"#{k + 1}",), []).append((float(f[5]), int(f[6])))
for key, vals in rows.items():
    pcts = [p for p, _ in vals]
    wrong = sum(w for _, w in vals)
    print(" ".join(key), f"median {statistics.median(pcts):.1f}",
          "rounds", " ".join(f"{p:.1f}" for p in pcts), f"wrong {wrong}")
