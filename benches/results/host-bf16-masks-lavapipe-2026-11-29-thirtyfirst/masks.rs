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
// Variant: lsb through a test mask and a masked add; the NaN fix as a masked or on the result.
#[inline] #[target_feature(enable = "avx512f")]
fn rounded2(v: __m512) -> __m512i {
    let x = _mm512_castps_si512(v);
    let odd = _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x1_0000));
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
    let r = _mm512_add_epi32(x, _mm512_set1_epi32(0x7fff));
    let r = _mm512_mask_add_epi32(r, odd, r, _mm512_set1_epi32(1));
    // NaN: x | quiet bit (the bias not added)
    _mm512_mask_or_epi32(r, nan, x, _mm512_set1_epi32(0x0040_0000))
}
#[inline] #[target_feature(enable = "avx512f,avx512bw")]
unsafe fn widen2(p: *const u16) -> (__m512, __m512) {
    let h = _mm512_loadu_si512(p.cast()); let z = _mm512_setzero_si512();
    (_mm512_castsi512_ps(_mm512_unpacklo_epi16(z, h)), _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, h)))
}
#[inline] #[target_feature(enable = "avx512f,avx512bw")]
unsafe fn narrow2<const V: u8>(lo: __m512, hi: __m512, p: *mut u16) {
    let (a, b) = if V == 0 { (rounded(lo), rounded(hi)) } else { (rounded2(lo), rounded2(hi)) };
    if V == 2 {
        // take the high words straight: vpermt2w picks odd u16s of a and b in order
        let idx = _mm512_set_epi16(63,61,59,57,31,29,27,25, 55,53,51,49,23,21,19,17, 47,45,43,41,15,13,11,9, 39,37,35,33,7,5,3,1);
        return _mm512_storeu_si512(p.cast(), _mm512_permutex2var_epi16(a, idx, b));
    }
    let a = _mm512_srli_epi32::<16>(a); let b = _mm512_srli_epi32::<16>(b);
    _mm512_storeu_si512(p.cast(), _mm512_packus_epi32(a, b))
}
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn run<const V: u8>(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) { let (al, ah) = widen2(a.add(i)); let (bl, bh) = widen2(b.add(i)); narrow2::<V>(_mm512_add_ps(al, bl), _mm512_add_ps(ah, bh), o.add(i)); }
}
fn main() {
    let n = 1 << 20;
    let mut s = 12345u64; let mut r = || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s };
    let mut gen = |k: f32| -> Vec<u16> { (0..n).map(|i| { if i % 1000 == 7 { 0x7fc1 } else if i % 777 == 3 { 0x0003 } else { let v = (r() % 20000) as f32 / k - 140.0; (v.to_bits() >> 16) as u16 } }).collect() };
    let a = gen(7.0); let b = gen(3.0);
    let mut o = [vec![0u16; n], vec![0u16; n], vec![0u16; n]];
    for round in 0..4 {
        let mut ts = [0.0; 3];
        for v in 0..3 { let t = Instant::now(); for _ in 0..50 { unsafe { match v { 0 => run::<0>(a.as_ptr(), b.as_ptr(), o[0].as_mut_ptr(), n), 1 => run::<1>(a.as_ptr(), b.as_ptr(), o[1].as_mut_ptr(), n), _ => run::<2>(a.as_ptr(), b.as_ptr(), o[2].as_mut_ptr(), n) } } } ts[v] = t.elapsed().as_secs_f64() / 50.0 * 1e6; }
        println!("round {round}: cur {:.1} v1 {:.1} v2 {:.1} us; same {} {}", ts[0], ts[1], ts[2], o[0] == o[1], o[0] == o[2]);
    }
}
