//! The OpenSHMEM 1.5 specification's environment variables, read beside
//! vkshmem's own: `SHMEM_SYMMETRIC_SIZE` (the heap's size where
//! `VKSHMEM_SYMMETRIC_SIZE` is unset), `SHMEM_VERSION` and `SHMEM_INFO`
//! (what PE 0 prints at init) and `SHMEM_DEBUG` (vkshmem's debug log where
//! `RUST_LOG` is unset). Programs written for any OpenSHMEM library come
//! with instructions in these names, so they must work here too.

use super::*;

/// The specification's name for the symmetric heap's size.
pub const ENV_SHMEM_SYMMETRIC_SIZE: &str = "SHMEM_SYMMETRIC_SIZE";
/// The specification's switch: print the library's version at init.
pub const ENV_SHMEM_VERSION: &str = "SHMEM_VERSION";
/// The specification's switch: print the library's settings at init.
pub const ENV_SHMEM_INFO: &str = "SHMEM_INFO";
/// The specification's switch: debugging output.
pub const ENV_SHMEM_DEBUG: &str = "SHMEM_DEBUG";

/// This library's version.
pub const LIBRARY_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The OpenSHMEM specification this library follows (major, minor).
pub const OPENSHMEM_VERSION: (u32, u32) = (1, 5);

/// The `tracing` filter `SHMEM_DEBUG` stands for: debug for vkshmem's
/// crates, warnings from the rest.
pub const DEBUG_FILTER: &str =
    "warn,vkshmem=debug,vkshmem_host=debug,vkshmem_device=debug,vkshmem_c=debug";

/// The symmetric heap's size and the variable that set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapSize {
    /// Bytes of each PE's heap.
    pub bytes: u64,
    /// The variable that set it and its text; `None`: the default.
    pub from: Option<(&'static str, String)>,
    /// Where both variables are set and disagree: the warning to give (once
    /// per job, [`warn_user`]).
    pub conflict: Option<String>,
}

/// The heap's size: `VKSHMEM_SYMMETRIC_SIZE`, else `SHMEM_SYMMETRIC_SIZE`,
/// else [`DEFAULT_HEAP_SIZE`]. When both are set and mean different sizes
/// (or the specification's is not a size), the `VKSHMEM_` one wins, and
/// [`HeapSize::conflict`] is the warning that says so: a user who set both
/// meant one, and ours is the more specific.
///
/// # Errors
/// [`Error::Config`](crate::Error::Config) naming the variable in use when it is not a positive
/// size.
pub fn heap_size_setting(get: impl Fn(&str) -> Option<String>) -> Result<HeapSize> {
    let parse = |var: &str, text: &str| match var {
        ENV_SHMEM_SYMMETRIC_SIZE => parse_spec_size(text),
        _ => parse_size(text),
    };
    let size = |var: &'static str, text: String| match parse(var, &text) {
        Some(n) if n > 0 => Ok(HeapSize {
            bytes: n,
            from: Some((var, text)),
            conflict: None,
        }),
        _ => Err(Error::Config {
            var,
            value: text,
            why:
                "expected a positive size such as 512M or 2G (suffixes K, M, G, T: powers of 1024)"
                    .into(),
        }),
    };
    match (get(ENV_HEAP_SIZE), get(ENV_SHMEM_SYMMETRIC_SIZE)) {
        (Some(ours), spec) => {
            let mut heap = size(ENV_HEAP_SIZE, ours.clone())?;
            heap.conflict = spec
                .filter(|s| parse_spec_size(s) != Some(heap.bytes))
                .map(|spec| {
                    format!(
                        "{ENV_HEAP_SIZE}={ours} and {ENV_SHMEM_SYMMETRIC_SIZE}={spec} disagree: \
                         the heap is {} bytes, as {ENV_HEAP_SIZE} says",
                        heap.bytes
                    )
                });
            Ok(heap)
        }
        (None, Some(spec)) => size(ENV_SHMEM_SYMMETRIC_SIZE, spec),
        (None, None) => Ok(HeapSize {
            bytes: DEFAULT_HEAP_SIZE,
            from: None,
            conflict: None,
        }),
    }
}

/// A size as the specification writes it: [`parse_size`]'s, and also a
/// plain floating-point number of bytes (`1e9`, rounded down), which its
/// "integer or floating point value with an optional character suffix"
/// allows.
pub fn parse_spec_size(text: &str) -> Option<u64> {
    parse_size(text).or_else(|| {
        let f: f64 = text.trim().parse().ok()?;
        (f.is_finite() && f >= 0.0 && f < u64::MAX as f64).then_some(f as u64)
    })
}

/// A warning the user must see: to the log where the program has one,
/// else on stderr (a warning nobody reads does not warn).
pub fn warn_user(text: &str) {
    if tracing::dispatcher::has_been_set() {
        tracing::warn!("{text}");
    } else {
        eprintln!("vkshmem: warning: {text}");
    }
}

