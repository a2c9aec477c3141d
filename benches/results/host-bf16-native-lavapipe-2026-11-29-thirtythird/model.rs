use std::arch::x86_64::*;
use std::time::Instant;

#[inline] #[target_feature(enable = "avx512f,avx512bw")]
unsafe fn widen2(p: *const u16) -> (__m512, __m512) {
    let h = _mm512_loadu_si512(p.cast()); let z = _mm512_setzero_si512();
    (_mm512_castsi512_ps(_mm512_unpacklo_epi16(z, h)), _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, h)))
}
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
unsafe fn narrow2(lo: __m512, hi: __m512, p: *mut u16) {
    let take = _mm512_set_epi16(63,61,59,57,31,29,27,25,55,53,51,49,23,21,19,17,47,45,43,41,15,13,11,9,39,37,35,33,7,5,3,1);
    let h = _mm512_permutex2var_epi16(rounded(lo), take, rounded(hi));
    _mm512_storeu_si512(p.cast(), h)
}
#[inline] #[target_feature(enable = "avx512f,avx512bw,avx512bf16,avx512dq")]
unsafe fn narrow2_bf(lo: __m512, hi: __m512, p: *mut u16) {
    let d = _mm512_fpclass_ps_mask::<0x20>(lo) | _mm512_fpclass_ps_mask::<0x20>(hi);
    if d != 0 { return narrow2(lo, hi, p); }
    let r: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
    // r[0..16] = lo = per 128-lane l: 8l..8l+3 ; r[16..32] = hi: 8l+4..8l+7
    // out[8l+j] = r[4l+j] (j<4), out[8l+4+j] = r[16+4l+j]
    let take = _mm512_set_epi16(31,30,29,28,15,14,13,12, 27,26,25,24,11,10,9,8, 23,22,21,20,7,6,5,4, 19,18,17,16,3,2,1,0);
    _mm512_storeu_si512(p.cast(), _mm512_permutexvar_epi16(take, r))
}
#[inline] #[target_feature(enable = "avx512f,avx512bw")]
unsafe fn widen_nat(p: *const u16) -> (__m512, __m512) {
    let a = _mm256_loadu_si256(p.cast()); let b = _mm256_loadu_si256(p.add(16).cast());
    (_mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(a))), _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(b))))
}
#[inline] #[target_feature(enable = "avx512f,avx512bw,avx512bf16,avx512dq")]
unsafe fn narrow_nat(lo: __m512, hi: __m512, p: *mut u16) {
    let d = _mm512_fpclass_ps_mask::<0x20>(lo) | _mm512_fpclass_ps_mask::<0x20>(hi);
    if d != 0 { let take = _mm512_set_epi16(63,61,59,57,55,53,51,49,47,45,43,41,39,37,35,33,31,29,27,25,23,21,19,17,15,13,11,9,7,5,3,1);
        return _mm512_storeu_si512(p.cast(), _mm512_permutex2var_epi16(rounded(lo), take, rounded(hi))); }
    let r: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
    _mm512_storeu_si512(p.cast(), r)
}
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn cur(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) { let (al, ah) = widen2(a.add(i)); let (bl, bh) = widen2(b.add(i)); narrow2(_mm512_add_ps(al, bl), _mm512_add_ps(ah, bh), o.add(i)); }
}
#[target_feature(enable = "avx512f,avx512bw,avx512bf16,avx512dq")]
unsafe fn bfi(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) { let (al, ah) = widen2(a.add(i)); let (bl, bh) = widen2(b.add(i)); narrow2_bf(_mm512_add_ps(al, bl), _mm512_add_ps(ah, bh), o.add(i)); }
}
#[target_feature(enable = "avx512f,avx512bw,avx512bf16,avx512dq")]
unsafe fn nat(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) { let (al, ah) = widen_nat(a.add(i)); let (bl, bh) = widen_nat(b.add(i)); narrow_nat(_mm512_add_ps(al, bl), _mm512_add_ps(ah, bh), o.add(i)); }
}
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn i16add(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) { let x = _mm512_loadu_si512(a.add(i).cast()); let y = _mm512_loadu_si512(b.add(i).cast()); _mm512_storeu_si512(o.add(i).cast(), _mm512_add_epi16(x,y)); }
}
fn bf_ref(a: u16, b: u16) -> u16 {
    let s = f32::from_bits((a as u32) << 16) + f32::from_bits((b as u32) << 16);
    let x = s.to_bits();
    if s.is_nan() { return ((x >> 16) | 0x40) as u16; }
    ((x + 0x7fff + ((x >> 16) & 1)) >> 16) as u16
}
fn main() { four();
    let n = 1 << 20;
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut rnd = || { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; seed };
    let a: Vec<u16> = (0..n).map(|_| rnd() as u16).collect();
    let b: Vec<u16> = (0..n).map(|_| rnd() as u16).collect();
    // correctness with random bits (includes subnormals, NaNs)
    let mut o = vec![0u16; n];
    for (name, f) in [("cur", cur as unsafe fn(*const u16,*const u16,*mut u16,usize)), ("bfi", bfi), ("nat", nat)] {
        unsafe { f(a.as_ptr(), b.as_ptr(), o.as_mut_ptr(), n) };
        let bad = (0..n).filter(|&i| o[i] != bf_ref(a[i], b[i])).count();
        println!("{name} bad {bad}"); for i in (0..n).filter(|&i| o[i] != bf_ref(a[i], b[i])).take(3) { println!("  {:04x}+{:04x} -> {:04x} ref {:04x}", a[i], b[i], o[i], bf_ref(a[i], b[i])); }
    }
    // speed on normal data (no subnormals)
    let a: Vec<u16> = (0..n).map(|_| 0x3f00 | (rnd() as u16 & 0xff)).collect();
    let b: Vec<u16> = (0..n).map(|_| 0x3f00 | (rnd() as u16 & 0xff)).collect();
    for _ in 0..3 {
        for (name, f) in [("cur", cur as unsafe fn(*const u16,*const u16,*mut u16,usize)), ("bfi", bfi), ("nat", nat), ("i16", i16add)] {
            let mut best = f64::MAX;
            for _ in 0..50 { let t = Instant::now(); unsafe { f(a.as_ptr(), b.as_ptr(), o.as_mut_ptr(), n) }; best = best.min(t.elapsed().as_secs_f64()); }
            print!("{name} {:.1} us  ", best * 1e6);
        }
        println!();
    }
}
#[inline] #[target_feature(enable = "avx512f")]
fn round(v: __m512) -> __m512 { _mm512_castsi512_ps(_mm512_and_si512(rounded(v), _mm512_set1_epi32(-65536))) }
#[inline] #[target_feature(enable = "avx512f,avx512bw,avx512bf16,avx512dq")]
unsafe fn round2_bf(lo: __m512, hi: __m512) -> (__m512, __m512) {
    let d = _mm512_fpclass_ps_mask::<0x20>(lo) | _mm512_fpclass_ps_mask::<0x20>(hi);
    if d != 0 { return (round(lo), round(hi)); }
    let r: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
    (_mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(r)))),
     _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64::<1>(r)))))
}
#[target_feature(enable = "avx512f,avx512bw")]
pub unsafe fn cur4(s: &[*const u16; 4], o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) { let (mut al, mut ah) = widen2(s[0].add(i));
        for k in 1..3 { let (bl, bh) = widen2(s[k].add(i)); al = round(_mm512_add_ps(al, bl)); ah = round(_mm512_add_ps(ah, bh)); }
        let (bl, bh) = widen2(s[3].add(i)); narrow2(_mm512_add_ps(al, bl), _mm512_add_ps(ah, bh), o.add(i)); }
}
#[target_feature(enable = "avx512f,avx512bw,avx512bf16,avx512dq")]
pub unsafe fn bf4(s: &[*const u16; 4], o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) { let (mut al, mut ah) = widen2(s[0].add(i));
        for k in 1..3 { let (bl, bh) = widen2(s[k].add(i)); (al, ah) = round2_bf(_mm512_add_ps(al, bl), _mm512_add_ps(ah, bh)); }
        let (bl, bh) = widen2(s[3].add(i)); narrow2_bf(_mm512_add_ps(al, bl), _mm512_add_ps(ah, bh), o.add(i)); }
}
#[target_feature(enable = "avx512f,avx512bw,avx512bf16,avx512dq")]
pub unsafe fn bf4b(s: &[*const u16; 4], o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) { let (mut al, mut ah) = widen2(s[0].add(i));
        for k in 1..3 { let (bl, bh) = widen2(s[k].add(i)); al = round(_mm512_add_ps(al, bl)); ah = round(_mm512_add_ps(ah, bh)); }
        let (bl, bh) = widen2(s[3].add(i)); narrow2_bf(_mm512_add_ps(al, bl), _mm512_add_ps(ah, bh), o.add(i)); }
}
pub fn four() {
    let n = 1 << 19;
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut rnd = || { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; seed };
    let v: Vec<Vec<u16>> = (0..4).map(|_| (0..n).map(|_| rnd() as u16).collect()).collect();
    let s = [v[0].as_ptr(), v[1].as_ptr(), v[2].as_ptr(), v[3].as_ptr()];
    let mut o1 = vec![0u16; n]; let mut o2 = vec![0u16; n]; let mut o3 = vec![0u16; n];
    unsafe { cur4(&s, o1.as_mut_ptr(), n); bf4(&s, o2.as_mut_ptr(), n); bf4b(&s, o3.as_mut_ptr(), n); }
    let isnan = |x: u16| x & 0x7fff > 0x7f80;
    let bad = (0..n).filter(|&i| o1[i] != o2[i] && !(isnan(o1[i]) && isnan(o2[i]))).count();
    let bad3 = (0..n).filter(|&i| o1[i] != o3[i] && !(isnan(o1[i]) && isnan(o3[i]))).count();
    println!("4-slot mismatches (non-NaN) {bad} {bad3}");
    let v: Vec<Vec<u16>> = (0..4).map(|_| (0..n).map(|_| 0x3f00 | (rnd() as u16 & 0xff)).collect()).collect();
    let s = [v[0].as_ptr(), v[1].as_ptr(), v[2].as_ptr(), v[3].as_ptr()];
    for _ in 0..3 { for (name, f) in [("cur4", cur4 as unsafe fn(&[*const u16;4], *mut u16, usize)), ("bf4", bf4), ("bf4b", bf4b)] {
        let mut best = f64::MAX;
        for _ in 0..50 { let t = Instant::now(); unsafe { f(&s, o1.as_mut_ptr(), n) }; best = best.min(t.elapsed().as_secs_f64()); }
        print!("{name} {:.1} us  ", best * 1e6); } println!(); }
}
