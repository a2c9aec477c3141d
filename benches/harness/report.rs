//! The results: rows, the table on stdout, CSV and JSON files, the final summary
//! and the plots.
//!
//! Rows are streamed: [`Stream`] prints each row and writes it to the CSV and
//! JSON files as soon as it is measured, so a run that fails or is killed
//! half-way keeps every row measured before, in files that parse. The summary
//! and the plots come at the end.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use indicatif::ProgressBar;

/// One result row; the CSV columns, in order ([`COLUMNS`]).
///
/// The times are microseconds per call: `median_us` is the median over the
/// timed calls (host) or dispatches (thread, work_group), `min_us` and `max_us`
/// the extremes of the same samples; the bandwidths are computed from the
/// median.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub collective: String,
    pub scope: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub op: String,
    pub root: String,
    pub npes: u32,
    pub bytes: u64,
    pub count: u64,
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    #[serde(rename = "algbw_GBps")]
    pub algbw: Option<f64>,
    #[serde(rename = "busbw_GBps")]
    pub busbw: Option<f64>,
    pub roofline_pct: Option<f64>,
    /// The copy bandwidth the row is judged against (its footprint's).
    #[serde(rename = "roofline_GBps")]
    pub roofline_gbps: Option<f64>,
    pub wrong: Option<u64>,
}

/// The CSV header: [`Row`]'s serialized field names, in order (a test keeps the
/// two the same). Written before the first row, so a run that fails before its
/// first row still leaves a CSV with its header.
pub const COLUMNS: [&str; 16] = [
    "collective",
    "scope",
    "type",
    "op",
    "root",
    "npes",
    "bytes",
    "count",
    "median_us",
    "min_us",
    "max_us",
    "algbw_GBps",
    "busbw_GBps",
    "roofline_pct",
    "roofline_GBps",
    "wrong",
];

/// The floors and roofline of the run (see `floors`).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Floors {
    /// Copy kernel bandwidth, bytes read plus written per second (`None`:
    /// not measured, `--no-roofline`).
    pub copy_bps: Option<f64>,
    /// One PE's host memcpy of 32 MiB (plain or streaming stores, the
    /// faster), bytes read plus written per second.
    pub host_memcpy_bps: f64,
    /// One empty submit-and-wait, µs (the reporter alone).
    pub empty_submit_us: f64,
    /// One empty submit-and-wait while every PE submits at once, µs (what a
    /// host collective's kernel path pays on a shared device).
    pub empty_submit_all_us: f64,
    /// The smallest dispatch launched and waited for while every PE launches
    /// at once, µs (what a host collective's kernel costs before its syncs).
    pub one_dispatch_all_us: f64,
    /// One round of the bare atomic barrier among the team, µs (GPU time).
    pub atomic_barrier_us: Option<f64>,
}

/// A value with three decimals, or `-` when there is none.
fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into())
}

/// The lines above the table: what its times are, then the column names.
pub fn table_header() -> [String; 2] {
    [
        "# median_us: the median time per call in us, over the timed calls (host) or \
         dispatches (thread, work_group); min_us, max_us: their extremes"
            .to_string(),
        format!(
            "{:>10} {:>10} {:>7} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6}",
            "collective",
            "scope",
            "type",
            "op",
            "npes",
            "bytes",
            "median_us",
            "min_us",
            "max_us",
            "roofline%",
            "algbw",
            "busbw",
            "wrong"
        ),
    ]
}

/// One row of the table, aligned under [`table_header`].
pub fn table_row(r: &Row) -> String {
    format!(
        "{:>10} {:>10} {:>7} {:>5} {:>5} {:>10} {:>10.1} {:>10.1} {:>10.1} {:>10} {:>9} {:>9} {:>6}",
        r.collective,
        r.scope,
        r.ty,
        if r.op.is_empty() { "-" } else { &r.op },
        r.npes,
        r.bytes,
        r.median_us,
        r.min_us,
        r.max_us,
        opt(r.roofline_pct),
        opt(r.algbw),
        opt(r.busbw),
        r.wrong.map(|w| w.to_string()).unwrap_or_else(|| "-".into())
    )
}

/// Where each finished row goes at once: the table on stdout (printed through
/// the progress bar, which it would otherwise garble), the CSV (appended and
/// flushed) and the JSON (rewritten whole and renamed into place). Every row
/// pushed is also kept for the summary and the plots.
pub struct Stream {
    /// Lines go to stdout through this bar (hidden on PEs that do not report).
    progress: ProgressBar,
    /// Whether this PE prints the table.
    print: bool,
    csv: Option<CsvOut>,
    json: Option<JsonOut>,
    rows: Vec<Row>,
}

