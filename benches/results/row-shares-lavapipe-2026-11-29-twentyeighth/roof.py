import sys,re,collections
best=collections.defaultdict(float)
for l in open(sys.argv[1]):
    m=re.search(r"roofline (\d+) B/PE: (.*) x(\d+) groups ([\d.]+) GB/s",l)
    if m:
        k=(int(m.group(1)),m.group(2)); best[k]=max(best[k],float(m.group(4)))
for k in sorted(best): print(k[0],k[1],f"{best[k]:.2f}")
