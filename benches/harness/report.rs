//! The results: rows, the table on stdout, CSV and JSON files, the final summary
//! and the plots.

use std::path::Path;

use anyhow::{bail, Context as _};

/// One result row; the CSV columns, in order.
#[derive(Debug, Clone, serde::Serialize)]
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
    pub time_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    #[serde(rename = "algbw_GBps")]
    pub algbw: Option<f64>,
    #[serde(rename = "busbw_GBps")]
    pub busbw: Option<f64>,
    pub roofline_pct: Option<f64>,
    pub wrong: Option<u64>,
}

/// The floors and roofline of the run (see `floors`).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Floors {
    /// Copy kernel bandwidth, bytes read plus written per second.
    pub copy_bps: f64,
    /// One empty submit-and-wait, µs.
    pub empty_submit_us: f64,
    /// One round of the bare atomic barrier among the team, µs (GPU time).
    pub atomic_barrier_us: Option<f64>,
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into())
}

pub fn print_table(rows: &[Row]) {
    println!(
        "{:>10} {:>10} {:>7} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6}",
        "collective",
        "scope",
        "type",
        "op",
        "npes",
        "bytes",
        "time_us",
        "min_us",
        "max_us",
        "roofline%",
        "algbw",
        "busbw",
        "wrong"
    );
    for r in rows {
        println!(
            "{:>10} {:>10} {:>7} {:>5} {:>5} {:>10} {:>10.1} {:>10.1} {:>10.1} {:>10} {:>9} {:>9} {:>6}",
            r.collective,
            r.scope,
            r.ty,
            if r.op.is_empty() { "-" } else { &r.op },
            r.npes,
            r.bytes,
            r.time_us,
            r.min_us,
            r.max_us,
            opt(r.roofline_pct),
            opt(r.algbw),
            opt(r.busbw),
            r.wrong.map(|w| w.to_string()).unwrap_or_else(|| "-".into())
        );
    }
}

pub fn write_csv(path: &Path, rows: &[Row]) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path).with_context(|| format!("{}", path.display()))?;
    for r in rows {
        w.serialize(r)?;
    }
    w.flush()?;
    Ok(())
}

pub fn write_json(path: &Path, rows: &[Row], floors: &Floors) -> anyhow::Result<()> {
    #[derive(serde::Serialize)]
    struct Out<'a> {
        floors: &'a Floors,
        rows: &'a [Row],
    }
    std::fs::write(path, serde_json::to_string_pretty(&Out { floors, rows })?)
        .with_context(|| format!("{}", path.display()))
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
        "floors: empty submit {:.1} us; atomic barrier {}; copy {:.2} GB/s (read + write)",
        floors.empty_submit_us,
        floors
            .atomic_barrier_us
            .map(|t| format!("{t:.1} us"))
            .unwrap_or_else(|| "-".into()),
        floors.copy_bps / 1e9
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
            r.collective, r.scope, first.bytes, first.time_us
        );
        if let Some((what, t)) = floor.filter(|f| f.1 > 0.0) {
            line.push_str(&format!(" ({:.1}x the {what})", first.time_us / t));
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
        .map(|r| r.time_us)
        .fold(f64::MAX, f64::min)
        .max(1e-3);
    let tmax = rows
        .iter()
        .map(|r| r.time_us)
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
            pts.iter().map(|r| (r.bytes as f64, r.time_us.max(tmin))),
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
