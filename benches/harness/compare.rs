//! `vkshmem-bench --compare OURS.csv MPI.csv [--plot P]`: bus bandwidth against
//! size for every collective, ours (the host rows of a sweep's CSV) beside
//! Open MPI's (`benches/mpi/mpi_bench.c`'s CSV of the same sweep), as a table
//! and, with `--plot`, one plot with both (MPI's lines dashed). MPI's
//! bus bandwidth comes from its median time with the same nccl-tests sizes
//! and factors as ours (`metrics`). Where MPI has a `broadcast+barrier` row
//! (MPI_Bcast then MPI_Barrier: complete on every rank, as our broadcast is)
//! it stands for MPI's broadcast. Runs no PE: `cargo xtask bench
//! --compare-mpi` calls it after both sweeps.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::metrics;
use crate::report::{self, Row};

/// One row of `mpi_bench`'s CSV.
#[derive(Debug, serde::Deserialize)]
struct MpiRow {
    collective: String,
    #[serde(rename = "type")]
    ty: String,
    op: String,
    npes: u32,
    bytes: u64,
    time_us: f64,
    min_us: f64,
    max_us: f64,
}

/// MPI's rows as [`Row`]s of scope `mpi`, with their bus bandwidth.
fn mpi_rows(rows: Vec<MpiRow>) -> Vec<Row> {
    let synced: Vec<String> = rows
        .iter()
        .filter_map(|r| r.collective.strip_suffix("+barrier").map(str::to_string))
        .collect();
    rows.into_iter()
        .filter(|r| !synced.contains(&r.collective))
        .map(|r| {
            let name = r
                .collective
                .strip_suffix("+barrier")
                .unwrap_or(&r.collective)
                .to_string();
            let factor = metrics::bus_factor(&name, r.npes);
            let algbw = factor.map(|_| {
                metrics::algbw_gbps(metrics::nccl_bytes(&name, r.bytes, r.npes), r.time_us)
            });
            Row {
                collective: name,
                scope: "mpi".into(),
                ty: r.ty,
                op: r.op,
                root: String::new(),
                npes: r.npes,
                bytes: r.bytes,
                count: 0,
                median_us: r.time_us,
                min_us: r.min_us,
                max_us: r.max_us,
                algbw,
                busbw: algbw.zip(factor).map(|(a, f)| a * f),
                roofline_pct: None,
                roofline_gbps: None,
                wrong: None,
            }
        })
        .collect()
}

fn read<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    csv::Reader::from_path(path)
        .with_context(|| format!("reading {}", path.display()))?
        .deserialize()
        .collect::<Result<Vec<T>, _>>()
        .with_context(|| format!("parsing {}", path.display()))
}

/// The table on stdout (and the plot).
pub fn run(ours: &Path, mpi: &Path, plots: &[PathBuf]) -> anyhow::Result<()> {
    let ours: Vec<Row> = read::<Row>(ours)?
        .into_iter()
        .filter(|r| r.scope == "host" && r.busbw.is_some())
        .collect();
    let theirs = mpi_rows(read(mpi)?);
    println!(
        "{:>10} {:>10} {:>14} {:>14} {:>8} {:>12}",
        "collective", "bytes", "vkshmem_busbw", "mpi_busbw", "ratio", "roofline%"
    );
    for t in theirs.iter().filter(|t| t.busbw.is_some()) {
        let mine = ours
            .iter()
            .find(|r| r.collective == t.collective && r.bytes == t.bytes);
        let (b, pct) = mine.map_or((None, None), |r| (r.busbw, r.roofline_pct));
        let cell =
            |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |v| format!("{v:.prec$}"));
        println!(
            "{:>10} {:>10} {:>14} {:>14} {:>8} {:>12}",
            t.collective,
            t.bytes,
            cell(b, 3),
            cell(t.busbw, 3),
            cell(b.zip(t.busbw).map(|(a, m)| a / m), 2),
            cell(pct, 1)
        );
    }
    println!("(busbw in GB/s, nccl-tests' definition; ratio = vkshmem / MPI)");
    let all: Vec<Row> = ours.into_iter().chain(theirs).collect();
    for p in plots {
        report::plot(
            p,
            &all,
            "vkshmem (host) against Open MPI: latency and bus bandwidth",
            report::Layout::Overlay,
        )?;
    }
    Ok(())
}
