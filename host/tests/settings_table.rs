//! The table of settings (`vkshmem_host::config::SETTINGS`) is the one
//! declaration of the environment variables vkshmem reads:
//!
//! - `docs/settings.md` is the table rendered (`UPDATE_DOCS=1 cargo test -p
//!   vkshmem-host --test settings_table` rewrites it);
//! - the README's environment table (between `<!-- user-settings:begin -->`
//!   and `<!-- user-settings:end -->`) lists exactly the user settings, with
//!   the table's defaults;
//! - every `VKSHMEM_*` variable the repository names is declared there;
//! - the library reads the environment only in `config` (`config::env`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use vkshmem_host::config::{Kind, FOREIGN_LAUNCHERS, SETTINGS};

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `docs/settings.md`: every setting, grouped by kind.
fn render() -> String {
    let mut md = String::from(
        "# Settings\n\n\
         <!-- Generated from host/src/config/table.rs; do not edit. Regenerate with\n     \
         UPDATE_DOCS=1 cargo test -p vkshmem-host --test settings_table -->\n\n\
         Every environment variable vkshmem reads is declared once, in\n\
         `host/src/config/table.rs` (`vkshmem_host::config::SETTINGS`), parsed in\n\
         `host/src/config.rs` and read nowhere else. A bad value fails `init` with\n\
         `Error::Config`, which names the variable and the values it takes.\n",
    );
    for kind in Kind::ALL {
        md += &format!("\n## {}\n\n{}\n\n", kind.title(), kind.about());
        md += "| Variable | Type | Default | Meaning |\n|---|---|---|---|\n";
        for s in SETTINGS.iter().filter(|s| s.kind == kind) {
            md += &format!(
                "| `{}` | {} | {} | {} |\n",
                s.name, s.ty, s.default, s.meaning
            );
        }
        if kind == Kind::External {
            md += "\nA process started without `vkshmrun` also reads other launchers' \
                   rank counts: with the cargo feature `mpi`, the ranks of an MPI \
                   launcher (the first three) make the job; otherwise one of several \
                   ranks fails at init with an error that names the `vkshmrun` command \
                   to use instead.\n\n\
                   | Variable | Launcher |\n|---|---|\n";
            for (var, launcher) in FOREIGN_LAUNCHERS {
                md += &format!("| `{var}` | {launcher} |\n");
            }
        }
    }
    md
}

#[test]
fn the_settings_page_is_the_table() {
    let path = root().join("docs").join("settings.md");
    let want = render();
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let Ok(have) = std::fs::read_to_string(&path) else {
        panic!(
            "{} is missing; write it with\n    UPDATE_DOCS=1 cargo test -p vkshmem-host --test settings_table",
            path.display()
        );
    };
    if have != want {
        let line = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(have.lines().count().min(want.lines().count()));
        panic!(
            "{} does not match the table in host/src/config/table.rs (first difference at line {}); \
             regenerate it with\n    UPDATE_DOCS=1 cargo test -p vkshmem-host --test settings_table",
            path.display(),
            line + 1
        );
    }
}

/// A table cell as a reader sees it: without code marks, its spaces collapsed.
fn plain(cell: &str) -> String {
    cell.replace('`', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The rows of the README's user settings table: variable -> default.
fn readme_user_rows(readme: &str) -> BTreeMap<String, String> {
    const BEGIN: &str = "<!-- user-settings:begin -->";
    const END: &str = "<!-- user-settings:end -->";
    let begin = readme
        .find(BEGIN)
        .unwrap_or_else(|| panic!("README.md has no {BEGIN} line"));
    let end = readme[begin..]
        .find(END)
        .unwrap_or_else(|| panic!("README.md has no {END} line after {BEGIN}"));
    let block = &readme[begin + BEGIN.len()..begin + end];
    let mut rows = BTreeMap::new();
    let mut header = None;
    for line in block.lines().map(str::trim).filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if header.is_none() {
            assert_eq!(
                cells,
                ["Variable", "Default", "Meaning"],
                "the README's user settings table starts with | Variable | Default | Meaning |"
            );
            header = Some(());
            continue;
        }
        if cells
            .iter()
            .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':')))
        {
            continue;
        }
        assert_eq!(cells.len(), 3, "README row of three cells: {line}");
        let name = plain(cells[0]);
        let default = plain(cells[1]);
        assert!(
            rows.insert(name.clone(), default).is_none(),
            "README lists {name} twice"
        );
    }
    rows
}

