// Model: 2-slot max over 1M u16 as i16 max, as half-key max, and bf16 widened-f32 max (scalar half-style, for reference).
use std::time::Instant;
#[inline(always)]
fn key(x: u16) -> i16 { let m = (x & 0x7fff) as i16; if x & 0x8000 != 0 { -m } else { m } }
#[inline(always)]
fn pick_max<const NAN: u16>(a: u16, b: u16) -> u16 {
    let (ma, mb) = (a & 0x7fff, b & 0x7fff);
    let take = ma > NAN || (mb <= NAN && key(b) > key(a));
    if take { b } else { a }
}
#[inline(always)]
fn fold(out: &mut [u16], a: &[u16], b: &[u16], f: impl Fn(u16,u16)->u16) {
    for ((o,&x),&y) in out.iter_mut().zip(a).zip(b) { *o = f(x,y); }
}
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn k512(out: &mut [u16], a: &[u16], b: &[u16]) { fold(out,a,b,pick_max::<0x7f80>) }
#[target_feature(enable = "avx2")]
unsafe fn k256(out: &mut [u16], a: &[u16], b: &[u16]) { fold(out,a,b,pick_max::<0x7f80>) }
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn i512(out: &mut [u16], a: &[u16], b: &[u16]) { fold(out,a,b,|x,y| (x as i16).max(y as i16) as u16) }
#[target_feature(enable = "avx2")]
unsafe fn i256(out: &mut [u16], a: &[u16], b: &[u16]) { fold(out,a,b,|x,y| (x as i16).max(y as i16) as u16) }
fn main() {
    let n = 1 << 20;
    let mut s = 12345u64;
    let mut r = || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s as u16 };
    let a: Vec<u16> = (0..n).map(|_| r()).collect();
    let b: Vec<u16> = (0..n).map(|_| r()).collect();
    let mut out = vec![0u16; n];
    // check against half-like scalar
    unsafe { k512(&mut out, &a, &b); }
    for i in 0..n { let (x,y)=(a[i],b[i]); let fx = f32::from_bits((x as u32)<<16); let fy=f32::from_bits((y as u32)<<16);
        let w = if fx.is_nan() || fy > fx { y } else { x }; assert_eq!(out[i], w, "{x:#x} {y:#x}"); }
    let mut out2 = vec![0u16; n];
    unsafe { k256(&mut out2, &a, &b); } assert_eq!(out, out2);
    for round in 0..3 {
        for (name, f) in [("k512", k512 as unsafe fn(&mut [u16],&[u16],&[u16])), ("k256", k256), ("i512", i512), ("i256", i256)] {
            let mut t = vec![];
            for _ in 0..40 { let st = Instant::now(); unsafe { f(&mut out, &a, &b) }; t.push(st.elapsed().as_secs_f64()*1e6); }
            t.sort_by(|x,y| x.partial_cmp(y).unwrap());
            println!("r{round} {name} median {:.1} us min {:.1}", t[20], t[0]);
        }
    }
}
