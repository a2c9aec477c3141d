import csv,glob,collections,sys,statistics as st
d=collections.defaultdict(list); wrong=0
for f in glob.glob(sys.argv[1]+'/*.csv'):
    v,n,ip,r=f.split('/')[-1][:-4].split('-')
    for row in csv.DictReader(open(f)):
        d[(v,int(n),ip,int(row['bytes']))].append(float(row['median_us']))
        if row['wrong'] not in ('0',''): wrong+=1
vs=sys.argv[2].split(',')
print('wrong rows:',wrong)
print(f"{'n':>2} {'ip':>7} {'bytes':>8} "+" ".join(f"{v:>14}" for v in vs))
for k in sorted({k[1:] for k in d}):
    base=st.median(d[(vs[0],)+k])
    cells=[]
    for v in vs:
        x=d.get((v,)+k)
        if not x: cells.append(f"{'-':>14}"); continue
        m=st.median(x); cells.append(f"{m:8.1f} {base/m:5.2f}")
    print(f"{k[0]:>2} {k[1]:>7} {k[2]:>8} "+" ".join(cells))
