//! `ARCHITECTURE.md` stays a map a newcomer can trust: every repository path
//! it names exists, it keeps the sections a reader looks for, it stays short,
//! and it carries no measurements (those belong in `benches/RESULTS.md`).
//!
//! A path is a backticked token (or a word of a fenced block, or a link
//! target) that contains `/` or ends in a known extension, with a trailing
//! `:line` or `::item` cut off. It is resolved against the workspace root; a
//! bare file name that is not at the root (`part.rs`) must name exactly one
//! file of the repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// "At most about 400 lines" (issue 74), with a little room.
const MAX_LINES: usize = 420;

/// The sections of the map, as `## ` headings (each heading starts with one).
const SECTIONS: [&str; 6] = [
    "Bird's-eye view",
    "Entry points",
    "The life of one call",
    "Code map",
    "Invariants and boundaries",
    "Cross-cutting",
];

/// Endings of a file name that make a token without `/` a path.
const EXTENSIONS: [&str; 15] = [
    "rs", "md", "wgsl", "toml", "c", "h", "sh", "py", "cu", "json", "txt", "lock", "yml", "yaml",
    "csv",
];

/// Folders never searched for a bare file name: build output and VCS data.
const SKIP_DIRS: [&str; 2] = ["target", ".git"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}

fn map_text() -> String {
    let p = root().join("ARCHITECTURE.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `token` as a repository path, when it looks like one: no spaces, only path
/// characters, a `/` or a known extension; a trailing `:line[-line]` or
/// `::item` cut off. Absolute paths and URLs are not the repository's.
fn as_path(token: &str) -> Option<String> {
    let mut t = token.trim();
    if let Some(i) = t.find("::") {
        t = &t[..i];
    }
    if let Some(i) = t.find(':') {
        if t[i + 1..]
            .chars()
            .all(|c| c.is_ascii_digit() || c == '-' || c == ':')
        {
            t = &t[..i];
        }
    }
    let path_chars = |c: char| c.is_ascii_alphanumeric() || "_./-*".contains(c);
    if t.is_empty() || t.starts_with('/') || !t.chars().all(path_chars) {
        return None;
    }
    let name = t.trim_end_matches('/').rsplit('/').next().unwrap_or(t);
    let known = name
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext));
    // `..` alone, `.5`, `a.b` of a version: not paths.
    if t.contains('/') && t.chars().any(|c| c.is_ascii_alphabetic()) || known {
        Some(t.to_string())
    } else {
        None
    }
}

/// Every path-looking token of `text` with its 1-based line: backticked
/// spans, the words of fenced blocks, and link targets.
fn named_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    // A backticked span still open at the end of a line: (its line, text).
    let mut open: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            for word in line.split_whitespace() {
                let w = word.trim_matches(|c: char| ",;:()[]{}\"'".contains(c));
                out.extend(as_path(w).map(|p| (n, p)));
            }
            continue;
        }
        // Link targets: `](target)`, outside backticks too.
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let target = rest.split(')').next().unwrap_or("");
            let target = target.split('#').next().unwrap_or("");
            if !target.contains("://") && !target.starts_with("mailto:") {
                out.extend(as_path(target).map(|p| (n, p)));
            }
        }
        for (k, piece) in line.split('`').enumerate() {
            if k > 0 {
                // Each backtick opens or closes a span.
                match open.take() {
                    Some((at, span)) => out.extend(as_path(&span).map(|p| (at, p))),
                    None => open = Some((n, String::new())),
                }
            }
            if let Some((_, span)) = open.as_mut() {
                if k == 0 {
                    // The span began on an earlier line.
                    span.push(' ');
                }
                span.push_str(piece);
            }
        }
    }
    out
}

/// Every file under `dir` by file name (build output and VCS data left out).
fn files_by_name(dir: &Path, out: &mut BTreeMap<String, Vec<PathBuf>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !SKIP_DIRS.contains(&name.as_str()) {
                files_by_name(&p, out);
            }
        } else {
            out.entry(name).or_default().push(p);
        }
    }
}

/// Whether a path with a `*` in its last component matches some entry.
fn glob_matches(root: &Path, pattern: &str) -> bool {
    let (dir, last) = pattern.rsplit_once('/').unwrap_or(("", pattern));
    let Some((pre, post)) = last.split_once('*') else {
        return false;
    };
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return false;
    };
    entries.flatten().any(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        n.len() >= pre.len() + post.len() && n.starts_with(pre) && n.ends_with(post)
    })
}