#[test]
fn the_readme_lists_the_user_settings_with_their_defaults() {
    // The parser reads rows as a reader sees them.
    let sample = "x\n<!-- user-settings:begin -->\n| Variable | Default | Meaning |\n|---|:--|---|\n\
                  | `VKSHMEM_PE` | `0`,  else 1 | a | \n| B | c d | e |\n<!-- user-settings:end -->\n| C | x | y |\n";
    let rows = readme_user_rows(sample);
    assert_eq!(
        rows.into_iter().collect::<Vec<_>>(),
        [
            ("B".to_string(), "c d".to_string()),
            ("VKSHMEM_PE".to_string(), "0, else 1".to_string())
        ]
    );
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let rows = readme_user_rows(&readme);
    let users: BTreeMap<String, String> = SETTINGS
        .iter()
        .filter(|s| s.kind == Kind::User)
        .map(|s| (s.name.to_string(), plain(s.default)))
        .collect();
    let listed: BTreeSet<&String> = rows.keys().collect();
    let declared: BTreeSet<&String> = users.keys().collect();
    assert_eq!(
        listed, declared,
        "the README's user settings are not the table's (host/src/config/table.rs, kind User)"
    );
    for (name, default) in &users {
        assert_eq!(
            &rows[name], default,
            "README.md: the default of {name} differs from the table's"
        );
    }
}

/// Identifiers of the C headers that start like a setting. Include
/// guards (`VKSHMEM_..._H`) are skipped by name, so a new header needs no entry.
const C_MACROS: [&str; 5] = [
    "VKSHMEM_ARG",
    "VKSHMEM_ARG0",
    "VKSHMEM_ARG1",
    "VKSHMEM_ARG2",
    "VKSHMEM_SYNC_PICK",
];

/// Whether `name` is a C macro rather than a setting.
fn is_c_macro(name: &str) -> bool {
    C_MACROS.contains(&name) || name.ends_with("_H")
}

/// The files under `dir` with one of the extensions the repository's code,
/// scripts and documents have (no build output, no measurement records).
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | "results" | ".git" | "corpus" | "artifacts"
            ) {
                files(&p, out);
            }
        } else if ["rs", "md", "sh", "py", "c", "h", "toml"]
            .iter()
            .any(|x| name.ends_with(&format!(".{x}")))
        {
            out.push(p);
        }
    }
}

/// The `VKSHMEM_*` names in `text`.
fn names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("VKSHMEM_") {
        let tail = &rest[i..];
        let len = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        let name = tail[..len].trim_end_matches('_');
        if name.len() > "VKSHMEM".len() {
            out.insert(name.to_string());
        }
        rest = &tail[len.max(1)..];
    }
    out
}

#[test]
fn every_variable_the_repository_names_is_declared() {
    let root = root();
    let mut all = Vec::new();
    for dir in [
        "host", "device", "launcher", "capi", "src", "tests", "examples", "benches", "xtask",
        "fuzz", "docs",
    ] {
        files(&root.join(dir), &mut all);
    }
    for top in ["README.md", "ARCHITECTURE.md"] {
        all.push(root.join(top));
    }
    assert!(all.len() > 50, "found only {} files", all.len());
    let mut undeclared = BTreeMap::new();
    for f in &all {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for n in names(&text) {
            if vkshmem_host::config::setting(&n).is_none() && !is_c_macro(&n) {
                undeclared.insert(n, f.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    assert!(
        undeclared.is_empty(),
        "variables not declared in host/src/config/table.rs (name: a file that names it): {undeclared:#?}"
    );
    // The scan sees what it should.
    assert!(names("a VKSHMEM_PE=1 and `VKSHMEM_WIDE_UNIT`, VKSHMEM_*")
        .into_iter()
        .eq(["VKSHMEM_PE", "VKSHMEM_WIDE_UNIT"]));
}

#[test]
fn only_the_settings_module_reads_the_environment() {
    let root = root();
    let mut all = Vec::new();
    for dir in ["host/src", "device/src", "capi/src", "src"] {
        files(&root.join(dir), &mut all);
    }
    let readers = ["host/src/config.rs", "host/src/config/table.rs"];
    let mut found = Vec::new();
    for f in all
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "rs"))
    {
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        if readers.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.contains("env::var") && !line.contains("// test hook:") {
                found.push(format!("{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "read the environment through vkshmem_host::config (config::env and a setting declared in host/src/config/table.rs), not here:\n{}",
        found.join("\n")
    );
}