/// `--phases`' line after a row: each timed phase's median (and its count
/// where a call ran it more or less than once), e.g. `# phases broadcast
/// 1048576 B: meet 1.2 us, run 40.3, record 2.1, submit 5.0, wait 30.2,
/// gpu 3.1, close 0.9, call 43.0 (median us; 20 calls)`.
pub fn phases_line(coll: &str, bytes: u64, phases: &[vkshmem::PhaseStat]) -> String {
    let calls = phases
        .iter()
        .find(|p| p.phase == vkshmem::Phase::Call)
        .map_or(0, |p| p.count);
    let parts: Vec<String> = phases
        .iter()
        .map(|p| {
            let times = if p.count != calls && calls > 0 {
                format!(" x{:.2}", p.count as f64 / calls as f64)
            } else {
                String::new()
            };
            format!("{} {:.1}{times}", p.phase.name(), p.median_us)
        })
        .collect();
    format!(
        "# phases {coll} {bytes} B: {} (median us; {calls} calls)",
        parts.join(", ")
    )
}

impl Stream {
    /// A stream that prints the table when `print` and writes the files given;
    /// it creates them at once (the CSV with its header, the JSON with no rows)
    /// and prints the table header.
    pub fn new(
        progress: ProgressBar,
        print: bool,
        csv: Option<&Path>,
        json: Option<(&Path, Floors)>,
    ) -> anyhow::Result<Stream> {
        let s = Stream {
            progress,
            print,
            csv: csv.map(CsvOut::create).transpose()?,
            json: json
                .map(|(p, floors)| JsonOut::create(p, floors))
                .transpose()?,
            rows: Vec::new(),
        };
        for line in table_header() {
            s.println(&line);
        }
        Ok(s)
    }

    /// Prints one line on stdout (when this PE prints), above the progress bar.
    pub fn println(&self, line: &str) {
        if self.print {
            self.progress.suspend(|| println!("{line}"));
        }
    }

    /// A finished row: printed, appended to the CSV, the JSON rewritten.
    pub fn push(&mut self, row: Row) -> anyhow::Result<()> {
        self.println(&table_row(&row));
        if let Some(c) = &mut self.csv {
            c.append(&row)?;
        }
        self.rows.push(row);
        if let Some(j) = &self.json {
            j.write(&self.rows, false, None)?;
        }
        Ok(())
    }

    /// The end of the sweep: the JSON marked complete, or failed with `error`.
    pub fn finish(&self, error: Option<&str>) -> anyhow::Result<()> {
        if let Some(j) = &self.json {
            j.write(&self.rows, error.is_none(), error)?;
        }
        Ok(())
    }

    /// Judges every row again against `best(row)` (bytes read plus written
    /// per second; `None` leaves the row as it is) and rewrites the CSV and
    /// JSON with the new roofline_pct and roofline_GBps. The roofline keeps
    /// each footprint's best measurement so far, so a row printed early met
    /// a lower bar than a later row of the same footprint (2-PE alltoall
    /// and alltoalls at the same time on lavapipe: 80 against 67 %); at the
    /// end every row meets its footprint's best over the whole run. Returns
    /// how many rows changed.
    pub fn rejudge(&mut self, best: impl Fn(&Row) -> Option<f64>) -> anyhow::Result<usize> {
        let mut changed = 0;
        for r in &mut self.rows {
            let (Some(pct), Some(gbps), Some(bps)) = (r.roofline_pct, r.roofline_gbps, best(r))
            else {
                continue;
            };
            let new = bps / 1e9;
            if new > gbps {
                // pct * gbps is the row's least traffic per second (GB/s * 100).
                r.roofline_pct = Some(pct * gbps / new);
                r.roofline_gbps = Some(new);
                changed += 1;
            }
        }
        if changed > 0 {
            if let Some(c) = &mut self.csv {
                *c = CsvOut::create(&c.path.clone())?;
                for r in &self.rows {
                    c.append(r)?;
                }
            }
            if let Some(j) = &self.json {
                j.write(&self.rows, false, None)?;
            }
        }
        Ok(changed)
    }

    /// The rows pushed so far.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }
}

/// The CSV file: header first, then one flushed record per row.
struct CsvOut {
    path: PathBuf,
    w: csv::Writer<File>,
}

