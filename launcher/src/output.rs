//! Forwarding the PEs' output: whole lines, and folded error reports.
//!
//! Every PE's stdout and stderr are pipes to vkshmrun. One thread, the forwarder,
//! reads them all with poll(2) and writes what it reads to vkshmrun's own stdout and
//! stderr (a PE's stdout to stdout, its stderr to stderr), one whole line at a time,
//! so that lines of PEs writing at once never merge (mpirun does the same).
//!
//! * **Bytes pass unchanged**: no UTF-8 assumption. Without `--label` nothing is
//!   added, except a newline that ends a PE's unfinished line when another PE (or
//!   vkshmrun) writes to the same stream before that PE finishes it. With `--label`
//!   every line is prefixed `[pe] ` and ends with a newline.
//! * **Long lines**: a line longer than [`MAX_LINE`] bytes is written in pieces of
//!   that size as it arrives instead of being buffered without limit. Without
//!   `--label` the pieces follow each other unchanged unless another PE's line comes
//!   between them; with `--label` each piece is a labelled line of its own.
//! * **End of file**: a last line without a newline is written as it is (without
//!   `--label`, so binary output passes byte for byte; with `--label` it gets a
//!   newline like every labelled line).
//! * **Error reports**: on a PE's stderr, a line starting with [`REPORT_START`] (how
//!   `fn main() -> anyhow::Result<()>` reports its error) begins that PE's error
//!   report, which runs to the end of its stderr. Reports are held back, not
//!   streamed, and once the job has ended [`Forwarder::finish`] prints identical
//!   reports of several PEs once, every line prefixed with the list of PEs
//!   (`[PEs 0-3,5] Error: …`); a report that differs is printed separately, with its
//!   own PE (`[PE 4] Error: …`). The report of the PE the launcher blamed comes
//!   first. A report that grows past [`MAX_REPORT`] bytes was not a final error
//!   report after all: it is released as ordinary output and streaming resumes.
//! * **Draining**: once every PE has ended, the forwarder reads on until every pipe
//!   is at end of file, or until no pipe has had data for [`DRAIN_IDLE`]: then a
//!   process that a PE started still holds a pipe open, and vkshmrun does not wait
//!   for it. Data a PE wrote before it ended is already in its pipe, so it is never
//!   lost this way.
//!
//! vkshmrun's own messages go through [`note`], which shares the streams' locks,
//! so they never land inside a PE's line either.

use std::collections::HashMap;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// Longest line written whole; a longer one is written in pieces of this size.
pub const MAX_LINE: usize = 64 << 10;
/// Largest error report held back; a larger one is released as ordinary output.
pub const MAX_REPORT: usize = 64 << 10;
/// How a PE's error report begins: the start of a line on its stderr.
pub const REPORT_START: &[u8] = b"Error: ";
/// After the job has ended, how long every still-open pipe must stay quiet before
/// the forwarder stops reading it.
pub const DRAIN_IDLE: Duration = Duration::from_secs(1);
/// Bytes read from a pipe at once.
const READ_SIZE: usize = 64 << 10;
/// How often the forwarder looks whether the job has ended while pipes are quiet.
const POLL_MS: u16 = 100;

/// One of vkshmrun's own output streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    /// vkshmrun's stdout, where the PEs' stdout goes.
    Stdout,
    /// vkshmrun's stderr, where the PEs' stderr and vkshmrun's messages go.
    Stderr,
}

/// For each of vkshmrun's streams, the PE that left a line unfinished there (wrote
/// bytes without a newline after them), if any. Held while writing, it also keeps
/// every write whole.
static OPEN_LINE: [Mutex<Option<u32>>; 2] = [Mutex::new(None), Mutex::new(None)];

/// Locks `dest`'s unfinished-line record (a panic elsewhere does not stop output).
fn lock(dest: Dest) -> MutexGuard<'static, Option<u32>> {
    OPEN_LINE[dest as usize]
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Writes `bytes` to `dest` in full. Errors (a closed stdout) are ignored: the
/// forwarder must keep draining the PEs' pipes whatever happens to its output.
fn write_raw(dest: Dest, bytes: &[u8]) {
    let _ = match dest {
        Dest::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes).and_then(|()| out.flush())
        }
        Dest::Stderr => std::io::stderr().lock().write_all(bytes),
    };
}

/// Writes `bytes` to `dest` on behalf of `writer` (a PE, or `None` for vkshmrun),
/// first ending another writer's unfinished line there with a newline. Records
/// whether `writer` leaves a line unfinished.
fn write_as(dest: Dest, writer: Option<u32>, bytes: &[u8]) {
    let mut open = lock(dest);
    let mut buf = Vec::with_capacity(bytes.len() + 1);
    if open.is_some() && *open != writer {
        buf.push(b'\n');
    }
    buf.extend_from_slice(bytes);
    *open = match (writer, bytes.last()) {
        (_, None) => *open,
        (Some(pe), Some(b)) if *b != b'\n' => Some(pe),
        _ => None,
    };
    write_raw(dest, &buf);
}

