// device_barrier: the work_group and per-thread barriers, K times each, checked.
//
// Before barrier k every PE stores base+k+1 into its own slot of `counters` on
// every PE (plain stores); after it every PE reads its local slots: each must be
// base+k+1 (or base+k+2: a fast peer may already be past the barrier). A wrong
// value is counted into `errors` (a word on this PE's heap).

struct Params {
    counters: u32,  // word address of u32[n_pes], symmetric
    errors: u32,    // word address of u32[4]: count, first (barrier, value, slot)
    iters: u32,
    base: u32,      // value before the first barrier of this launch
    mode: u32,      // bit 0: work_group form, bit 1: per-thread form
}

var<immediate> p: Params;

fn check(k: u32, slot: u32) {
    let me = u32(shmem_my_pe());
    let v = shmem_uint32_g(p.counters + slot, me);
    if v != p.base + k + 1u && v != p.base + k + 2u {
        if shmem_uint32_atomic_fetch_inc(p.errors, me) == 0u {
            shmem_uint32_p(p.errors + 1u, k, me);
            shmem_uint32_p(p.errors + 2u, v, me);
            shmem_uint32_p(p.errors + 3u, slot, me);
        }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    let me = u32(shmem_my_pe());
    let n = u32(shmem_n_pes());
    var done = 0u;
    if (p.mode & 1u) != 0u {
        for (var k = 0u; k < p.iters; k++) {
            // The workgroup spreads the stores: invocation i serves PEs i, i+64, ...
            for (var pe = li; pe < n; pe += 64u) {
                shmem_uint32_p(p.counters + me, p.base + k + 1u, pe);
            }
            shmemx_barrier_all_work_group(li);
            for (var slot = li; slot < n; slot += 64u) {
                check(k, slot);
            }
        }
        done = p.iters;
    }
    if (p.mode & 2u) != 0u && li == 0u {
        // One invocation; the others have finished.
        for (var k = done; k < done + p.iters; k++) {
            for (var pe = 0u; pe < n; pe++) {
                shmem_uint32_p(p.counters + me, p.base + k + 1u, pe);
            }
            shmem_barrier_all();
            for (var slot = 0u; slot < n; slot++) {
                check(k, slot);
            }
        }
    }
}
