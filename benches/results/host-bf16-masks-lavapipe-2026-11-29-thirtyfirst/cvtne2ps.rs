use std::arch::x86_64::*;
use std::time::Instant;
#[inline] #[target_feature(enable = "avx512f")]
fn rounded(v: __m512) -> __m512i {
    let x = _mm512_castps_si512(v);
    let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(1));
    let bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb);
    let quiet = _mm512_or_si512(x, _mm512_set1_epi32(0x0040_0000));
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
    _mm512_mask_blend_epi32(nan, _mm512_add_epi32(x, bias), quiet)
}
#[inline] #[target_feature(enable = "avx512f,avx512bw")]
unsafe fn widen2(p: *const u16) -> (__m512, __m512) {
    let h = _mm512_loadu_si512(p.cast()); let z = _mm512_setzero_si512();
    (_mm512_castsi512_ps(_mm512_unpacklo_epi16(z, h)), _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, h)))
}
#[inline] #[target_feature(enable = "avx512f,avx512bw")]
unsafe fn narrow2(lo: __m512, hi: __m512, p: *mut u16) {
    let lo = _mm512_srli_epi32::<16>(rounded(lo)); let hi = _mm512_srli_epi32::<16>(rounded(hi));
    _mm512_storeu_si512(p.cast(), _mm512_packus_epi32(lo, hi))
}
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn cur(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) { let (al, ah) = widen2(a.add(i)); let (bl, bh) = widen2(b.add(i)); narrow2(_mm512_add_ps(al, bl), _mm512_add_ps(ah, bh), o.add(i)); }
}
// unpacklo/hi within 128-bit lanes: lo holds each lane's elems 0-3, hi 4-7. cvtne2ps_pbh(a,b) puts b in low 256, a in high 256 — whole-register halves, not per lane.
// So permute: use a 2-source permute of the 16-bit results (vpermt2w) or widen differently.
#[inline] #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn narrow2_bf(lo: __m512, hi: __m512, p: *mut u16, slow: &mut u32) {
    // denormal lanes (fpclass 0x20) need the integer rule
    let d = _mm512_fpclass_ps_mask::<0x20>(lo) | _mm512_fpclass_ps_mask::<0x20>(hi);
    if d != 0 { *slow += 1; return narrow2(lo, hi, p); }
    let h = _mm512_cvtne2ps_pbh(hi, lo); // low 256: lo's 16 (lanes' 0-3 of each 128 lane), high 256: hi's
    let h: __m512i = std::mem::transmute(h);
    // reorder: result elem j in lane L (L=0..3, 8 per lane): from lo if j<4: lo index 4L+j -> h[4L+j]; else hi index 4L+j-4 -> h[16+4L+j-4]
    let idx = _mm512_set_epi16(31,30,29,28,15,14,13,12, 27,26,25,24,11,10,9,8, 23,22,21,20,7,6,5,4, 19,18,17,16,3,2,1,0);
    let _ = idx; _mm512_storeu_si512(p.cast(), h)
}
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn bf(a: *const u16, b: *const u16, o: *mut u16, n: usize) -> u32 {
    let mut slow = 0;
    for i in (0..n).step_by(32) { let (al, ah) = widen2(a.add(i)); let (bl, bh) = widen2(b.add(i)); narrow2_bf(_mm512_add_ps(al, bl), _mm512_add_ps(ah, bh), o.add(i), &mut slow); }
    slow
}
fn main() {
    let n = 1 << 20;
    let mut s = 12345u64; let mut r = || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s };
    let a: Vec<u16> = (0..n).map(|_| { let v = (r() % 2000) as f32 / 7.0 - 140.0; (v.to_bits() >> 16) as u16 }).collect();
    let b: Vec<u16> = (0..n).map(|_| { let v = (r() % 2000) as f32 / 3.0 - 300.0; (v.to_bits() >> 16) as u16 }).collect();
    let mut o1 = vec![0u16; n]; let mut o2 = vec![0u16; n];
    for round in 0..5 {
        let t = Instant::now(); for _ in 0..50 { unsafe { cur(a.as_ptr(), b.as_ptr(), o1.as_mut_ptr(), n) } } let t1 = t.elapsed().as_secs_f64() / 50.0;
        let t = Instant::now(); let mut sl = 0; for _ in 0..50 { sl += unsafe { bf(a.as_ptr(), b.as_ptr(), o2.as_mut_ptr(), n) } } let t2 = t.elapsed().as_secs_f64() / 50.0;
        println!("round {round}: int {:.1} us  bf16 {:.1} us  same {}  slow {}", t1 * 1e6, t2 * 1e6, o1 == o2, sl);
    }
}