/// Prints one of vkshmrun's own messages, `vkshmrun: MSG`, as a line of its stderr.
pub fn note(msg: impl std::fmt::Display) {
    write_as(Dest::Stderr, None, format!("vkshmrun: {msg}\n").as_bytes());
}

/// Cuts a byte stream into fragments: whole lines (with their newline), pieces of
/// [`MAX_LINE`] bytes of a longer line, and, at the end, what is left. The
/// fragments, put together, are the stream byte for byte.
#[derive(Debug, Default)]
struct Lines {
    /// Bytes read and not yet cut off, from `start` on.
    pending: Vec<u8>,
    /// Where the next fragment begins in `pending`.
    start: usize,
}

impl Lines {
    /// Adds bytes read from the stream.
    fn push(&mut self, data: &[u8]) {
        self.pending.drain(..self.start);
        self.start = 0;
        self.pending.extend_from_slice(data);
    }

    /// The next whole line or long-line piece, if one is complete.
    fn next_fragment(&mut self) -> Option<Vec<u8>> {
        let rest = &self.pending[self.start..];
        let len = match rest.iter().take(MAX_LINE).position(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if rest.len() >= MAX_LINE => MAX_LINE,
            None => return None,
        };
        self.start += len;
        Some(rest[..len].to_vec())
    }

    /// What is left at the end of the stream (a last line without newline).
    fn rest(&mut self) -> Option<Vec<u8>> {
        let rest = self.pending.split_off(self.start);
        self.pending.clear();
        self.start = 0;
        (!rest.is_empty()).then_some(rest)
    }
}

/// One PE's stdout or stderr, as the forwarder reads it.
#[derive(Debug)]
struct Stream {
    /// The PE that writes it.
    pe: u32,
    /// Where its bytes go.
    dest: Dest,
    /// The pipe's read end; `None` once at end of file (or given up).
    pipe: Option<File>,
    /// Bytes read, cut into lines.
    lines: Lines,
    /// Whether the next fragment begins a line.
    at_line_start: bool,
    /// The error report held back (stderr only), from its first line on.
    report: Option<Vec<u8>>,
}

impl Stream {
    fn new(pe: u32, dest: Dest, pipe: impl Into<OwnedFd>) -> Self {
        Stream {
            pe,
            dest,
            pipe: Some(File::from(pipe.into())),
            lines: Lines::default(),
            at_line_start: true,
            report: None,
        }
    }

    /// Reads what the pipe has (poll said it would not block) and forwards it.
    /// Returns whether any bytes came.
    fn read_some(&mut self, buf: &mut [u8], label: bool) -> bool {
        let Some(pipe) = &mut self.pipe else {
            return false;
        };
        match pipe.read(buf) {
            Ok(0) => {
                self.close(label);
                false
            }
            Ok(n) => {
                self.lines.push(&buf[..n]);
                while let Some(fragment) = self.lines.next_fragment() {
                    self.take(fragment, label);
                }
                true
            }
            Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => false,
            Err(_) => {
                self.close(label);
                false
            }
        }
    }

    /// Stops reading: forwards a last unfinished line and closes the pipe.
    fn close(&mut self, label: bool) {
        self.pipe = None;
        if let Some(rest) = self.lines.rest() {
            self.take(rest, label);
        }
    }

    /// Forwards one fragment, or holds it back as part of an error report.
    fn take(&mut self, fragment: Vec<u8>, label: bool) {
        let line_start = std::mem::replace(&mut self.at_line_start, fragment.ends_with(b"\n"));
        if let Some(report) = &mut self.report {
            report.extend_from_slice(&fragment);
            if report.len() > MAX_REPORT {
                let report = std::mem::take(report);
                self.report = None;
                self.forward_all(&report, label);
            }
        } else if self.dest == Dest::Stderr && line_start && fragment.starts_with(REPORT_START) {
            self.report = Some(fragment);
        } else {
            self.forward(&fragment, label);
        }
    }

    /// Writes one fragment out, labelled as a line of its own with `--label`.
    fn forward(&self, fragment: &[u8], label: bool) {
        if label {
            let mut line = format!("[{}] ", self.pe).into_bytes();
            line.extend_from_slice(fragment);
            if !fragment.ends_with(b"\n") {
                line.push(b'\n');
            }
            write_as(self.dest, Some(self.pe), &line);
        } else {
            write_as(self.dest, Some(self.pe), fragment);
        }
    }

