//! Traces of a job's calls (`VKSHMEM_TRACE=PATH`), in the Chrome
//! trace-event format that Perfetto and chrome://tracing open: a lane per
//! PE, a span per call (named with its number on its team), and its phases
//! nested inside (meet: entry to agreement; run: agreement to the closing
//! meeting or the end; close).
//!
//! Each PE keeps its spans in memory ([`Tracer`]) and writes them, one
//! event a line, to its fragment `PATH.pe<N>` when it goes; whoever
//! started the job (vkshmrun, `run_threads`, or the PE itself when it is
//! alone) merges the fragments into `PATH` ([`merge`]). Times come from
//! `CLOCK_MONOTONIC`, one clock for every process of the machine, so the
//! lanes line up.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use crate::config::ENV_TRACE;

/// Where this process's job writes its trace (`VKSHMEM_TRACE`), if anywhere.
pub fn path() -> Option<PathBuf> {
    crate::config::trace(crate::config::env)
}

/// Microseconds of `CLOCK_MONOTONIC`.
fn now_us() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map_or(0.0, |t| t.tv_sec() as f64 * 1e6 + t.tv_nsec() as f64 / 1e3)
}

/// One call in progress or done.
#[derive(Debug)]
struct Span {
    name: String,
    slot: Option<u32>,
    seq: u32,
    bytes: u64,
    start: f64,
    /// Each phase reached after entry, and when.
    marks: Vec<(&'static str, f64)>,
    end: Option<f64>,
    failed: bool,
}

/// One PE's spans, written to its fragment when it goes.
#[derive(Debug)]
pub struct Tracer {
    path: PathBuf,
    pe: u32,
    /// Merge at once (a job of one PE that nobody else merges).
    alone: bool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    spans: Vec<Span>,
    /// This PE's calls so far on each team slot.
    counts: Vec<u32>,
}

/// Where PE `pe` writes its part of the trace at `path`.
pub fn fragment(path: &Path, pe: u32) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(format!(".pe{pe}"));
    PathBuf::from(p)
}

impl Tracer {
    /// PE `pe`'s tracer for the trace at `path`; `alone`: the PE merges its
    /// fragment itself.
    pub fn new(path: PathBuf, pe: u32, alone: bool) -> Tracer {
        Tracer {
            path,
            pe,
            alone,
            state: Mutex::new(State::default()),
        }
    }

    /// Starts the span of call `name` on team slot `slot`; its id.
    pub fn begin(&self, name: &str, slot: Option<u32>, bytes: u64) -> usize {
        let mut s = crate::lock::lock(&self.state);
        let seq = match slot {
            Some(t) => {
                let t = t as usize;
                if s.counts.len() <= t {
                    s.counts.resize(t + 1, 0);
                }
                s.counts[t] += 1;
                s.counts[t]
            }
            None => 0,
        };
        s.spans.push(Span {
            name: name.to_string(),
            slot,
            seq,
            bytes,
            start: now_us(),
            marks: Vec::new(),
            end: None,
            failed: false,
        });
        s.spans.len() - 1
    }

    /// Span `id` starts its phase `phase` (`run`, `close`; before the
    /// first, it meets).
    pub fn mark(&self, id: usize, phase: &'static str) {
        if let Some(sp) = crate::lock::lock(&self.state).spans.get_mut(id) {
            sp.marks.push((phase, now_us()));
        }
    }

    /// Span `id` ended (`failed`: with an error).
    pub fn end(&self, id: usize, failed: bool) {
        if let Some(sp) = crate::lock::lock(&self.state).spans.get_mut(id) {
            sp.end = Some(now_us());
            sp.failed = failed;
        }
    }

