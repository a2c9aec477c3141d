struct P { mode: u32, src: u32, dst: u32, off: u32, len: u32, pe: u32, sig: u32, words: u32, out: u32 }
var<immediate> p: P;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    switch p.mode {
        case 1u: { shmemx_putmem_work_group(p.dst + p.off, p.src + p.off, p.len, p.pe, li, 64u); }
        case 7u: { shmemx_putmem_signal_work_group(p.dst, p.src, p.len, p.sig, p.off, SHMEM_SIGNAL_ADD, p.pe, li, 64u); }
        // Tests and waits on this PE's words[0..4] (status in words[4..8],
        // values in words[8..12]); results in out.
        default: {}
    }
}
