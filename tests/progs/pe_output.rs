//! A PE program for the output tests (run through vkshmrun by tests/vkshmrun_output.rs).
//!
//! * `pe_output lines N`: writes N lines to stdout and N to stderr, alternating,
//!   each line in three write(2) calls (`pe P out I `, a payload, the newline), so
//!   that only vkshmrun's line forwarding keeps them whole. See [`payload`].
//! * `pe_output binary`: writes [`binary_blob`] to stdout and to stderr: every byte
//!   value, then a 1 MiB line without a newline.
//! * `pe_output fail MARKDIR [K]`: ignores SIGTERM (so that vkshmrun stopping the
//!   job does not cut a report short), writes `MARKDIR/pe<N>` and waits until every
//!   PE has (so that none fails before all ignore SIGTERM), prints a line to stdout
//!   and one to stderr, then fails from `main` with a two-level anyhow error, the
//!   same on every PE except PE K, which fails with an error of its own.
//! * `pe_output peer K`: ignores SIGTERM, joins the job (`vkshmem::init`), then PE
//!   K fails on its own while the others' `barrier_all` fails because of it.

use std::io::Write;
use std::os::fd::AsFd;

use anyhow::{anyhow, bail, Context as _, Result};

/// The payload of line `i` of PE `pe` on `stream` ("out" or "err"): a length and
/// characters that depend on all three, so a merged or cut line cannot pass.
pub fn payload(pe: u32, stream: &str, i: u32) -> String {
    let len = 20 + ((pe * 7919 + i * 104_729) % 180) as usize;
    let c = (b'a' + ((pe + i) % 26) as u8) as char;
    format!("{stream}{}", c.to_string().repeat(len))
}

/// What `binary` writes: bytes 0..=255 four times over (newlines among them), then
/// one line of 1 MiB without a newline (no zero, no newline byte in it).
pub fn binary_blob() -> Vec<u8> {
    let mut blob: Vec<u8> = (0..4 * 256).map(|i| i as u8).collect();
    blob.extend((0..1u32 << 20).map(|i| 1 + (i % 251) as u8 + u8::from(i % 251 == 9)));
    blob
}

/// Writes `bytes` straight to a file descriptor: no buffering joins the calls.
fn raw(fd: impl AsFd, bytes: &[u8]) -> Result<()> {
    let mut done = 0;
    while done < bytes.len() {
        done += nix::unistd::write(&fd, &bytes[done..])?;
    }
    Ok(())
}

fn lines(pe: u32, n: u32) -> Result<()> {
    for i in 0..n {
        for (stream, to_err) in [("out", false), ("err", true)] {
            let head = format!("pe {pe} {stream} {i} ");
            let body = payload(pe, stream, i);
            for part in [head.as_bytes(), body.as_bytes(), b"\n"] {
                if to_err {
                    raw(std::io::stderr(), part)?;
                } else {
                    raw(std::io::stdout(), part)?;
                }
            }
        }
    }
    Ok(())
}

fn ignore_sigterm() -> Result<()> {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: SIG_IGN installs no handler code.
    unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) }?;
    Ok(())
}

/// Marks `dir/pe<pe>` and waits (up to 5 minutes) until every PE has.
fn file_barrier(dir: &str, pe: u32) -> Result<()> {
    let npes: u32 = std::env::var("VKSHMEM_NPES")?.parse()?;
    std::fs::write(format!("{dir}/pe{pe}"), b"")?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while (0..npes).any(|p| !std::path::Path::new(&format!("{dir}/pe{p}")).exists()) {
        if std::time::Instant::now() > deadline {
            bail!("the other PEs never came");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Ok(())
}

fn fail(pe: u32, dir: &str, odd: Option<u32>) -> Result<()> {
    ignore_sigterm()?;
    file_barrier(dir, pe)?;
    println!("pe {pe} starting");
    std::io::stdout().flush()?;
    eprintln!("pe {pe}: a warning on stderr");
    if odd == Some(pe) {
        bail!("PE {pe} found shard {pe} corrupt");
    }
    Err(anyhow!("disk quota exceeded")).context("writing checkpoint 7")
}

fn peer(bad: u32) -> Result<()> {
    ignore_sigterm()?;
    let ctx = vkshmem::init()?;
    let me = ctx.my_pe();
    ctx.barrier_all().context("first barrier")?;
    if me == bad {
        bail!("PE {me} found a NaN in its gradients");
    }
    ctx.barrier_all().context("barrier after step 1")?;
    ctx.finalize()?;
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let pe: u32 = std::env::var("VKSHMEM_PE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let num = |i: usize| -> Option<u32> { args.get(i)?.parse().ok() };
    match args.get(1).map(String::as_str) {
        Some("lines") => lines(pe, num(2).unwrap_or(1000)),
        Some("binary") => {
            let blob = binary_blob();
            raw(std::io::stdout(), &blob)?;
            raw(std::io::stderr(), &blob)
        }
        Some("fail") => fail(pe, args.get(2).map_or(".", String::as_str), num(3)),
        Some("peer") => peer(num(2).unwrap_or(0)),
        _ => bail!("usage: pe_output lines N | binary | fail MARKDIR [K] | peer K"),
    }
}
