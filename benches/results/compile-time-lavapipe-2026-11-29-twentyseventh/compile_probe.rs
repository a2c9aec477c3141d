//! scratch: times ctx.device_kernel for each WGSL file given.
fn main() -> anyhow::Result<()> {
    let ctx = vkshmem::init()?;
    for p in std::env::args().skip(1) {
        let src = std::fs::read_to_string(&p)?;
        ctx.barrier_all()?;
        let t = std::time::Instant::now();
        let k = ctx.device_kernel(&src, &p)?;
        let ms = t.elapsed().as_millis();
        drop(k);
        ctx.barrier_all()?;
        println!("probe pe={} {} ms={}", ctx.my_pe(), p, ms);
    }
    Ok(())
}
