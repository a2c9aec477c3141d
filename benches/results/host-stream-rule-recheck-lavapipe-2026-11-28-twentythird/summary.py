"""Median busbw (GB/s) over rounds per (npes, collective, bytes) for each VKSHMEM_HOST_STREAM
setting, with the ratio against auto and the rounds each setting beat auto in."""
import csv, glob, statistics, sys, os
d = sys.argv[1] if len(sys.argv) > 1 else "."
def load(pat):
    r = {}
    for f in sorted(glob.glob(os.path.join(d, pat))):
        rnd = f.rsplit("-r", 1)[1]
        for row in csv.DictReader(open(f)):
            k = (int(row["npes"]), row["collective"], int(row["bytes"]))
            r.setdefault(k, {})[rnd] = float(row["busbw_GBps"])
    return r
auto = load("auto-*.csv"); off = load("off-*.csv"); on = load("on/auto-*.csv")
for k in sorted(auto):
    a = statistics.median(auto[k].values()); line = f"{k} auto:{a:.0f}"
    for name, s in (("off", off), ("on", on)):
        if k in s:
            m = statistics.median(s[k].values())
            won = sum(1 for r, v in s[k].items() if r in auto[k] and v > auto[k][r])
            line += f" {name}:{m:.0f}({m/a:.2f},won {won})"
    print(line)
