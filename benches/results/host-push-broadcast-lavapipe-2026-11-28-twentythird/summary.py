import csv,glob,collections,statistics as st,sys
d=collections.defaultdict(list); wrong=0
for f in glob.glob(sys.argv[1]+'/*.csv'):
    v,n,_,r=f.split('/')[-1][:-4].split('-')
    for row in csv.DictReader(open(f)):
        d[(v,int(n),row['collective'],int(row['bytes']))].append(float(row['median_us']))
        wrong+=row['wrong'] not in ('0','')
print('wrong',wrong)
vs=sys.argv[2].split(',')
for k in sorted({k[1:] for k in d}):
    b=st.median(d[(vs[0],)+k])
    print(k, ' '.join(f"{v}:{st.median(d[(v,)+k]):.0f}({b/st.median(d[(v,)+k]):.2f},won {sum(1 for x,y in zip(d[(vs[0],)+k],d[(v,)+k]) if y<x)})" for v in vs))
