use std::arch::x86_64::*;
use std::time::Instant;
#[target_feature(enable = "avx512f")]
unsafe fn f16_16(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(16) {
        let x = _mm512_cvtph_ps(_mm256_loadu_si256(a.add(i).cast())); let y = _mm512_cvtph_ps(_mm256_loadu_si256(b.add(i).cast()));
        _mm256_storeu_si256(o.add(i).cast(), _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_add_ps(x, y)));
    }
}
#[target_feature(enable = "avx512f")]
unsafe fn f16_32(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) {
        let x0 = _mm512_cvtph_ps(_mm256_loadu_si256(a.add(i).cast())); let y0 = _mm512_cvtph_ps(_mm256_loadu_si256(b.add(i).cast()));
        let x1 = _mm512_cvtph_ps(_mm256_loadu_si256(a.add(i+16).cast())); let y1 = _mm512_cvtph_ps(_mm256_loadu_si256(b.add(i+16).cast()));
        let r0 = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_add_ps(x0, y0));
        let r1 = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_add_ps(x1, y1));
        _mm512_storeu_si512(o.add(i).cast(), _mm512_inserti64x4::<1>(_mm512_castsi256_si512(r0), r1));
    }
}
#[target_feature(enable = "avx2,f16c")]
unsafe fn f16_8(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(8) {
        let x = _mm256_cvtph_ps(_mm_loadu_si128(a.add(i).cast())); let y = _mm256_cvtph_ps(_mm_loadu_si128(b.add(i).cast()));
        _mm_storeu_si128(o.add(i).cast(), _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_add_ps(x, y)));
    }
}
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn i16add(a: *const u16, b: *const u16, o: *mut u16, n: usize) {
    for i in (0..n).step_by(32) { let x = _mm512_loadu_si512(a.add(i).cast()); let y = _mm512_loadu_si512(b.add(i).cast()); _mm512_storeu_si512(o.add(i).cast(), _mm512_add_epi16(x,y)); }
}
fn main() {
    let n = 1 << 20;
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut rnd = || { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; seed };
    let a: Vec<u16> = (0..n).map(|_| 0x3c00 | (rnd() as u16 & 0x3ff)).collect();
    let b: Vec<u16> = (0..n).map(|_| 0x3c00 | (rnd() as u16 & 0x3ff)).collect();
    let mut o = vec![0u16; n];
    for _ in 0..3 {
        for (name, f) in [("f16_8", f16_8 as unsafe fn(*const u16,*const u16,*mut u16,usize)), ("f16_16", f16_16), ("f16_32", f16_32), ("i16", i16add)] {
            let mut best = f64::MAX;
            for _ in 0..50 { let t = Instant::now(); unsafe { f(a.as_ptr(), b.as_ptr(), o.as_mut_ptr(), n) }; best = best.min(t.elapsed().as_secs_f64()); }
            print!("{name} {:.1} us  ", best * 1e6);
        }
        println!();
    }
}
