import csv,glob,collections,sys
d=collections.defaultdict(list); wrong=0
for f in glob.glob(sys.argv[1]+'/*.csv'):
    v=f.split('/')[-1].split('-')[0]
    for r in csv.DictReader(open(f)):
        d[(v,r['collective'],int(r['npes']),int(r['bytes']))].append(float(r['median_us']))
        if r['wrong'] not in ('0',''): wrong+=1
print('wrong rows:',wrong)
print(f"{'coll':>9} {'npes':>4} {'bytes':>8} {'plain_us':>9} {'stream_us':>9} {'plain/stream':>7}")
for k in sorted({k[1:] for k in d}, key=lambda k:(k[1],k[0],k[2])):
    o=min(d[('soff',)+k]); n=min(d[('son',)+k])
    print(f"{k[0]:>9} {k[1]:>4} {k[2]:>8} {o:>9.1f} {n:>9.1f} {o/n:>7.2f}   {d[('soff',)+k]} {d[('son',)+k]}")
