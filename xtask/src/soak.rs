//! `cargo xtask soak --minutes N [--pes P] [--seed S]`: random sequences of
//! collectives on P PEs, every call checked against the host reference
//! (tests/progs/soak.rs, run through vkshmrun). Prints the calls per collective
//! and form and `soak: mismatches=0` on success; fails otherwise.

use std::collections::BTreeMap;
use std::process::Stdio;

use anyhow::{bail, Context, Result};

/// What to soak.
#[derive(clap::Args, Clone)]
pub struct SoakArgs {
    /// How long, in minutes (fractions allowed).
    #[arg(long, default_value_t = 2.0)]
    pub minutes: f64,
    /// Number of PEs.
    #[arg(long, default_value_t = 4)]
    pub pes: u32,
    /// Seed of the random sequence (default: a fresh one, printed, to replay).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Device kernels the device forms draw from (default: one per 40 s).
    #[arg(long)]
    pub device_kernels: Option<usize>,
    /// CPU-hungry threads to run beside the job (each spins on a core), to
    /// show that the job holds on a busy machine.
    #[arg(long, default_value_t = 0)]
    pub busy: u32,
    /// Every peer through the staged transport (`VKSHMEM_TRANSPORT=staged`):
    /// host forms only (device code does not reach across devices yet).
    #[arg(long)]
    pub staged: bool,
    /// Share of the data-movement host calls made as queued collectives
    /// (`Context::post`; the soak's `--queued`).
    #[arg(long, default_value_t = 0.0)]
    pub queued: f64,
    /// Run under mpirun as nodes of this many PEs (`VKSHMEM_NODE_SIZE`):
    /// teams that span nodes, through MPI.
    #[arg(long)]
    pub nodes: Option<u32>,
}

/// `n` threads that spin until the value is dropped: a busy machine.
pub struct Busy {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<u64>>,
}

impl Busy {
    /// Starts `n` spinning threads.
    pub fn start(n: u32) -> Busy {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                    x
                })
            })
            .collect();
        Busy { stop, threads }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Builds the soak program and vkshmrun, runs the soak, reports.
pub fn soak(a: &SoakArgs) -> Result<()> {
    crate::deps::ensure()?;
    crate::deps::ensure_mpi_build()?;
    // The test build's packages and features: nothing rebuilds (`-p vkshmrun
    // -p vkshmem` alone unified other features and rebuilt naga and the
    // crates above it).
    crate::build_as_tested(&["--bin", "vkshmrun", "--example", "soak"])?;
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let dir = crate::root().join("target/debug");
    let mut c = crate::launcher(&dir, a.nodes);
    c.arg("-n")
        .arg(a.pes.to_string())
        .arg(dir.join("examples/soak"))
        .arg("--seconds")
        .arg((a.minutes * 60.0).to_string())
        .arg("--seed")
        .arg(seed.to_string());
    if a.queued > 0.0 {
        c.arg("--queued").arg(a.queued.to_string());
    }
    if a.staged {
        c.env("VKSHMEM_TRANSPORT", "staged");
        c.arg("--device-kernels").arg("0");
    } else if let Some(k) = a.device_kernels {
        c.arg("--device-kernels").arg(k.to_string());
    }
    eprintln!(
        "xtask: soak for {:.0} s on {} PEs beside {} busy threads{}{}, seed {seed} (replay with --seed {seed})",
        a.minutes * 60.0,
        a.pes,
        a.busy,
        if a.staged { ", staged transport" } else { "" },
        a.nodes
            .map_or(String::new(), |k| format!(", under mpirun as nodes of {k}"))
    );
    let _busy = Busy::start(a.busy);
    // PE output passes through, except the result lines, read here.
    let out = c
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("starting {c:?}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut results = Vec::new();
    for line in text.lines() {
        match line.strip_prefix("SOAK ") {
            Some(j) => results.push(
                serde_json::from_str::<serde_json::Value>(j)
                    .with_context(|| format!("a PE's result line: {line}"))?,
            ),
            None => println!("{line}"),
        }
    }
    if !out.status.success() || results.len() != a.pes as usize {
        bail!(
            "soak (seed {seed}) failed: the launcher {}, {} of {} PEs reported",
            out.status,
            results.len(),
            a.pes
        );
    }
    let field = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap_or(0);
    let pe0 = results
        .iter()
        .find(|r| field(r, "pe") == 0)
        .context("no result from PE 0")?;
    let counts: BTreeMap<String, u64> = pe0["counts"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    let mismatches: u64 = results.iter().map(|r| field(r, "wrong")).sum();
    let checks: u64 = results.iter().map(|r| field(r, "checked")).sum();
    println!("{:<22} {:>8}", "collective/form", "calls");
    for (k, v) in &counts {
        println!("{k:<22} {v:>8}");
    }
    println!(
        "soak: seed={seed} pes={} seconds={:.0} collectives={} checks={checks} (one per member PE and call) mismatches={mismatches}",
        a.pes,
        pe0["seconds"].as_f64().unwrap_or(0.0),
        field(pe0, "calls"),
    );
    if mismatches != 0 {
        bail!("soak (seed {seed}): {mismatches} mismatches");
    }
    println!("soak: mismatches=0");
    Ok(())
}
