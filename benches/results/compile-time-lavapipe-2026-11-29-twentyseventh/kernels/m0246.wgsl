struct P { mode: u32, src: u32, dst: u32, off: u32, len: u32, pe: u32, sig: u32, words: u32, out: u32 }
var<immediate> p: P;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    switch p.mode {
        case 0u: { if li == 0u { shmem_putmem(p.dst + p.off, p.src + p.off, p.len, p.pe); } }
        case 2u: { if li == 0u { shmem_getmem_nbi(p.dst + p.off, p.src + p.off, p.len, p.pe); } }
        case 4u: { if li == 0u { shmem_uint32_iput(p.dst, p.src, 3u, 2u, p.len, p.pe); } }
        case 6u: { if li == 0u { shmem_putmem_signal(p.dst, p.src, p.len, p.sig, p.off, SHMEM_SIGNAL_SET, p.pe); } }
        default: {}
    }
}
