import csv,glob,statistics,collections
O='/tmp/b15'
def rows(f):
    try: return list(csv.DictReader(open(f)))
    except Exception: return []
res=collections.defaultdict(list)
for kind in ['before','after','kernel','mpi']:
    for f in glob.glob(f'{O}/{kind}-n*-r*.csv'):
        n=int(f.split('-n')[1].split('-')[0])
        for r in rows(f):
            try: t=float(r.get('median_us') or r.get('time_us'))
            except: continue
            res[(r['collective'],n,kind)].append(t)
print(f"{'coll':>10} {'n':>2} {'mpi':>8} {'before':>9} {'after':>8} {'kernel':>9}  after/mpi kernel/empty")
for c in ['barrier','broadcast','fcollect','alltoall','reduce']:
    for n in [2,4,8]:
        v={k:res.get((c,n,k)) for k in ['mpi','before','after','kernel']}
        fmt=lambda x: ('%.2f'%min(x)) if x else '-'
        rng=lambda x: ('%.2f-%.2f'%(min(x),max(x))) if x else '-'
        ratio = (min(v['after'])/min(v['mpi'])) if v['after'] and v['mpi'] else float('nan')
        print(f"{c:>10} {n:>2} {rng(v['mpi']):>12} {rng(v['before']):>14} {rng(v['after']):>12} {rng(v['kernel']):>14}  {ratio:5.1f}")
