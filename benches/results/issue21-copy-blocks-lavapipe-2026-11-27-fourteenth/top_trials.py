import re,sys,collections
d=collections.defaultdict(list)
seen=set()
for l in open(sys.argv[1]):
    m=re.search(r'roofline (\d+) B/PE: (.*) x(\d+) groups ([\d.]+) GB/s',l)
    if m:
        key=(l.split()[0][:19] if False else None)
        d[int(m.group(1))].append((float(m.group(4)),m.group(2),int(m.group(3))))
k=int(sys.argv[2]) if len(sys.argv)>2 else 10
for s,v in d.items():
    # each PE logs: take unique-ish by dedup of identical entries
    v=sorted(set(v),reverse=True)
    print(s, len(v))
    for x in v[:k]: print("   %.3f %s x%d"%x)
