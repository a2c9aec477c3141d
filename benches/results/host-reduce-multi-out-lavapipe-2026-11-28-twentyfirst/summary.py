import csv,glob,collections,sys
d=collections.defaultdict(list); wrong=0
for f in glob.glob(sys.argv[1]+'/*.csv'):
    parts=f.split('/')[-1][:-4].split('-')
    v=parts[0]; ty='-'.join(parts[2:-1])
    for r in csv.DictReader(open(f)):
        d[(v,int(r['npes']),ty,int(r['bytes']))].append(float(r['median_us']))
        if r['wrong'] not in ('0',''): wrong+=1
print('wrong rows:',wrong)
print(f"{'npes':>4} {'type':>14} {'bytes':>8} {'old_us':>9} {'new_us':>9} {'old/new':>7}")
for k in sorted({k[1:] for k in d}):
    if ('old',)+k not in d or ('new',)+k not in d: continue
    o=min(d[('old',)+k]); n=min(d[('new',)+k])
    print(f"{k[0]:>4} {k[1]:>14} {k[2]:>8} {o:>9.1f} {n:>9.1f} {o/n:>7.2f}")