    /// The events of this PE's spans, one JSON object a line.
    fn events(&self) -> String {
        let s = crate::lock::lock(&self.state);
        let mut out = String::new();
        let now = now_us();
        for sp in &s.spans {
            let end = sp.end.unwrap_or(now);
            let name = match sp.slot {
                Some(t) => format!("{} #{} (slot {t})", sp.name, sp.seq),
                None => sp.name.clone(),
            };
            let state = match (sp.end, sp.failed) {
                (None, _) => "unfinished",
                (Some(_), true) => "failed",
                _ => "done",
            };
            let _ = writeln!(
                out,
                r#"{{"name":{},"cat":"call","ph":"X","ts":{:.3},"dur":{:.3},"pid":0,"tid":{},"args":{{"bytes":{},"end":"{state}"}}}}"#,
                json_str(&name),
                sp.start,
                end - sp.start,
                self.pe,
                sp.bytes
            );
            // The phases: meet until the first mark, then each mark to the next.
            let mut at = ("meet", sp.start);
            for &(phase, t) in sp.marks.iter().chain(std::iter::once(&("", end))) {
                if t > at.1 {
                    let _ = writeln!(
                        out,
                        r#"{{"name":"{}","cat":"phase","ph":"X","ts":{:.3},"dur":{:.3},"pid":0,"tid":{}}}"#,
                        at.0,
                        at.1,
                        t - at.1,
                        self.pe
                    );
                }
                at = (phase, t);
            }
        }
        out
    }

    /// Writes this PE's fragment (and merges it where the PE is alone).
    pub fn write(&self) -> std::io::Result<()> {
        let frag = fragment(&self.path, self.pe);
        std::fs::write(&frag, self.events())?;
        if self.alone {
            merge(&self.path, 1)?;
        }
        Ok(())
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if let Err(e) = self.write() {
            tracing::error!(
                "writing the trace of PE {} to {}: {e}",
                self.pe,
                self.path.display()
            );
        }
    }
}

/// `s` as a JSON string.
fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Merges the fragments of PEs `0..npes` of the trace at `path` into
/// `path` (a lane per PE) and removes them; the number of PEs merged. A
/// fragment that is missing (a PE that died, or merged alone) is left out;
/// with none, `path` is left as it is.
pub fn merge(path: &Path, npes: u32) -> std::io::Result<u32> {
    let mut events = Vec::new();
    let mut merged = 0;
    for pe in 0..npes {
        let frag = fragment(path, pe);
        let Ok(text) = std::fs::read_to_string(&frag) else {
            continue;
        };
        events.push(format!(
            r#"{{"name":"thread_name","ph":"M","pid":0,"tid":{pe},"args":{{"name":"PE {pe}"}}}}"#
        ));
        events.extend(text.lines().filter(|l| !l.is_empty()).map(str::to_string));
        std::fs::remove_file(&frag)?;
        merged += 1;
    }
    if merged > 0 {
        let mut f = std::fs::File::create(path)?;
        writeln!(f, "{{\"traceEvents\":[\n{}\n]}}", events.join(",\n"))?;
    }
    Ok(merged)
}

/// [`merge`] once every PE's fragment is there, or after `wait` with
/// those that are: for a program that merges its own job's trace (PE 0 of
/// `vkshmem-bench --trace` under a launcher that does not).
pub fn merge_when_written(
    path: &Path,
    npes: u32,
    wait: std::time::Duration,
) -> std::io::Result<u32> {
    let start = std::time::Instant::now();
    while start.elapsed() < wait && !(0..npes).all(|pe| fragment(path, pe).exists()) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    merge(path, npes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spans nest their phases; the merged file is one JSON object with a
    /// lane per PE.
    #[test]
    fn fragments_merge_into_one_trace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        for pe in 0..2 {
            let t = Tracer::new(path.clone(), pe, false);
            let a = t.begin("reduce", Some(0), 8);
            t.mark(a, "run");
            t.mark(a, "close");
            t.end(a, false);
            let b = t.begin("launch", None, 0);
            t.end(b, true);
            drop(t);
        }
        assert_eq!(merge(&path, 3).unwrap(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("{\"traceEvents\":["), "{text}");
        assert!(text.contains(r#""name":"reduce #1 (slot 0)""#), "{text}");
        assert!(text.contains(r#""tid":1,"args":{"name":"PE 1"}"#), "{text}");
        assert!(text.contains(r#""end":"failed""#), "{text}");
        assert!(!fragment(&path, 0).exists());
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