/// What is wrong with the paths `text` names, one line each: missing paths
/// and bare names that are missing or ambiguous.
fn path_problems(text: &str, root: &Path) -> Vec<String> {
    let mut by_name = BTreeMap::new();
    files_by_name(root, &mut by_name);
    let mut problems = Vec::new();
    for (line, p) in named_paths(text) {
        if p.contains('*') {
            if !glob_matches(root, &p) {
                problems.push(format!("line {line}: `{p}` matches nothing"));
            }
        } else if root.join(&p).exists() {
            continue;
        } else if p.contains('/') {
            problems.push(format!("line {line}: `{p}` does not exist"));
        } else {
            match by_name.get(&p).map(Vec::as_slice) {
                Some([_]) => {}
                None | Some([]) => problems.push(format!("line {line}: no file is named `{p}`")),
                Some(many) => problems.push(format!(
                    "line {line}: `{p}` is ambiguous ({} files: {}); write its path",
                    many.len(),
                    many.iter()
                        .map(|f| f.strip_prefix(root).unwrap_or(f).display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
    }
    problems
}

/// `YYYY-MM-DD`: the date of a run, which belongs in the record.
fn is_date(w: &[u8]) -> bool {
    w.iter().enumerate().all(|(k, &c)| {
        if k == 4 || k == 7 {
            c == b'-'
        } else {
            c.is_ascii_digit()
        }
    })
}

#[test]
fn every_path_the_map_names_exists() {
    let text = map_text();
    let found = named_paths(&text);
    assert!(
        found.len() > 50,
        "the map names only {} paths: is the reader broken?",
        found.len()
    );
    let problems = path_problems(&text, &root());
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md names paths that are not in the repository:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_map_is_short_has_its_sections_and_no_measurements() {
    let text = map_text();
    let lines = text.lines().count();
    assert!(
        lines <= MAX_LINES,
        "ARCHITECTURE.md has {lines} lines; a map stays within about 400 ({MAX_LINES} at most): move detail into the module docs"
    );
    let headings: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("## ")).collect();
    let missing: Vec<&str> = SECTIONS
        .iter()
        .copied()
        .filter(|s| !headings.iter().any(|h| h.starts_with(s)))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md lacks the sections {missing:?} (its `## ` headings: {headings:?})"
    );
    // Measurements belong in benches/RESULTS.md: no timings, bandwidths,
    // shares or dates of runs.
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for unit in ["µs", " us ", "GB/s", "MB/s", "TB/s", "%"] {
            if line.contains(unit) {
                found.push(format!("line {}: {unit:?} in {line:?}", i + 1));
            }
        }
        let date = line
            .as_bytes()
            .windows(10)
            .any(|w| w.starts_with(b"20") && is_date(w));
        if date {
            found.push(format!("line {}: a date in {line:?}", i + 1));
        }
    }
    assert!(
        found.is_empty(),
        "ARCHITECTURE.md carries measurements (they go in benches/RESULTS.md):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reader_finds_paths_and_reports_missing_ones() {
    let text = "\
A `host/src/collective/part.rs`'s `run_as_first`, `host/src/lib.rs:12-40`,
`host/src/vk/`, `Cargo.toml`, `vkshmem_device::layout`, `Context::launch`,
`vec4<u32>`, `cargo xtask test`, `/proc/self/fd` and `0.5`; a span
`split over
xtask/src/main.rs` lines is one token (and has a space: not a path).
[a link](benches/RESULTS.md#top) and [a site](https://example.invalid/x.rs).
```
vocabulary -> plans
host/src/sync/layout.rs, done
```
`no/such/file.rs` and `no_such_file_anywhere.rs`, `mod.rs`.
";
    let found: Vec<(usize, String)> = named_paths(text);
    let names: Vec<&str> = found.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "host/src/collective/part.rs",
            "host/src/lib.rs",
            "host/src/vk/",
            "Cargo.toml",
            "benches/RESULTS.md",
            "host/src/sync/layout.rs",
            "no/such/file.rs",
            "no_such_file_anywhere.rs",
            "mod.rs",
        ]
    );
    assert_eq!(found[5].0, 9, "fenced words keep their line");
    let problems = path_problems(text, &root());
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].contains("`no/such/file.rs` does not exist"));
    assert!(problems[1].contains("no file is named `no_such_file_anywhere.rs`"));
    assert!(problems[2].contains("`mod.rs` is ambiguous"));
    assert!(is_date(b"2026-11-27") && !is_date(b"2026-1x-27") && !is_date(b"20261127xx"));
}