    /// Writes out bytes held back, fragment by fragment.
    fn forward_all(&self, bytes: &[u8], label: bool) {
        let mut lines = Lines::default();
        lines.push(bytes);
        while let Some(fragment) = lines.next_fragment().or_else(|| lines.rest()) {
            self.forward(&fragment, label);
        }
    }
}

/// The PEs' pipes, gathered while the PEs are started.
#[derive(Debug, Default)]
pub struct Pipes {
    streams: Vec<Stream>,
}

impl Pipes {
    /// Takes `child`'s stdout and stderr pipes (those that were piped) for PE `pe`.
    pub fn add(&mut self, pe: u32, child: &mut Child) {
        if let Some(out) = child.stdout.take() {
            self.streams.push(Stream::new(pe, Dest::Stdout, out));
        }
        if let Some(err) = child.stderr.take() {
            self.streams.push(Stream::new(pe, Dest::Stderr, err));
        }
    }
}

/// An error report held back: the PE and its text.
type Report = (u32, Vec<u8>);

/// The forwarder thread, which copies the PEs' output to vkshmrun's.
#[derive(Debug)]
pub struct Forwarder {
    /// Set once every PE has ended: the thread then drains and stops.
    ended: Arc<AtomicBool>,
    /// The thread; it returns the error reports held back, by PE.
    thread: Option<JoinHandle<Vec<Report>>>,
}

impl Forwarder {
    /// Starts forwarding `pipes`, with `[pe] ` labels when `label` is set.
    pub fn start(pipes: Pipes, label: bool) -> Self {
        let ended = Arc::new(AtomicBool::new(false));
        let flag = ended.clone();
        let thread = std::thread::spawn(move || pump(pipes.streams, label, &flag));
        Forwarder {
            ended,
            thread: Some(thread),
        }
    }

    /// Call once every PE has ended: drains the pipes, then prints the error
    /// reports held back, folded, the report of `blamed` (the PE the launcher
    /// named) first.
    pub fn finish(mut self, blamed: Option<u32>) {
        self.stop(blamed);
    }

    fn stop(&mut self, blamed: Option<u32>) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.ended.store(true, Ordering::Release);
        let reports = thread.join().unwrap_or_default();
        for (pes, text) in fold(reports, blamed) {
            write_as(Dest::Stderr, None, &render(&pes, &text));
        }
    }
}

impl Drop for Forwarder {
    /// A forwarder dropped without [`Forwarder::finish`] still drains and prints
    /// its reports: no held output is lost on an early return.
    fn drop(&mut self) {
        self.stop(None);
    }
}

/// The forwarder thread's loop: poll every open pipe, forward what comes, and
/// once `ended` is set stop at end of file on every pipe or after [`DRAIN_IDLE`]
/// without data. Returns the error reports held back.
fn pump(mut streams: Vec<Stream>, label: bool, ended: &AtomicBool) -> Vec<Report> {
    let mut buf = vec![0u8; READ_SIZE];
    // Once the job has ended: when data last came (or the end was seen).
    let mut quiet_since: Option<Instant> = None;
    while let Some(ready) = ready_streams(&streams) {
        let mut got = false;
        for i in ready {
            got |= streams[i].read_some(&mut buf, label);
        }
        if ended.load(Ordering::Acquire) {
            let since = quiet_since.get_or_insert_with(Instant::now);
            if got {
                *since = Instant::now();
            } else if since.elapsed() >= DRAIN_IDLE {
                break;
            }
        }
    }
    for s in &mut streams {
        s.close(label);
    }
    streams
        .into_iter()
        .filter_map(|s| Some((s.pe, s.report?)))
        .collect()
}

/// Waits up to [`POLL_MS`] for pipes with data (or at end of file) and returns
/// their indices; `None` when no pipe is open any more.
fn ready_streams(streams: &[Stream]) -> Option<Vec<usize>> {
    let open: Vec<usize> = (0..streams.len())
        .filter(|&i| streams[i].pipe.is_some())
        .collect();
    if open.is_empty() {
        return None;
    }
    let mut fds: Vec<PollFd> = open
        .iter()
        .filter_map(|&i| streams[i].pipe.as_ref())
        .map(|p| PollFd::new(p.as_fd(), PollFlags::POLLIN))
        .collect();
    match poll(&mut fds, PollTimeout::from(POLL_MS)) {
        Ok(_) => {}
        Err(Errno::EINTR) => return Some(Vec::new()),
        // Cannot happen with valid descriptors; read them all (reads then fail
        // or return data) rather than spin.
        Err(_) => return Some(open),
    }
    Some(
        open.iter()
            .zip(&fds)
            .filter(|(_, fd)| fd.revents().is_some_and(|r| !r.is_empty()))
            .map(|(&i, _)| i)
            .collect(),
    )
}