/// A specification switch (its values are "any"): on when set, but to
/// `0`, `false`, `no` or `off`, which a user means as off.
pub fn switch(get: impl Fn(&str) -> Option<String>, var: &str) -> bool {
    get(var).is_some_and(|v| {
        !["0", "false", "no", "off"]
            .iter()
            .any(|off| v.trim().eq_ignore_ascii_case(off))
    })
}

/// The filter of vkshmem's log on stderr: `RUST_LOG`, else
/// [`DEBUG_FILTER`] when `SHMEM_DEBUG` is on; `None`: no log.
pub fn log_filter(get: impl Fn(&str) -> Option<String>) -> Option<String> {
    get(ENV_RUST_LOG).or_else(|| switch(&get, ENV_SHMEM_DEBUG).then(|| DEBUG_FILTER.into()))
}

/// `vkshmem 0.1.0 (OpenSHMEM 1.5)`.
pub fn version_line() -> String {
    let (major, minor) = OPENSHMEM_VERSION;
    format!("vkshmem {LIBRARY_VERSION} (OpenSHMEM {major}.{minor})")
}

/// What PE 0 prints at init: with `SHMEM_INFO`, the version line and every
/// user, specification and tuning setting with its value; with
/// `SHMEM_VERSION` alone, the version line; else nothing.
pub fn init_report(get: impl Fn(&str) -> Option<String>, heap: &HeapSize) -> Option<String> {
    if switch(&get, ENV_SHMEM_INFO) {
        Some(info(&get, heap))
    } else {
        switch(&get, ENV_SHMEM_VERSION).then(|| version_line() + "\n")
    }
}

/// The `SHMEM_INFO` text: a line per setting, `NAME  value (set|default)`;
/// the heap's two variables both show the size in effect.
fn info(get: &impl Fn(&str) -> Option<String>, heap: &HeapSize) -> String {
    let mut out = format!("{}: settings (SHMEM_INFO)\n", version_line());
    for kind in [Kind::User, Kind::Spec, Kind::Tuning] {
        for s in SETTINGS.iter().filter(|s| s.kind == kind) {
            let value = match (s.name, get(s.name)) {
                (ENV_HEAP_SIZE | ENV_SHMEM_SYMMETRIC_SIZE, raw) => heap_value(heap, s.name, raw),
                (_, Some(v)) => format!("{v} (set)"),
                (_, None) => format!("{} (default)", s.default.replace('`', "")),
            };
            out += &format!("  {:<30} {value}\n", s.name);
        }
    }
    out
}

