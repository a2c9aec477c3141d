// halo: a 1-D stencil over a ring of PEs, the ghost cells exchanged from the
// kernel with put-with-signal.
//
// Each PE holds `m` cells of the global rod and `h` ghost cells on each side,
// twice (buffers 0 and 1, alternating by step):
//     buffer b: [h left ghosts][m own cells][h right ghosts]
// Step s reads buffer s & 1 and writes buffer (s & 1) ^ 1:
//   1. its first h cells go to the left PE's right ghosts and its last h cells
//      to the right PE's left ghosts, each put with a signal add of 1 on the
//      receiver (its `sig` word 0: left ghosts, word 2: right ghosts);
//   2. it waits until both its signals have reached s + 1: both ghost regions
//      hold step s's cells;
//   3. cell i becomes (u[i - h] + 2 u[i] + u[i + h]) / 4 (integers: exact).
// A PE cannot overwrite a neighbour's ghosts of step s while they are still
// read: its put of step s + 2 (same buffer) comes after its wait of step s + 1,
// which needs the neighbour's put of step s + 1, made after it computed step s.
//
// Even steps use the work_group forms, odd steps the per-thread forms from
// invocation 0.

struct Params {
    u: u32,     // byte address of u32[2 * (m + 2h)], symmetric
    sig: u32,   // word address of u64[2], symmetric (left, right ghost signals)
    m: u32,     // cells per PE (m >= h)
    h: u32,     // ghost cells per side: the stencil's reach
    base: u32,  // steps done before this dispatch
    steps: u32, // steps in this dispatch
}

var<immediate> p: Params;

const WG: u32 = 64u;

// Byte address of cell i of buffer b (i counts from the first left ghost).
fn cell(b: u32, i: u32) -> u32 {
    return p.u + (b * (p.m + 2u * p.h) + i) * 4u;
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    let me = u32(shmem_my_pe());
    let n = u32(shmem_n_pes());
    let left = (me + n - 1u) % n;
    let right = (me + 1u) % n;
    let m = p.m;
    let h = p.h;
    for (var k = 0u; k < p.steps; k++) {
        let s = p.base + k;
        let cur = s & 1u;
        let nxt = cur ^ 1u;
        // 1. My first h cells are the left PE's right ghosts; my last h
        // cells the right PE's left ghosts.
        if cur == 0u {
            shmemx_uint32_put_signal_work_group(cell(cur, h + m), cell(cur, h), h, p.sig + 2u, 1u, SHMEM_SIGNAL_ADD, left, li, WG);
            shmemx_uint32_put_signal_work_group(cell(cur, 0u), cell(cur, m), h, p.sig, 1u, SHMEM_SIGNAL_ADD, right, li, WG);
        } else if li == 0u {
            shmem_uint32_put_signal(cell(cur, h + m), cell(cur, h), h, p.sig + 2u, 1u, SHMEM_SIGNAL_ADD, left);
            shmem_uint32_put_signal(cell(cur, 0u), cell(cur, m), h, p.sig, 1u, SHMEM_SIGNAL_ADD, right);
        }
        // 2. Both ghost regions hold step s.
        if cur == 0u {
            shmemx_signal_wait_until_work_group(p.sig, SHMEM_CMP_GE, s + 1u, li);
            shmemx_signal_wait_until_work_group(p.sig + 2u, SHMEM_CMP_GE, s + 1u, li);
        } else {
            if li == 0u {
                shmem_signal_wait_until(p.sig, SHMEM_CMP_GE, s + 1u);
                shmem_signal_wait_until(p.sig + 2u, SHMEM_CMP_GE, s + 1u);
            }
            storageBarrier();
            shmem_fence();
        }
        // 3. The stencil, spread over the workgroup (own heap: word reads and
        // writes of this PE).
        for (var i = h + li; i < h + m; i += WG) {
            let a = shmem_uint32_g(cell(cur, i - h) / 4u, me);
            let b = shmem_uint32_g(cell(cur, i) / 4u, me);
            let c = shmem_uint32_g(cell(cur, i + h) / 4u, me);
            shmem_uint32_p(cell(nxt, i) / 4u, (a + 2u * b + c) / 4u, me);
        }
        // Every invocation's cells are written before the next step sends any.
        shmem_fence();
        storageBarrier();
    }
}
