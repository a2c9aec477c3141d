struct P { mode: u32, src: u32, dst: u32, off: u32, len: u32, pe: u32, sig: u32, words: u32, out: u32 }
var<immediate> p: P;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    switch p.mode {
        case 0u: { if li == 0u { shmem_putmem(p.dst + p.off, p.src + p.off, p.len, p.pe); } }
        case 1u: { shmemx_putmem_work_group(p.dst + p.off, p.src + p.off, p.len, p.pe, li, 64u); }
        default: {}
    }
}
