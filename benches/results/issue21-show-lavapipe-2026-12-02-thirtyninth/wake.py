# Wake-up latency between two processes: a blocking pipe ping-pong (two
# wake-ups per round trip) and a spinning ping-pong on a shared-memory word.
import os, time, mmap, struct, sys
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
a_r, a_w = os.pipe(); b_r, b_w = os.pipe()
pid = os.fork()
if pid == 0:
    for _ in range(N):
        os.read(a_r, 1); os.write(b_w, b'x')
    os._exit(0)
t = []
for _ in range(N):
    s = time.perf_counter_ns(); os.write(a_w, b'x'); os.read(b_r, 1); t.append(time.perf_counter_ns() - s)
os.waitpid(pid, 0)
t.sort(); print(f"pipe round trip (2 wake-ups): median {t[len(t)//2]/1e3:.1f} us p90 {t[len(t)*9//10]/1e3:.1f} us")
m = mmap.mmap(-1, 64)
pid = os.fork()
if pid == 0:
    for i in range(N):
        while struct.unpack_from('q', m, 0)[0] != 2*i+1: pass
        struct.pack_into('q', m, 0, 2*i+2)
    os._exit(0)
t = []
for i in range(N):
    s = time.perf_counter_ns(); struct.pack_into('q', m, 0, 2*i+1)
    while struct.unpack_from('q', m, 0)[0] != 2*i+2: pass
    t.append(time.perf_counter_ns() - s)
os.waitpid(pid, 0)
t.sort(); print(f"spin round trip: median {t[len(t)//2]/1e3:.1f} us p90 {t[len(t)*9//10]/1e3:.1f} us")
