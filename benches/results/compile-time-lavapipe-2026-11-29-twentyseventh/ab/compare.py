# Medians of each row's per-run medians, A (336b5a1's release build) against F (89a4d61's).
import csv,glob,statistics,collections,os
here=os.path.dirname(os.path.abspath(__file__))
d=collections.defaultdict(list); wrong=0
for f in glob.glob(os.path.join(here,'*.csv')):
    tag,b,r=os.path.basename(f)[:-4].split('-')
    for row in csv.DictReader(open(f)):
        d[(tag,row['collective'],row['scope'],int(row['bytes']),b)].append(float(row['median_us']))
        wrong+=int(row['wrong'] or 0)
print('wrong',wrong)
for k in sorted({k[:4] for k in d}):
    a=d.get(k+('A',),[]); f=d.get(k+('F',),[])
    if a and f:
        ma,mf=statistics.median(a),statistics.median(f)
        print(f"{k[1]:9} {k[2]:10} {k[3]:8} A {ma:9.1f} F {mf:9.1f}  F/A {mf/ma:5.2f}  (runs {len(a)}/{len(f)})")
