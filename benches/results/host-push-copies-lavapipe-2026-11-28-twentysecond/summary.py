import csv,glob,collections,sys,statistics
d=collections.defaultdict(list)
for f in glob.glob(sys.argv[1]+'/*.csv'):
    v,n,c,r=f.split('/')[-1][:-4].split('-')
    for row in csv.DictReader(open(f)):
        d[(v,int(n),c,int(row['bytes']))].append(float(row['median_us']))
a,b=sys.argv[2],sys.argv[3]
print(f"{'npes':>4} {'coll':>10} {'bytes':>8} {a+'_med':>9} {b+'_med':>9} {'med':>5} {a+'_min':>9} {b+'_min':>9} {'min':>5} wins")
for k in sorted({k[1:] for k in d}):
    o=d[(a,)+k]; n=d[(b,)+k]
    if not o or not n: continue
    wins=sum(x>y for x,y in zip(o,n))
    print(f"{k[0]:>4} {k[1]:>10} {k[2]:>8} {statistics.median(o):>9.1f} {statistics.median(n):>9.1f} {statistics.median(o)/statistics.median(n):>5.2f} {min(o):>9.1f} {min(n):>9.1f} {min(o)/min(n):>5.2f} {wins}/{min(len(o),len(n))}")