impl CsvOut {
    /// Creates (truncates) `path` and writes the header.
    fn create(path: &Path) -> anyhow::Result<CsvOut> {
        let file = File::create(path).with_context(|| format!("{}", path.display()))?;
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(file);
        w.write_record(COLUMNS)?;
        w.flush()?;
        Ok(CsvOut {
            path: path.to_path_buf(),
            w,
        })
    }

    /// Appends `row` and flushes it to the file.
    fn append(&mut self, row: &Row) -> anyhow::Result<()> {
        self.w
            .serialize(row)
            .and_then(|_| Ok(self.w.flush()?))
            .with_context(|| format!("{}", self.path.display()))
    }
}

/// The JSON file, always one whole document: each write goes to a temporary
/// file beside it (`NAME.tmp`) that is then renamed over it, so a reader (or a
/// run killed mid-write) never sees half a document.
struct JsonOut {
    path: PathBuf,
    floors: Floors,
}

/// The JSON document: `complete` is false while the sweep runs and stays false
/// when it fails (`error` says why) or is killed (no `error`).
#[derive(serde::Serialize)]
struct JsonDoc<'a> {
    complete: bool,
    error: Option<&'a str>,
    floors: &'a Floors,
    rows: &'a [Row],
}

impl JsonOut {
    /// Writes the document with no rows yet.
    fn create(path: &Path, floors: Floors) -> anyhow::Result<JsonOut> {
        let j = JsonOut {
            path: path.to_path_buf(),
            floors,
        };
        j.write(&[], false, None)?;
        Ok(j)
    }

    /// Replaces the file with the document of `rows`.
    fn write(&self, rows: &[Row], complete: bool, error: Option<&str>) -> anyhow::Result<()> {
        let doc = JsonDoc {
            complete,
            error,
            floors: &self.floors,
            rows,
        };
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, serde_json::to_string_pretty(&doc)?)
            .and_then(|_| std::fs::rename(&tmp, &self.path))
            .with_context(|| format!("{}", self.path.display()))
    }
}

/// The closing lines: rows and wrong elements, the floors, and for each
/// collective and scope its smallest-size latency against its floor and its best
/// roofline percentage and bus bandwidth.
pub fn summary(rows: &[Row], floors: &Floors, skipped: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let wrong: u64 = rows.iter().filter_map(|r| r.wrong).sum();
    let checked = rows.iter().filter(|r| r.wrong.is_some()).count();
    out.push(format!(
        "rows={} checked={checked} wrong={wrong} skipped={}",
        rows.len(),
        skipped.len()
    ));
    out.push(format!(
        "floors: empty submit {:.1} us ({:.1} us with every PE submitting); one dispatch {:.1} us (every PE); atomic barrier {}; copy {} (read + write); host memcpy {:.2} GB/s (read + write)",
        floors.empty_submit_us,
        floors.empty_submit_all_us,
        floors.one_dispatch_all_us,
        floors
            .atomic_barrier_us
            .map(|t| format!("{t:.1} us"))
            .unwrap_or_else(|| "-".into()),
        floors
            .copy_bps
            .map_or_else(|| "not measured".into(), |b| format!("{:.2} GB/s", b / 1e9)),
        floors.host_memcpy_bps / 1e9
    ));
    let mut seen: Vec<(String, String)> = Vec::new();
    for r in rows {
        let key = (r.collective.clone(), r.scope.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let group: Vec<&Row> = rows
            .iter()
            .filter(|x| x.collective == r.collective && x.scope == r.scope)
            .collect();
        let first = group[0];
        // Host calls are judged against the empty submit; device calls against
        // the bare atomic barrier.
        let floor = if r.scope == "host" {
            Some(("empty submit", floors.empty_submit_us))
        } else {
            floors.atomic_barrier_us.map(|t| ("atomic barrier", t))
        };
        let mut line = format!(
            "{} {}: {} B {:.1} us",
            r.collective, r.scope, first.bytes, first.median_us
        );
        if let Some((what, t)) = floor.filter(|f| f.1 > 0.0) {
            line.push_str(&format!(" ({:.1}x the {what}", first.median_us / t));
            if r.scope == "host" && floors.one_dispatch_all_us > 0.0 {
                line.push_str(&format!(
                    ", {:.1}x one dispatch",
                    first.median_us / floors.one_dispatch_all_us
                ));
            }
            line.push(')');
        }
        let best_roof = group
            .iter()
            .filter_map(|x| x.roofline_pct.map(|p| (p, x.bytes)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((p, b)) = best_roof {
            line.push_str(&format!("; best roofline {p:.1}% at {b} B"));
        }
        let best_bus = group
            .iter()
            .filter_map(|x| x.busbw)
            .max_by(|a, b| a.total_cmp(b));
        if let Some(bw) = best_bus {
            line.push_str(&format!("; best busbw {bw:.3} GB/s"));
        }
        out.push(line);
    }
    out.extend(skipped.iter().map(|s| format!("skipped: {s}")));
    out
}

/// Latency against size (log-log) and bus bandwidth against size (log x), one
/// line per collective and scope, side by side; PNG or SVG by extension.
pub fn plot(path: &Path, rows: &[Row], title: &str) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    plot_ready(path)?;
    let size = (1400, 600);
    match ext.as_str() {
        "svg" => draw(SVGBackend::new(path, size).into_drawing_area(), rows, title),
        "png" => draw(
            BitMapBackend::new(path, size).into_drawing_area(),
            rows,
            title,
        ),
        _ => bail!(
            "--plot {}: the file must end in .png or .svg",
            path.display()
        ),
    }
    .with_context(|| format!("plotting to {}", path.display()))
}

/// Whether `path` can be plotted to (its extension, a font), checked before a
/// sweep rather than after it.
pub fn plot_ready(path: &Path) -> anyhow::Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ext != "png" && ext != "svg" {
        bail!(
            "--plot {}: the file must end in .png or .svg",
            path.display()
        );
    }
    register_font()
}

/// Text needs a TrueType font: the first of the usual system ones (registered
/// once).
fn register_font() -> anyhow::Result<()> {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if DONE.get().is_some() {
        return Ok(());
    }
    const FONTS: [&str; 3] = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    ];
    let Some(bytes) = FONTS.iter().find_map(|p| std::fs::read(p).ok()) else {
        bail!("plots need a TrueType font; install one with: apt-get install fonts-dejavu-core");
    };
    // The font lives as long as the process (plotters keeps a 'static reference).
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, bytes)
        .map_err(|_| anyhow::anyhow!("the system font could not be read"))?;
    let _ = DONE.set(());
    Ok(())
}

