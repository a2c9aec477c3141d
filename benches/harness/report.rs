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

use crate::metrics;

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
    /// a lower bar than a later row of the same footprint; at the end every
    /// row meets its footprint's best over the whole run. Returns
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

/// The forms in the order the sweep runs them (the summary's columns, the
/// plot's panels); a scope not listed here (MPI's rows) comes after them.
const FORMS: [&str; 5] = ["host", "thread", "work_group", "work_groups", "queue"];

/// The scopes of `rows`: those of [`FORMS`] in its order, then any other in
/// the order met.
fn forms_of(rows: &[Row]) -> Vec<&str> {
    let mut out: Vec<&str> = FORMS
        .into_iter()
        .filter(|f| rows.iter().any(|r| r.scope == *f))
        .collect();
    for r in rows {
        if !out.contains(&r.scope.as_str()) {
            out.push(&r.scope);
        }
    }
    out
}

/// The collectives of `rows`, in the order met.
fn collectives_of(rows: &[Row]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for r in rows {
        if !out.contains(&r.collective.as_str()) {
            out.push(&r.collective);
        }
    }
    out
}

/// The first line of [`summary`]: where a reader of the output (and
/// `cargo xtask bench`) finds the summary's start.
pub const SUMMARY_HEAD: &str = "summary";

/// The closing lines, from the rows alone: a table with one line per
/// collective (its latency in each form at its smallest size; its best
/// busbw over every size and form, where, and that row's share of the copy
/// roofline), then the floors, then the counts of rows, rows checked, wrong
/// elements and `skipped` (the sizes and forms not run).
pub fn summary(rows: &[Row], floors: &Floors, skipped: usize) -> Vec<String> {
    let forms = forms_of(rows);
    let width = |f: &str| f.len().max(9);
    let mut out = vec![format!(
        "{SUMMARY_HEAD}: latency in us (median per call) at each collective's smallest size; \
         the best busbw in GB/s, where, and its share of the copy roofline"
    )];
    let mut head = format!("{:<15} {:>6}", "collective", "bytes");
    for f in &forms {
        head.push_str(&format!(" {f:>w$}", w = width(f)));
    }
    head.push_str(&format!("  {:>9}  {:<16} {:>8}", "busbw", "at", "roofline"));
    out.push(head);
    let mut host_only: Vec<(u64, String)> = Vec::new();
    for coll in collectives_of(rows) {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.collective == coll).collect();
        let least = mine.iter().map(|r| r.bytes).min().unwrap_or(0);
        // A collective with host rows alone and no busbw fills one cell of a
        // wide line: it joins the host-only lines below, so the summary stays
        // one screen (UCC's v-forms have no device forms).
        let lone = forms.len() > 1 && mine.iter().all(|r| r.scope == "host" && r.busbw.is_none());
        if lone {
            if let Some(r) = mine.iter().find(|r| r.bytes == least) {
                host_only.push((least, format!("{coll} {:.1}", r.median_us)));
            }
            continue;
        }
        let mut line = format!("{coll:<15} {:>6}", metrics::format_bytes(least));
        for f in &forms {
            let at = mine.iter().find(|r| r.scope == *f && r.bytes == least);
            let cell = at.map_or_else(|| "-".into(), |r| format!("{:.1}", r.median_us));
            line.push_str(&format!(" {cell:>w$}", w = width(f)));
        }
        let best = mine
            .iter()
            .filter_map(|r| r.busbw.map(|b| (b, r)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        match best {
            Some((bw, r)) => line.push_str(&format!(
                "  {bw:>9.3}  {:<16} {:>8}",
                format!("{} {}", metrics::format_bytes(r.bytes), r.scope),
                r.roofline_pct
                    .map_or_else(|| "-".into(), |p| format!("{p:.1}%"))
            )),
            None => line.push_str(&format!("  {:>9}", "-")),
        }
        out.push(line.trim_end().to_string());
    }
    out.extend(host_only_lines(&host_only));
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
    let wrong: u64 = rows.iter().filter_map(|r| r.wrong).sum();
    let checked = rows.iter().filter(|r| r.wrong.is_some()).count();
    out.push(format!(
        "rows={} checked={checked} wrong={wrong} skipped={skipped}",
        rows.len()
    ));
    out
}

/// The collectives run on the host alone, as (smallest size, "name
/// latency"), folded into lines of at most [`HOST_ONLY_WIDTH`] characters,
/// one group per smallest size: `host only, us at 8: allreduce 8.5, ...`.
fn host_only_lines(cells: &[(u64, String)]) -> Vec<String> {
    let mut sizes: Vec<u64> = cells.iter().map(|c| c.0).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut out = Vec::new();
    for size in sizes {
        let lead = format!("host only, us at {}:", metrics::format_bytes(size));
        let mut line = lead.clone();
        let mut first = true;
        for (_, cell) in cells.iter().filter(|c| c.0 == size) {
            let sep = if first { " " } else { ", " };
            if !first && line.len() + sep.len() + cell.len() > HOST_ONLY_WIDTH {
                out.push(format!("{line},"));
                line = format!("{:w$}", "", w = lead.len());
                first = true;
            }
            line.push_str(if first { " " } else { ", " });
            line.push_str(cell);
            first = false;
        }
        out.push(line);
    }
    out
}

/// The widest host-only line of the summary: as wide as its table's rows.
const HOST_ONLY_WIDTH: usize = 100;

/// How [`plot`] lays out its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A latency panel and a busbw panel for each form, a line per collective
    /// in each (a sweep's rows).
    ByForm,
    /// One latency panel and one busbw panel, a line per collective and form:
    /// the collective gives its colour, the form its dashes (vkshmem's host
    /// rows against MPI's).
    Overlay,
}

