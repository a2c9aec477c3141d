import torch, time
d = torch.device("cuda")
print(torch.cuda.get_device_name(0))
for mb in (16, 64, 256, 1024):
    n = mb << 20
    a = torch.empty(n, dtype=torch.uint8, device=d); b = torch.empty_like(a)
    for _ in range(3): b.copy_(a)
    torch.cuda.synchronize()
    e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
    it = 50
    e0.record()
    for _ in range(it): b.copy_(a)
    e1.record(); torch.cuda.synchronize()
    s = e0.elapsed_time(e1) / 1e3 / it
    print(f"torch d2d copy {mb} MiB: {s*1e6:.1f} us, {2*n/s/1e9:.0f} GB/s read+write")
