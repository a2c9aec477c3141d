// heap_ring: every invocation writes one element of the pattern of PE `pe` into the
// bound window, which is the symmetric object on the *next* PE's heap.

struct Params {
    pe: u32,
    n: u32,
}

var<immediate> params: Params;

@group(0) @binding(0) var<storage, read_write> dst: array<u32>;

// Must match `pattern` in examples/heap_ring.rs.
fn pattern(pe: u32, i: u32) -> u32 {
    return ((pe + 1u) * 0x10000001u) ^ (i * 2654435761u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.y * groups.x * 64u + gid.x;
    if i < params.n {
        dst[i] = pattern(params.pe, i);
    }
}