/// Groups identical reports: `(PEs, text)` for each different text, the group with
/// `blamed` first, then by lowest PE.
fn fold(mut reports: Vec<Report>, blamed: Option<u32>) -> Vec<(Vec<u32>, Vec<u8>)> {
    reports.sort_by_key(|(pe, _)| *pe);
    let mut groups: Vec<(Vec<u32>, Vec<u8>)> = Vec::new();
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    for (pe, text) in reports {
        match index.get(&text) {
            Some(&g) => groups[g].0.push(pe),
            None => {
                index.insert(text.clone(), groups.len());
                groups.push((vec![pe], text));
            }
        }
    }
    groups.sort_by_key(|(pes, _)| (!blamed.is_some_and(|b| pes.contains(&b)), pes[0]));
    groups
}

/// A sorted list of PEs in a compact form: runs of three or more as `a-b`, the
/// rest separated by commas (`0-3,5,7,8`).
pub fn pe_list(pes: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < pes.len() {
        let mut j = i;
        while j + 1 < pes.len() && pes[j + 1] == pes[j] + 1 {
            j += 1;
        }
        if j >= i + 2 {
            parts.push(format!("{}-{}", pes[i], pes[j]));
        } else {
            parts.extend(pes[i..=j].iter().map(u32::to_string));
        }
        i = j + 1;
    }
    parts.join(",")
}

/// `PE 3` or `PEs 0-3,5`: who, in vkshmrun's words.
pub fn pes_named(pes: &[u32]) -> String {
    match pes {
        [pe] => format!("PE {pe}"),
        _ => format!("PEs {}", pe_list(pes)),
    }
}

/// A folded report as printed: every line prefixed `[PEs …] `, ending with a newline.
fn render(pes: &[u32], text: &[u8]) -> Vec<u8> {
    let prefix = format!("[{}] ", pes_named(pes));
    let mut out = Vec::with_capacity(text.len() + 16 * prefix.len());
    for line in text.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(line);
    }
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragments(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut lines = Lines::default();
        let mut out = Vec::new();
        for c in chunks {
            lines.push(c);
            while let Some(f) = lines.next_fragment() {
                out.push(f);
            }
        }
        out.extend(lines.rest());
        out
    }

    #[test]
    fn lines_are_cut_whole_across_reads() {
        let f = fragments(&[b"ab", b"c\nde", b"f\n\ng"]);
        assert_eq!(f, [&b"abc\n"[..], b"def\n", b"\n", b"g"]);
        assert!(fragments(&[b""]).is_empty());
    }

    #[test]
    fn long_lines_come_in_pieces_and_nothing_changes() {
        let mut data: Vec<u8> = (0..3 * MAX_LINE + 10).map(|i| (i % 251) as u8).collect();
        data.retain(|&b| b != b'\n');
        data.extend_from_slice(b"\nshort\n");
        let chunks: Vec<&[u8]> = data.chunks(4000).collect();
        let f = fragments(&chunks);
        assert!(f.iter().all(|x| x.len() <= MAX_LINE));
        assert_eq!(f[0].len(), MAX_LINE);
        assert_eq!(f.last().unwrap(), b"short\n");
        assert_eq!(f.concat(), data);
        // A line of exactly MAX_LINE bytes, newline included, stays whole.
        let mut exact = vec![b'x'; MAX_LINE - 1];
        exact.push(b'\n');
        assert_eq!(fragments(&[&exact]), [exact.clone()]);
    }

    #[test]
    fn pe_lists_are_compact() {
        assert_eq!(pe_list(&[0, 1, 2, 3, 5]), "0-3,5");
        assert_eq!(pe_list(&[0, 1, 3, 4, 5, 7, 8]), "0,1,3-5,7,8");
        assert_eq!(pe_list(&[4]), "4");
        assert_eq!(pes_named(&[4]), "PE 4");
        assert_eq!(pes_named(&[0, 1, 2]), "PEs 0-2");
    }

    #[test]
    fn identical_reports_fold_and_the_blamed_comes_first() {
        let same = b"Error: boom\n".to_vec();
        let reports = vec![
            (3, same.clone()),
            (0, same.clone()),
            (2, b"Error: mine\n".to_vec()),
            (1, same.clone()),
        ];
        let groups = fold(reports.clone(), None);
        assert_eq!(
            groups,
            [
                (vec![0, 1, 3], same.clone()),
                (vec![2], b"Error: mine\n".to_vec())
            ]
        );
        assert_eq!(fold(reports, Some(2))[0].0, [2]);
    }

    #[test]
    fn reports_render_with_the_pes_on_every_line() {
        let text = b"Error: a\n\nCaused by:\n    b";
        assert_eq!(
            render(&[0, 1, 2, 5], text),
            b"[PEs 0-2,5] Error: a\n[PEs 0-2,5] \n[PEs 0-2,5] Caused by:\n[PEs 0-2,5]     b\n"
        );
    }
}