/// Latency against size (log-log) above bus bandwidth against size (log x),
/// laid out by `layout`, with one legend for every panel; PNG or SVG by
/// extension. Rows of 0 bytes (barrier, sync) have no place on a log axis.
pub fn plot(path: &Path, rows: &[Row], title: &str, layout: Layout) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    plot_ready(path)?;
    let panels = match layout {
        Layout::ByForm => forms_of(rows).len().max(1) as u32,
        Layout::Overlay => 1,
    };
    // Panels wide enough for their tick labels, the whole at most a wide
    // screen's width, and the legend beside them.
    let size = ((1500 / panels).clamp(360, 750) * panels + LEGEND_WIDTH, 860);
    match ext.as_str() {
        "svg" => draw(
            SVGBackend::new(path, size).into_drawing_area(),
            rows,
            title,
            layout,
        ),
        "png" => draw(
            BitMapBackend::new(path, size).into_drawing_area(),
            rows,
            title,
            layout,
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

/// The legend's width beside the panels, pixels.
const LEGEND_WIDTH: u32 = 230;

/// A tick label of a value on a log axis: no decimals from 10 up.
fn tick(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

fn draw<DB: plotters::prelude::DrawingBackend>(
    root: plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    rows: &[Row],
    title: &str,
    layout: Layout,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("{e:?}");
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 24)).map_err(err)?;
    let rows: Vec<Row> = rows.iter().filter(|r| r.bytes > 0).cloned().collect();
    let colls = collectives_of(&rows);
    let forms = forms_of(&rows);
    let panels: Vec<Vec<&str>> = match layout {
        Layout::ByForm => forms.iter().map(|f| vec![*f]).collect(),
        Layout::Overlay => vec![forms.clone()],
    };
    let (w, _) = root.dim_in_pixel();
    let (grid, legend) = root.split_horizontally(w.saturating_sub(LEGEND_WIDTH));
    let cells = grid.split_evenly((2, panels.len().max(1)));
    // One size axis for every panel, so that the panels line up.
    let bmin = rows.iter().map(|r| r.bytes).min().unwrap_or(1) as f64;
    let bmax = (rows.iter().map(|r| r.bytes).max().unwrap_or(2) as f64).max(bmin * 2.0);
    // A line's look: the collective's colour; its dashes tell apart
    // collectives that share a colour (ByForm) or the forms (Overlay).
    let look = |coll: &str, form_index: usize| {
        let i = colls.iter().position(|c| *c == coll).unwrap_or(0);
        let (r, g, b) = COLOURS[i % COLOURS.len()];
        let dash = match layout {
            Layout::ByForm => i / COLOURS.len(),
            Layout::Overlay => form_index,
        };
        (RGBColor(r, g, b), DASHES[dash % DASHES.len()])
    };
    for (i, panel) in panels.iter().enumerate() {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| panel.contains(&r.scope.as_str()))
            .collect();
        let name = match layout {
            Layout::ByForm => format!("{}: ", panel[0]),
            Layout::Overlay => String::new(),
        };
        let tmin = mine
            .iter()
            .map(|r| r.median_us)
            .fold(f64::MAX, f64::min)
            .max(1e-3);
        let tmax = mine
            .iter()
            .map(|r| r.median_us)
            .fold(0.0, f64::max)
            .max(tmin * 2.0);
        let bwmax = mine
            .iter()
            .filter_map(|r| r.busbw)
            .fold(0.0, f64::max)
            .max(1e-3);
        let mut lat = ChartBuilder::on(&cells[i])
            .caption(format!("{name}latency"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(65)
            .build_cartesian_2d(
                (bmin..bmax).log_scale().base(2.0),
                (tmin * 0.8..tmax * 1.25).log_scale().base(2.0),
            )
            .map_err(err)?;
        lat.configure_mesh()
            .x_labels(6)
            .y_labels(8)
            .light_line_style(TRANSPARENT)
            .x_label_formatter(&|b| metrics::format_bytes(b.round() as u64))
            .y_label_formatter(&|t| tick(*t))
            .x_desc("bytes")
            .y_desc("latency (us)")
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(err)?;
        let mut bw = ChartBuilder::on(&cells[panels.len() + i])
            .caption(format!("{name}bus bandwidth"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(65)
            .build_cartesian_2d((bmin..bmax).log_scale().base(2.0), 0.0..bwmax * 1.1)
            .map_err(err)?;
        bw.configure_mesh()
            .x_labels(6)
            .light_line_style(TRANSPARENT)
            .x_label_formatter(&|b| metrics::format_bytes(b.round() as u64))
            .x_desc("bytes")
            .y_desc("busbw (GB/s)")
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(err)?;
        for coll in &colls {
            for (form_index, form) in panel.iter().enumerate() {
                let pts: Vec<&Row> = mine
                    .iter()
                    .filter(|r| r.collective == *coll && r.scope == *form)
                    .copied()
                    .collect();
                let (colour, dash) = look(coll, form_index);
                let style = ShapeStyle::from(colour).stroke_width(2);
                let lat_pts: Vec<(f64, f64)> = pts
                    .iter()
                    .map(|r| (r.bytes as f64, r.median_us.max(tmin)))
                    .collect();
                let bw_pts: Vec<(f64, f64)> = pts
                    .iter()
                    .filter_map(|r| r.busbw.map(|b| (r.bytes as f64, b)))
                    .collect();
                let dots = |p: &[(f64, f64)]| -> Vec<Circle<(f64, f64), u32>> {
                    p.iter()
                        .map(|&c| Circle::new(c, 3, style.filled()))
                        .collect()
                };
                lat.draw_series(dots(&lat_pts)).map_err(err)?;
                bw.draw_series(dots(&bw_pts)).map_err(err)?;
                match dash {
                    None => {
                        lat.draw_series(LineSeries::new(lat_pts, style))
                            .map_err(err)?;
                        bw.draw_series(LineSeries::new(bw_pts, style))
                            .map_err(err)?;
                    }
                    Some((on, off)) => {
                        lat.draw_series(DashedLineSeries::new(lat_pts, on, off, style))
                            .map_err(err)?;
                        bw.draw_series(DashedLineSeries::new(bw_pts, on, off, style))
                            .map_err(err)?;
                    }
                }
            }
        }
    }
    // The legend: each collective's line; under Overlay, each form's dashes.
    let text =
        TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut entries: Vec<(String, RGBColor, Dash)> = colls
        .iter()
        .map(|c| {
            let (colour, dash) = look(c, 0);
            (c.to_string(), colour, dash)
        })
        .collect();
    if layout == Layout::Overlay && forms.len() > 1 {
        entries.extend(
            forms
                .iter()
                .enumerate()
                .map(|(i, f)| (f.to_string(), BLACK, DASHES[i % DASHES.len()])),
        );
    }
    for (i, (name, colour, dash)) in entries.into_iter().enumerate() {
        let y = 50 + 22 * i as i32;
        let style = ShapeStyle::from(colour).stroke_width(3);
        let (on, off) = dash.map_or((34, 0), |(on, off)| (on as i32, off as i32));
        let mut x = 10;
        while x < 44 {
            legend
                .draw(&PathElement::new(
                    vec![(x, y), ((x + on).min(44), y)],
                    style,
                ))
                .map_err(err)?;
            x += on + off;
        }
        legend
            .draw(&Text::new(name, (52, y), text.clone()))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// The lines' colours (Tableau 10: apart from each other and dark enough on
/// white).
const COLOURS: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

/// A line's dashes: `None` solid, else pixels drawn and skipped.
type Dash = Option<(u32, u32)>;

/// The lines' dashes: solid, then dashed, then dotted.
const DASHES: [Dash; 3] = [None, Some((8, 5)), Some((3, 3))];

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

    /// A row of `coll` in `scope` at `bytes` with a median, a busbw and a
    /// roofline share, and a wrong count.
    fn at(
        coll: &str,
        scope: &str,
        bytes: u64,
        median_us: f64,
        busbw: Option<f64>,
        roofline_pct: Option<f64>,
        wrong: Option<u64>,
    ) -> Row {
        Row {
            collective: coll.into(),
            scope: scope.into(),
            median_us,
            busbw,
            roofline_pct,
            wrong,
            ..row(bytes)
        }
    }

    /// One line per collective in the order met, a column per form present
    /// (in the sweep's order, whatever the rows' order), the latency at the
    /// collective's smallest size, the best busbw of any size and form with
    /// that row's roofline share; then the floors and the counts.
    #[test]
    fn summary_has_a_line_per_collective_then_floors_and_counts() {
        let rows = [
            at("barrier", "host", 0, 7.04, None, None, None),
            at("reduce", "host", 8, 11.84, Some(0.004), Some(0.3), Some(0)),
            at("reduce", "host", 64, 12.0, Some(0.032), Some(2.0), Some(0)),
            at(
                "reduce",
                "host",
                131072,
                150.0,
                Some(1.311),
                Some(23.8),
                Some(0),
            ),
            at(
                "reduce",
                "work_group",
                8,
                8052.46,
                Some(0.0),
                Some(0.01),
                Some(2),
            ),
            at(
                "reduce",
                "work_group",
                131072,
                9000.0,
                Some(21.5),
                Some(41.0),
                Some(0),
            ),
            // A form first met after others: still in the sweep's column.
            at("barrier", "thread", 0, 3936.5, None, None, None),
            at("allreduce", "host", 8, 8.4, None, None, Some(0)),
            // No host row, and a best busbw without a roofline.
            at("gather", "queue", 8, 1881.56, Some(0.25), None, Some(0)),
        ];
        let got = summary(&rows, &FLOORS, 3);
        let want = [
            "summary: latency in us (median per call) at each collective's smallest size; \
             the best busbw in GB/s, where, and its share of the copy roofline",
            "collective       bytes      host    thread work_group     queue      busbw  at               roofline",
            "barrier              0       7.0    3936.5          -         -          -",
            "reduce               8      11.8         -     8052.5         -     21.500  128K work_group     41.0%",
            "gather               8         -         -          -    1881.6      0.250  8 queue                 -",
            "host only, us at 8: allreduce 8.4",
            "floors: empty submit 30.0 us (40.0 us with every PE submitting); one dispatch 50.0 us \
             (every PE); atomic barrier -; copy 1.00 GB/s (read + write); host memcpy 4.00 GB/s \
             (read + write)",
            "rows=9 checked=7 wrong=2 skipped=3",
        ];
        assert_eq!(got, want);
    }

    /// Only the forms present get a column; no rows, no collective lines.
    #[test]
    fn summary_of_one_form_and_of_none() {
        let rows = [at(
            "broadcast",
            "host",
            1024,
            20.0,
            Some(0.05),
            Some(3.0),
            Some(0),
        )];
        let got = summary(&rows, &FLOORS, 0);
        assert_eq!(
            got[1],
            "collective       bytes      host      busbw  at               roofline"
        );
        assert_eq!(
            got[2],
            "broadcast           1K      20.0      0.050  1K host              3.0%"
        );
        assert_eq!(got.len(), 5);
        let none = summary(&[], &FLOORS, 0);
        assert_eq!(none.len(), 4);
        assert_eq!(none[3], "rows=0 checked=0 wrong=0 skipped=0");
    }

    /// Host-only collectives share lines, grouped by smallest size, wrapped
    /// under the lead at the width of the table.
    #[test]
    fn host_only_collectives_share_wrapped_lines() {
        let cells: Vec<(u64, String)> = (0..9)
            .map(|i| (8, format!("collective_{i} {}.5", 10 + i)))
            .chain([(64, "alltoallv 16.3".to_string())])
            .collect();
        let got = host_only_lines(&cells);
        let want = [
            "host only, us at 8: collective_0 10.5, collective_1 11.5, collective_2 12.5, collective_3 13.5,",
            "                    collective_4 14.5, collective_5 15.5, collective_6 16.5, collective_7 17.5,",
            "                    collective_8 18.5",
            "host only, us at 64: alltoallv 16.3",
        ];
        assert_eq!(got, want);
        assert!(got.iter().all(|l| l.len() <= HOST_ONLY_WIDTH + 1));
        assert!(host_only_lines(&[]).is_empty());
    }

    /// The sweep's plot: a latency and a busbw panel per form, one legend
    /// naming each collective that has a size (not barrier's 0 bytes).
    #[test]
    fn plot_has_panels_per_form_and_one_legend() {
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("p.svg");
        let rows = [
            at("barrier", "host", 0, 7.0, None, None, None),
            at("reduce", "host", 8, 11.0, Some(0.004), None, None),
            at("reduce", "host", 65536, 20.0, Some(0.3), None, None),
            at("fcollect", "thread", 8, 900.0, Some(0.001), None, None),
            at("fcollect", "thread", 65536, 950.0, Some(0.01), None, None),
        ];
        plot(&svg, &rows, "a sweep", Layout::ByForm).unwrap();
        let svg_text = std::fs::read_to_string(&svg).unwrap();
        // The SVG's texts: what lies between each `<text …>` and `</text>`.
        let texts: Vec<&str> = svg_text
            .split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
            .collect();
        for want in [
            "a sweep",
            "host: latency",
            "host: bus bandwidth",
            "thread: latency",
            "thread: bus bandwidth",
            "reduce",
            "fcollect",
            "latency (us)",
            "busbw (GB/s)",
            // Sizes labelled as --max-bytes takes them.
            "2K",
            "32K",
        ] {
            assert!(texts.contains(&want), "{want} missing from {texts:?}");
        }
        assert!(!texts.contains(&"barrier"), "{texts:?}");
        // PNG by extension too; anything else is refused.
        let png = dir.path().join("p.png");
        plot(&png, &rows, "a sweep", Layout::ByForm).unwrap();
        assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
        assert!(plot(&dir.path().join("p.jpg"), &rows, "x", Layout::ByForm).is_err());
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
