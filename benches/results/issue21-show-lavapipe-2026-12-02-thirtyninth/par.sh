loop() { python3 -c "
import time;s=time.perf_counter()
x=0
for i in range(20_000_000): x+=i
print(f'{time.perf_counter()-s:.2f}s')"; }
echo alone: $(loop)
echo two at once: $(loop & loop; wait)
echo alone: $(loop)
