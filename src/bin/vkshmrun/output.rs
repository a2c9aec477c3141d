//! Output pass-through with `[pe] ` labels.

use std::io::{BufRead, BufReader, Read, Write};
use std::thread::JoinHandle;

/// Copies `from` line by line to stdout (or stderr), each line prefixed `[pe] `.
/// Bytes are passed through unchanged (no UTF-8 assumption); a last line without a
/// newline gets one.
pub fn label(pe: u32, from: impl Read + Send + 'static, to_stderr: bool) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = BufReader::new(from);
        let mut line = Vec::new();
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.last() != Some(&b'\n') {
                line.push(b'\n');
            }
            let mut buf = format!("[{pe}] ").into_bytes();
            buf.extend_from_slice(&line);
            // One write per line under the stream's lock keeps lines whole.
            let _ = if to_stderr {
                std::io::stderr().lock().write_all(&buf)
            } else {
                std::io::stdout().lock().write_all(&buf)
            };
        }
    })
}
