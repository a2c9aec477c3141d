// AVX2 bf16 2-slot sum of 1M elements: the library's 8-at-a-time path against 16 at a time
// through in-lane unpacks and an in-lane pack.
use std::arch::x86_64::*;
use std::time::Instant;
#[inline] #[target_feature(enable = "avx2")]
unsafe fn widen(p: *const u16) -> __m256 {
    let h = _mm_loadu_si128(p.cast());
    _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
}
#[inline] #[target_feature(enable = "avx2")]
unsafe fn narrow(v: __m256, p: *mut u16) {
    let x = _mm256_castps_si256(v);
    let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), _mm256_set1_epi32(1));
    let bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb);
    let rounded = _mm256_srli_epi32::<16>(_mm256_add_epi32(x, bias));
    let quiet = _mm256_or_si256(_mm256_srli_epi32::<16>(x), _mm256_set1_epi32(0x40));
    let abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7fff_ffff));
    let nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f80_0000));
    let r = _mm256_blendv_epi8(rounded, quiet, nan);
    _mm_storeu_si128(p.cast(), _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256::<1>(r)))
}
#[target_feature(enable = "avx2")]
unsafe fn cur(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(8) { narrow(_mm256_add_ps(widen(a.add(i)), widen(b.add(i))), o.add(i)); }
}
#[inline] #[target_feature(enable = "avx2")]
unsafe fn widen2(p: *const u16) -> (__m256, __m256) {
    let h = _mm256_loadu_si256(p.cast()); let z = _mm256_setzero_si256();
    (_mm256_castsi256_ps(_mm256_unpacklo_epi16(z, h)), _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, h)))
}
// rounded in the top halves (low halves junk), shifted down
#[inline] #[target_feature(enable = "avx2")]
fn rounded16(v: __m256) -> __m256i {
    let x = _mm256_castps_si256(v);
    let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), _mm256_set1_epi32(1));
    let up = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb);
    let quiet = _mm256_or_si256(x, _mm256_set1_epi32(0x0040_0000));
    let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
    _mm256_srli_epi32::<16>(_mm256_blendv_epi8(up, quiet, nan))
}
#[target_feature(enable = "avx2")]
unsafe fn new(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(16) {
        let (al, ah) = widen2(a.add(i)); let (bl, bh) = widen2(b.add(i));
        let h = _mm256_packus_epi32(rounded16(_mm256_add_ps(al, bl)), rounded16(_mm256_add_ps(ah, bh)));
        _mm256_storeu_si256(o.add(i).cast(), h);
    }
}
fn main() {
    let n = 1 << 20;
    let mut s = 12345u64; let mut r = || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s };
    let mut gen = |k: f32| -> Vec<u16> { (0..n).map(|i| { if i % 1000 == 7 { 0x7fc1 } else if i % 777 == 3 { 0x0003 } else if i % 555 == 1 { 0x7f80 } else { let v = (r() % 20000) as f32 / k - 140.0; (v.to_bits() >> 16) as u16 } }).collect() };
    let a = gen(7.0); let b = gen(3.0);
    let mut o = [vec![0u16; n], vec![0u16; n]];
    for round in 0..4 {
        let t = Instant::now(); for _ in 0..50 { unsafe { cur(a.as_ptr(), b.as_ptr(), o[0].as_mut_ptr(), n) } } let t0 = t.elapsed().as_secs_f64() / 50.0 * 1e6;
        let t = Instant::now(); for _ in 0..50 { unsafe { new(a.as_ptr(), b.as_ptr(), o[1].as_mut_ptr(), n) } } let t1 = t.elapsed().as_secs_f64() / 50.0 * 1e6;
        println!("round {round}: avx2 8-wide {t0:.1} us, 16-wide in-lane {t1:.1} us; same {}", o[0] == o[1]);
    }
}
