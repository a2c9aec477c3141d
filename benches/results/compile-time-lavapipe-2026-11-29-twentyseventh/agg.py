import sys,re,collections
keys={}
for l in open(sys.argv[1]):
    m=re.match(r'([\d.]+) (\d+) (\S+) ([0-9a-f]{16}) pes=(\d+) proxy=(\w+) words=(\d+) ms=(\d+)$',l.strip())
    if not m: continue
    t,pid,name,key,pes,proxy,words,ms=m.groups()
    k=(key)
    ms=int(ms)
    if ms>10**7 or len(t)!=12: continue
    if k not in keys or keys[k][4]<ms: keys[k]=(name,pes,proxy,int(words),ms)
tot=collections.Counter(); cnt=collections.Counter()
for k,(name,pes,proxy,words,ms) in keys.items():
    base=re.sub(r'_\d+$','',name) if not name.startswith('collectives_check') else name
    tot[(proxy)]+=ms; cnt[proxy]+=1
print("total max-ms per key by proxy:", dict(tot), dict(cnt))
print("sum all", sum(tot.values())/1000)
top=sorted(keys.items(), key=lambda kv:-kv[1][4])[:int(sys.argv[2]) if len(sys.argv)>2 else 40]
for k,v in top: print(v[4], v[0], 'pes='+v[1], 'proxy='+v[2], 'words=%d'%v[3])
cat=collections.Counter(); cc=collections.Counter()
for k,(name,pes,proxy,words,ms) in keys.items():
    c=re.sub(r'\d+','N',name)
    c=re.sub(r'_(i|u)N_|_fN_|_(int|uint|float|double|long|short|char|size|ptrdiff)[a-z0-9_]*','_T_',c)
    cat[(c,proxy)]+=ms; cc[(c,proxy)]+=1
for (c,p),ms in cat.most_common(45): print(ms, cc[(c,p)], c, p)
