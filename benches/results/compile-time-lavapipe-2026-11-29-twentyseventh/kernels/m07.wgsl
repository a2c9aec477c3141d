struct P { mode: u32, src: u32, dst: u32, off: u32, len: u32, pe: u32, sig: u32, words: u32, out: u32 }
var<immediate> p: P;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    switch p.mode {
        case 0u: { if li == 0u { shmem_putmem(p.dst + p.off, p.src + p.off, p.len, p.pe); } }
        case 1u: { shmemx_putmem_work_group(p.dst + p.off, p.src + p.off, p.len, p.pe, li, 64u); }
        case 2u: { if li == 0u { shmem_getmem_nbi(p.dst + p.off, p.src + p.off, p.len, p.pe); } }
        case 3u: { shmemx_uchar_get_work_group(p.dst + p.off, p.src + p.off, p.len, p.pe, li, 64u); }
        // Every third u32 of dst from every second of src, p.len elements.
        case 4u: { if li == 0u { shmem_uint32_iput(p.dst, p.src, 3u, 2u, p.len, p.pe); } }
        case 5u: { if li == 0u { shmem_int_iget(p.dst, p.src, 3u, 2u, p.len, p.pe); } }
        // The signal set to p.off after p.len bytes.
        case 6u: { if li == 0u { shmem_putmem_signal(p.dst, p.src, p.len, p.sig, p.off, SHMEM_SIGNAL_SET, p.pe); } }
        case 7u: { shmemx_putmem_signal_work_group(p.dst, p.src, p.len, p.sig, p.off, SHMEM_SIGNAL_ADD, p.pe, li, 64u); }
        // Tests and waits on this PE's words[0..4] (status in words[4..8],
        // values in words[8..12]); results in out.
        default: {}
    }
}
