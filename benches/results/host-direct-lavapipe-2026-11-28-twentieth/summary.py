#!/usr/bin/env python3
"""Old (rounds) / new (direct) median us per row, from run.sh's CSVs.
Usage: summary.py OUTDIR"""
import csv, glob, os, sys
from collections import defaultdict
d = sys.argv[1]
t = defaultdict(dict)
for f in glob.glob(os.path.join(d, '*.csv')):
    mode, n, tag = os.path.basename(f)[:-4].split('-')
    for r in csv.DictReader(open(f)):
        assert r['wrong'] == '0', (f, r)
        key = (int(n), tag if not tag.startswith('r') else 'float', r['collective'], int(r['bytes']))
        t[key].setdefault(mode, []).append(float(r['median_us']))
print(f"{'npes':>4} {'type':>8} {'collective':>10} {'bytes':>8} {'old_us':>9} {'new_us':>9} {'old/new':>7}")
for k in sorted(t):
    o, n = t[k].get('old'), t[k].get('new')
    if not o or not n:
        continue
    # Two rounds for float: the best of each (the machine is noisy).
    o, n = min(o), min(n)
    print(f"{k[0]:>4} {k[1]:>8} {k[2]:>10} {k[3]:>8} {o:>9.1f} {n:>9.1f} {o / n:>7.2f}")
