import csv,glob,collections,sys,statistics
d=collections.defaultdict(list)
for f in glob.glob(sys.argv[1]+'/*.csv'):
    v,n,_,r=f.split('/')[-1][:-4].split('-')
    for row in csv.DictReader(open(f)):
        d[(v,int(n),row['collective'],int(row['bytes']))].append(float(row['median_us']))
a,b=sys.argv[2],sys.argv[3]
for k in sorted({k[1:] for k in d}):
    o=d[(a,)+k]; n=d[(b,)+k]
    if not o or not n: continue
    wins=sum(x>y for x,y in zip(o,n))
    print(f"{k[0]:>3} {k[1]:>10} {k[2]:>8} {a} {statistics.median(o):>8.1f} {b} {statistics.median(n):>8.1f} med {statistics.median(o)/statistics.median(n):>5.2f} min {min(o)/min(n):>5.2f} {b} wins {wins}/{min(len(o),len(n))}")
