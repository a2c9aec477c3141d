import csv,glob,collections,sys,statistics
d=collections.defaultdict(list); wrong=0
for f in glob.glob(sys.argv[1]+'/*.csv'):
    parts=f.split('/')[-1][:-4].split('-')
    v=parts[0]; n=int(parts[1]); ty='-'.join(parts[2:-1])
    for row in csv.DictReader(open(f)):
        d[(v,n,ty,int(row['bytes']))].append(float(row['median_us']))
        if row['wrong'] not in ('0',''): wrong+=1
print('wrong rows:',wrong)
a,b=sys.argv[2],sys.argv[3]
for k in sorted({k[1:] for k in d}):
    o=d[(a,)+k]; n=d[(b,)+k]
    if not o or not n: continue
    wins=sum(x>y for x,y in zip(o,n))
    print(f"{k[0]:>3} {k[1]:>18} {k[2]:>8} {a} {statistics.median(o):>8.1f} {b} {statistics.median(n):>8.1f} med {statistics.median(o)/statistics.median(n):>5.2f} min {min(o)/min(n):>5.2f} {b} wins {wins}/{min(len(o),len(n))}")
