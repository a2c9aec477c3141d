struct P { mode: u32, src: u32, dst: u32, off: u32, len: u32, pe: u32, sig: u32, words: u32, out: u32 }
var<immediate> p: P;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    switch p.mode {
        case 0u: { if li == 0u { shmem_putmem(p.dst + p.off, p.src + p.off, p.len, p.pe); } }
        case 8u: {
            if li == 0u {
                shmem_uint32_p(p.out, u32(shmem_int_test(p.words, SHMEM_CMP_EQ, 5)), u32(shmem_my_pe()));
                shmem_uint32_p(p.out + 1u, u32(shmem_uint_test_all(p.words, 4u, 0u, SHMEM_CMP_GE, 1u)), u32(shmem_my_pe()));
                shmem_uint32_p(p.out + 2u, shmem_uint32_test_any(p.words, 4u, p.words + 4u, SHMEM_CMP_GT, 6u), u32(shmem_my_pe()));
                shmem_uint32_p(p.out + 3u, shmem_int32_test_some_vector(p.words, 4u, p.out + 8u, p.words + 4u, SHMEM_CMP_LE, p.words + 8u), u32(shmem_my_pe()));
                shmem_uint32_wait_until_all(p.words, 4u, 0u, SHMEM_CMP_NE, 0u);
                shmem_int_wait_until_all_vector(p.words, 4u, p.words + 4u, SHMEM_CMP_GE, p.words + 8u);
                shmem_uint_wait_until(p.words + 1u, SHMEM_CMP_GT, 1u);
                shmem_uint32_p(p.out + 4u, shmem_signal_fetch(p.sig), u32(shmem_my_pe()));
                shmem_uint32_p(p.out + 5u, shmem_signal_wait_until(p.sig, SHMEM_CMP_GE, 1u), u32(shmem_my_pe()));
                shmem_uint32_p(p.out + 6u, shmem_uint_wait_until_any(p.words, 4u, p.words + 4u, SHMEM_CMP_GT, 6u), u32(shmem_my_pe()));
                shmem_uint32_p(p.out + 7u, shmem_int_wait_until_some_vector(p.words, 4u, p.out + 12u, p.words + 4u, SHMEM_CMP_LE, p.words + 8u), u32(shmem_my_pe()));
            }
        }
        default: {}
    }
}
