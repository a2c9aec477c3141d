// 2-PE bf16 sum of 4 MiB (2M elements a source) out of place, as the library's direct path for
// the half types: thread k combines its slice (1M elements) of both sources into its own dest,
// 64 KiB at a time, copying each chunk on to the other dest. Variants: prefetchw of the own
// dest D bytes ahead (0: none), and in place (dest = source) for reference.
use std::arch::x86_64::*;
use std::sync::{Arc, Barrier};
use std::time::Instant;
#[inline] #[target_feature(enable = "avx512f")]
fn rounded(v: __m512) -> __m512i {
    let x = _mm512_castps_si512(v);
    let odd = _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x1_0000));
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
    let up = _mm512_add_epi32(x, _mm512_set1_epi32(0x7fff));
    let up = _mm512_mask_add_epi32(up, odd, up, _mm512_set1_epi32(1));
    _mm512_mask_or_epi32(up, nan, x, _mm512_set1_epi32(0x0040_0000))
}
#[inline] #[target_feature(enable = "avx512f,avx512bw")]
unsafe fn widen2(p: *const u16) -> (__m512, __m512) {
    let h = _mm512_loadu_si512(p.cast()); let z = _mm512_setzero_si512();
    (_mm512_castsi512_ps(_mm512_unpacklo_epi16(z, h)), _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, h)))
}
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn sum(a: *const u16, b: *const u16, o: *mut u16, n: usize, ahead: usize) {
    let take = _mm512_set_epi16(63,61,59,57,31,29,27,25, 55,53,51,49,23,21,19,17, 47,45,43,41,15,13,11,9, 39,37,35,33,7,5,3,1);
    for i in (0..n).step_by(32) {
        if ahead > 0 && i % 32 == 0 { std::arch::asm!("prefetchw [{0}]", in(reg) o.add(i + ahead / 2), options(nostack, preserves_flags, readonly)); }
        let (al, ah) = widen2(a.add(i)); let (bl, bh) = widen2(b.add(i));
        let h = _mm512_permutex2var_epi16(rounded(_mm512_add_ps(al, bl)), take, rounded(_mm512_add_ps(ah, bh)));
        _mm512_storeu_si512(o.add(i).cast(), h);
    }
}
#[target_feature(enable = "avx512f")]
unsafe fn nt(from: *const u16, to: *mut u16, n: usize) {
    // n u16s, `to` 64-byte aligned, n a multiple of 32
    for i in (0..n).step_by(32) { _mm512_stream_si512(to.add(i).cast(), _mm512_loadu_si512(from.add(i).cast())); }
}
#[derive(Clone, Copy)] struct P(*mut u16); unsafe impl Send for P {} unsafe impl Sync for P {}
fn main() {
    const N: usize = 2 << 20; // elements per source
    let mk = || unsafe { let p = std::alloc::alloc(std::alloc::Layout::from_size_align(2 * N + 8192, 4096).unwrap()) as *mut u16; for i in 0..N + 4096 { *p.add(i) = 0x3f80; } P(p) };
    let src = [mk(), mk()]; let dst = [mk(), mk()];
    let variants: [(usize, u8); 4] = [(0, 0), (0, 1), (0, 2), (0, 3)];
    for round in 0..4 {
        let mut line = format!("round {round}:");
        for &(ahead, inplace_mode) in &variants { let inplace = inplace_mode;
            let bar = Arc::new(Barrier::new(2));
            let hs: Vec<_> = (0..2).map(|k| { let bar = bar.clone(); std::thread::spawn(move || {
                let inplace = inplace == 3; let mode = if inplace { 0 } else { inplace_mode };
                let (s, d) = (src, if inplace { src } else { dst });
                let l1 = P(Box::leak(vec![0u16; 2048 + 32].into_boxed_slice()).as_mut_ptr());
                let mut t = Vec::new();
                for it in 0..42 { bar.wait(); let t0 = Instant::now();
                    let (lo, hi) = (k * N / 2, (k + 1) * N / 2);
                    if mode == 0 { let mut at = lo; while at < hi { let n = (32 << 10).min(hi - at);
                        unsafe { sum(s[0].0.add(at), s[1].0.add(at), d[k].0.add(at), n, ahead);
                                 std::ptr::copy_nonoverlapping(d[k].0.add(at), d[1 - k].0.add(at), n); }
                        at += n; } } else { let mut at = lo; while at < hi { let n = 2048.min(hi - at);
                        unsafe { sum(s[0].0.add(at), s[1].0.add(at), l1.0, n, 0);
                            for j in 0..2 { if mode == 1 { std::ptr::copy_nonoverlapping(l1.0, d[j].0.add(at), n); } else { nt(l1.0, d[j].0.add(at), n); } } }
                        at += n; } if mode == 2 { unsafe { _mm_sfence(); } } }
                    bar.wait(); if it >= 2 { t.push(t0.elapsed().as_secs_f64() * 1e6); } }
                t.sort_by(|a, b| a.partial_cmp(b).unwrap()); t[t.len() / 2] }) }).collect();
            let med: Vec<f64> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            let _ = ahead; line += &format!("  {}: {:.0}", ["dest+copy", "l1+memcpy", "l1+nt", "inplace"][inplace as usize], med[0]);
        }
        println!("{line}");
    }
}