fn draw<DB: plotters::prelude::DrawingBackend>(
    root: plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    rows: &[Row],
    title: &str,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    use plotters::prelude::*;
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("{e:?}");
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    let (left, right) = root.split_horizontally(700);
    let mut series: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in rows.iter().filter(|r| r.bytes > 0) {
        let name = format!("{} {}", r.collective, r.scope);
        match series.iter_mut().find(|s| s.0 == name) {
            Some(s) => s.1.push(r),
            None => series.push((name, vec![r])),
        }
    }
    let bmin = rows
        .iter()
        .map(|r| r.bytes)
        .filter(|&b| b > 0)
        .min()
        .unwrap_or(1) as f64;
    let bmax = (rows.iter().map(|r| r.bytes).max().unwrap_or(2) as f64).max(bmin * 2.0);
    let tmin = rows
        .iter()
        .map(|r| r.median_us)
        .fold(f64::MAX, f64::min)
        .max(1e-3);
    let tmax = rows
        .iter()
        .map(|r| r.median_us)
        .fold(0.0, f64::max)
        .max(tmin * 2.0);
    let bwmax = rows
        .iter()
        .filter_map(|r| r.busbw)
        .fold(0.0, f64::max)
        .max(1e-6);
    let mut lat = ChartBuilder::on(&left)
        .caption("latency", ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((bmin..bmax).log_scale(), (tmin..tmax).log_scale())
        .map_err(err)?;
    lat.configure_mesh()
        .x_desc("bytes")
        .y_desc("time (us)")
        .draw()
        .map_err(err)?;
    let mut bw = ChartBuilder::on(&right)
        .caption("bus bandwidth", ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((bmin..bmax).log_scale(), 0.0..bwmax * 1.05)
        .map_err(err)?;
    bw.configure_mesh()
        .x_desc("bytes")
        .y_desc("busbw (GB/s)")
        .draw()
        .map_err(err)?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let style = ShapeStyle::from(color).stroke_width(2);
        lat.draw_series(LineSeries::new(
            pts.iter().map(|r| (r.bytes as f64, r.median_us.max(tmin))),
            style,
        ))
        .map_err(err)?
        .label(name.as_str())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        let with_bw: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|r| r.busbw.map(|b| (r.bytes as f64, b)))
            .collect();
        if !with_bw.is_empty() {
            bw.draw_series(LineSeries::new(with_bw, style))
                .map_err(err)?;
        }
    }
    lat.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 11))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of `bytes` bytes with some of its optional values missing.
    fn row(bytes: u64) -> Row {
        Row {
            collective: "reduce".into(),
            scope: "host".into(),
            ty: "float".into(),
            op: "sum".into(),
            root: String::new(),
            npes: 4,
            bytes,
            count: bytes / 4,
            median_us: 12.5,
            min_us: 10.0,
            max_us: 20.0,
            algbw: Some(0.5),
            busbw: Some(0.75),
            roofline_pct: None,
            roofline_gbps: None,
            wrong: Some(0),
        }
    }

    #[test]
    fn rows_are_judged_again_against_the_final_best() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("rows.csv");
        let mut s = Stream::new(ProgressBar::hidden(), false, Some(&csv), None).unwrap();
        for (bytes, pct, gbps) in [(1024, 80.0, 2.0), (2048, 50.0, 2.0), (4096, 90.0, 3.0)] {
            s.push(Row {
                roofline_pct: Some(pct),
                roofline_gbps: Some(gbps),
                ..row(bytes)
            })
            .unwrap();
        }
        s.push(row(8192)).unwrap();
        // The first footprint's best rose to 2.5 GB/s; the third's is no
        // higher than its bar; the last row has no roofline.
        let best = |r: &Row| match r.bytes {
            1024 | 2048 => Some(2.5e9),
            _ => Some(1e9),
        };
        assert_eq!(s.rejudge(best).unwrap(), 2);
        let pcts: Vec<_> = s.rows().iter().map(|r| r.roofline_pct).collect();
        assert_eq!(pcts, [Some(64.0), Some(40.0), Some(90.0), None]);
        assert_eq!(s.rows()[0].roofline_gbps, Some(2.5));
        // The CSV rewritten whole: the header and four rows, the new values.
        let text = std::fs::read_to_string(&csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[1].contains(",64.0,2.5,"), "{}", lines[1]);
        assert!(lines[3].contains(",90.0,3.0,"), "{}", lines[3]);
    }

    const FLOORS: Floors = Floors {
        copy_bps: Some(1e9),
        host_memcpy_bps: 4e9,
        empty_submit_us: 30.0,
        empty_submit_all_us: 40.0,
        one_dispatch_all_us: 50.0,
        atomic_barrier_us: None,
    };

    /// The header written by hand is the one serde would write for a row.
    #[test]
    fn columns_match_the_row_fields() {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(row(8)).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(text.lines().next().unwrap(), COLUMNS.join(","));
    }

    /// The CSV and the JSON hold every row pushed so far, and parse, after every
    /// row; the JSON says whether the sweep finished, and why not.
    #[test]
    fn files_hold_every_row_as_it_comes() {
        let dir = tempfile::tempdir().unwrap();
        let (csv_path, json_path) = (dir.path().join("o.csv"), dir.path().join("o.json"));
        let mut s = Stream::new(
            ProgressBar::hidden(),
            false,
            Some(&csv_path),
            Some((&json_path, FLOORS)),
        )
        .unwrap();
        let check = |n: usize, complete: bool, error: Option<&str>| {
            let mut r = csv::Reader::from_path(&csv_path).unwrap();
            let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
            assert_eq!(head, COLUMNS);
            let recs: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
            assert_eq!(recs.len(), n);
            for (i, rec) in recs.iter().enumerate() {
                assert_eq!(&rec[6], (8u64 << i).to_string());
                assert_eq!(&rec[8], "12.5");
            }
            let doc: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
            assert_eq!(doc["complete"], complete);
            assert_eq!(doc["error"].as_str(), error);
            assert_eq!(doc["floors"]["empty_submit_us"], 30.0);
            let rows = doc["rows"].as_array().unwrap();
            assert_eq!(rows.len(), n);
            for (i, r) in rows.iter().enumerate() {
                assert_eq!(r["bytes"], 8u64 << i);
                assert_eq!(r["median_us"], 12.5);
            }
        };
        check(0, false, None);
        for i in 0..3 {
            s.push(row(8 << i)).unwrap();
            check(i + 1, false, None);
        }
        assert_eq!(s.rows().len(), 3);
        s.finish(Some("reduce host: PE 1 failed")).unwrap();
        check(3, false, Some("reduce host: PE 1 failed"));
        s.finish(None).unwrap();
        check(3, true, None);
        // No temporary file is left beside the JSON.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    /// Table rows line up under the header's columns.
    #[test]
    fn table_rows_align_with_the_header() {
        let [note, head] = table_header();
        assert!(note.starts_with("# ") && note.contains("median"));
        assert!(head.contains("median_us"));
        assert_eq!(table_row(&row(1024)).len(), head.len());
    }
}
