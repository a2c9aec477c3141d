// litmus: message passing across processes through the symmetric heap.
//
// Round r: every invocation of the workgroup stores its share of a block of
// `words` words into the next PE's heap with plain stores, the PEs synchronize,
// then every invocation reads its share of the block the previous PE wrote into
// this PE's heap and compares it with the value the writer must have stored.
// Rounds alternate between two buffers, so the block of round r is not
// overwritten before every PE has passed the barrier of round r + 1.
//
// mode 0: shmemx_barrier_all_work_group (the library's fences).
// mode 1: weakened: a flag barrier of relaxed atomics without any fence (a
//         relaxed atomic store per peer, polls with relaxed fetch_add(0)).
// mode 2: no synchronization at all: a control that shows the check sees wrong
//         values when they happen. The host strips the barrier call from this
//         source for it, so that the launch is not synchronized either.
//
// A wrong value is counted in errors[0]; errors[1] counts the wrong values that
// are the previous use of the buffer (stale); errors[2..4] is the first
// (round, word) seen wrong.

struct Params {
    data: u32,    // word address of u32[2 * words], symmetric
    flags: u32,   // word address of u32[n_pes], symmetric (mode 1)
    errors: u32,  // word address of u32[4] on this PE
    rounds: u32,  // rounds in this dispatch
    base: u32,    // first round of this dispatch (rounds start at 2)
    words: u32,   // block size
    mode: u32,
}

var<immediate> p: Params;

// The value PE `src` stores in word `w` in round `r`: distinct per round, PE and word.
fn expect(r: u32, src: u32, w: u32) -> u32 {
    var x = r * 0x9e3779b9u ^ (src * 0x85ebca6bu) ^ (w * 0xc2b2ae35u);
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    return x;
}

// Mode 1: every PE's leader stores epoch `e` into its slot on every PE with
// relaxed atomic stores and polls its own slots with relaxed read-modify-writes.
fn weak_barrier(li: u32, e: u32) {
    workgroupBarrier();
    if li == 0u {
        let me = u32(shmem_my_pe());
        let n = u32(shmem_n_pes());
        for (var pe = 0u; pe < n; pe++) {
            shmem_uint32_atomic_set(p.flags + me, e, pe);
        }
        for (var j = 0u; j < n; j++) {
            loop {
                // 16 polls per iteration, branch-free: lavapipe caps the loop
                // iterations of a dispatch (see ARCHITECTURE.md).
                var seen = false;
                for (var i = 0; i < 16; i++) {
                    seen = seen | (shmem_uint32_atomic_fetch_add(p.flags + j, 0u, me) >= e);
                }
                if seen {
                    break;
                }
            }
        }
    }
    workgroupBarrier();
}

// The workgroup's invocations (examples/litmus.rs sets both to --workgroup-size).
const WG: u32 = 64u;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    let me = u32(shmem_my_pe());
    let n = u32(shmem_n_pes());
    let next = (me + 1u) % n;
    let prev = (me + n - 1u) % n;
    var wrong = 0u;
    var stale = 0u;
    for (var k = 0u; k < p.rounds; k++) {
        let r = p.base + k;
        let buf = p.data + (r & 1u) * p.words;
        for (var w = li; w < p.words; w += WG) {
            shmem_uint32_p(buf + w, expect(r, me, w), next);
        }
        if p.mode == 0u {
            shmemx_barrier_all_work_group(li);
        } else if p.mode == 1u {
            weak_barrier(li, r);
        }
        for (var w = li; w < p.words; w += WG) {
            let v = shmem_uint32_g(buf + w, me);
            if v != expect(r, prev, w) {
                wrong += 1u;
                if v == expect(r - 2u, prev, w) {
                    stale += 1u;
                }
                if shmem_uint32_atomic_compare_swap(p.errors + 2u, 0u, r, me) == 0u {
                    shmem_uint32_p(p.errors + 3u, w, me);
                }
            }
        }
    }
    if wrong != 0u {
        shmem_uint32_atomic_add(p.errors, wrong, me);
        shmem_uint32_atomic_add(p.errors + 1u, stale, me);
    }
}
