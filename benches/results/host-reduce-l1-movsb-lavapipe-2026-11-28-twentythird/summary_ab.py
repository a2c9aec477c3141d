import csv,glob,collections,sys,statistics as st
d=collections.defaultdict(list); wrong=0
for f in glob.glob(sys.argv[1]+'/*.csv'):
    v,n,ipty,r=f.split('/')[-1][:-4].split('-')
    for row in csv.DictReader(open(f)):
        d[(v,int(n),ipty,int(row['bytes']))].append(float(row['median_us']))
        if row['wrong'] not in ('0',''): wrong+=1
a,b=sys.argv[2].split(',')
print('wrong rows:',wrong)
print(f"{'n':>2} {'case':>16} {'bytes':>8} {a+'_us':>9} {b+'_us':>9} {'x(med)':>6} {'x(min)':>6} {'rounds won':>10}")
for k in sorted({k[1:] for k in d}):
    x=d[(a,)+k]; y=d[(b,)+k]
    won=sum(1 for p,q in zip(x,y) if q<p)
    print(f"{k[0]:>2} {k[1]:>16} {k[2]:>8} {st.median(x):9.1f} {st.median(y):9.1f} {st.median(x)/st.median(y):6.2f} {min(x)/min(y):6.2f} {won:>4}/{len(x)}")