/// The heap's size as `name`'s line shows it: the bytes in effect, and
/// where they came from.
fn heap_value(heap: &HeapSize, name: &str, raw: Option<String>) -> String {
    let whence = match (&heap.from, raw) {
        (Some((var, text)), _) if *var == name => format!("set: {text}"),
        (Some((var, _)), Some(text)) => format!("set: {text}, but {var} wins"),
        (Some((var, _)), None) => format!("unset; {var} sets it"),
        (None, _) => "default".into(),
    };
    format!("{} bytes ({whence})", heap.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::env;

    #[test]
    fn the_specifications_heap_size_holds_where_ours_is_unset() {
        let h = heap_size_setting(env(&[(ENV_SHMEM_SYMMETRIC_SIZE, "1280M")])).unwrap();
        assert_eq!(h.bytes, 1280 << 20);
        assert_eq!(h.from, Some((ENV_SHMEM_SYMMETRIC_SIZE, "1280M".into())));
        for (text, bytes) in [
            ("4096", 4096u64),
            ("64k", 64 << 10),
            ("2g", 2 << 30),
            ("1T", 1 << 40),
            ("1.5G", 3 << 29),
            ("1e9", 1_000_000_000),
            ("4096.7", 4096),
        ] {
            let h = heap_size_setting(env(&[(ENV_SHMEM_SYMMETRIC_SIZE, text)])).unwrap();
            assert_eq!(h.bytes, bytes, "{text}");
        }
        assert_eq!(
            heap_size(env(&[(ENV_SHMEM_SYMMETRIC_SIZE, "3M")])).unwrap(),
            3 << 20
        );
        assert_eq!(heap_size_setting(env(&[])).unwrap().from, None);
    }

    #[test]
    fn ours_wins_when_both_are_set() {
        let h = heap_size_setting(env(&[
            (ENV_HEAP_SIZE, "1G"),
            (ENV_SHMEM_SYMMETRIC_SIZE, "2G"),
        ]))
        .unwrap();
        assert_eq!((h.bytes, h.from.unwrap().0), (1 << 30, ENV_HEAP_SIZE));
        let w = h.conflict.unwrap();
        assert!(
            w.contains("VKSHMEM_SYMMETRIC_SIZE=1G") && w.contains("SHMEM_SYMMETRIC_SIZE=2G"),
            "{w}"
        );
        // The same size in other words is no conflict.
        let h = heap_size_setting(env(&[
            (ENV_HEAP_SIZE, "1G"),
            (ENV_SHMEM_SYMMETRIC_SIZE, "1024m"),
        ]))
        .unwrap();
        assert_eq!(h.conflict, None);
        // A bad specification value beside a good one of ours is a warning only.
        let h = heap_size_setting(env(&[
            (ENV_HEAP_SIZE, "8M"),
            (ENV_SHMEM_SYMMETRIC_SIZE, "x"),
        ]))
        .unwrap();
        assert_eq!(h.bytes, 8 << 20);
        assert!(h.conflict.is_some());
        assert_eq!(
            heap_size_setting(env(&[(ENV_HEAP_SIZE, "8M")]))
                .unwrap()
                .conflict,
            None
        );
    }

    #[test]
    fn a_bad_size_names_the_variable_in_use() {
        for bad in ["0", "x", "-1", "0.5", "12Q", "inf", "NaN"] {
            match heap_size_setting(env(&[(ENV_SHMEM_SYMMETRIC_SIZE, bad)])) {
                Err(Error::Config { var, value, .. }) => {
                    assert_eq!((var, value.as_str()), (ENV_SHMEM_SYMMETRIC_SIZE, bad))
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        match heap_size_setting(env(&[
            (ENV_HEAP_SIZE, "0"),
            (ENV_SHMEM_SYMMETRIC_SIZE, "1G"),
        ])) {
            Err(Error::Config { var, .. }) => assert_eq!(var, ENV_HEAP_SIZE),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn switches_take_any_value_but_the_usual_offs() {
        for on in ["1", "yes", "", "anything"] {
            assert!(
                switch(env(&[(ENV_SHMEM_INFO, on)]), ENV_SHMEM_INFO),
                "{on:?}"
            );
        }
        for off in ["0", "no", "FALSE", " off "] {
            assert!(
                !switch(env(&[(ENV_SHMEM_INFO, off)]), ENV_SHMEM_INFO),
                "{off:?}"
            );
        }
        assert!(!switch(env(&[]), ENV_SHMEM_INFO));
    }

    #[test]
    fn debug_turns_the_log_on_where_rust_log_is_unset() {
        assert_eq!(log_filter(env(&[])), None);
        assert_eq!(
            log_filter(env(&[(ENV_SHMEM_DEBUG, "1")])).as_deref(),
            Some(DEBUG_FILTER)
        );
        assert_eq!(log_filter(env(&[(ENV_SHMEM_DEBUG, "0")])), None);
        let both = env(&[(ENV_SHMEM_DEBUG, "1"), (ENV_RUST_LOG, "info")]);
        assert_eq!(log_filter(both).as_deref(), Some("info"));
    }

    #[test]
    fn the_report_prints_what_was_asked() {
        let heap = HeapSize {
            bytes: 1280 << 20,
            from: Some((ENV_SHMEM_SYMMETRIC_SIZE, "1280M".into())),
            conflict: None,
        };
        assert_eq!(init_report(env(&[]), &heap), None);
        let v = init_report(env(&[(ENV_SHMEM_VERSION, "1")]), &heap).unwrap();
        assert_eq!(
            v,
            format!("vkshmem {} (OpenSHMEM 1.5)\n", env!("CARGO_PKG_VERSION"))
        );
        let get = env(&[
            (ENV_SHMEM_INFO, "1"),
            (ENV_SHMEM_SYMMETRIC_SIZE, "1280M"),
            (ENV_SUBMIT, "each"),
        ]);
        let info = init_report(get, &heap).unwrap();
        assert!(info.starts_with(&version_line()), "{info}");
        let line = |name: &str| {
            info.lines()
                .find(|l| l.split_whitespace().next() == Some(name))
                .unwrap_or_else(|| panic!("no {name} in\n{info}"))
                .split_whitespace()
                .skip(1)
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            line(ENV_SHMEM_SYMMETRIC_SIZE),
            "1342177280 bytes (set: 1280M)"
        );
        assert_eq!(
            line(ENV_HEAP_SIZE),
            "1342177280 bytes (unset; SHMEM_SYMMETRIC_SIZE sets it)"
        );
        assert_eq!(line(ENV_SUBMIT), "each (set)");
        assert_eq!(line(ENV_SYNC_ALGO), "counter (default)");
        // Every user, specification and tuning setting, no other.
        let listed = info.lines().skip(1).count();
        let want = SETTINGS
            .iter()
            .filter(|s| matches!(s.kind, Kind::User | Kind::Spec | Kind::Tuning))
            .count();
        assert_eq!(listed, want, "{info}");
    }
}
