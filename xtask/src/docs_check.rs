//! The build commands the documentation gives, checked by `cargo xtask test`,
//! so that a command a reader copies from `docs/mpirun.md` builds: its package,
//! target and feature names are what the workspace has.
//!
//! A command is a line of a ```` ```sh ```` block that starts with `cargo
//! build` (a line ending in `\` goes on on the next one; a `# comment` after
//! it is dropped). It runs as `cargo check` with the same arguments in the dev
//! profile (`--release` removed): a `cargo build` of its own feature set would
//! compile naga and the crates above it a second time beside the test build's
//! (`-p vkshmem-bench --features mpi` unifies other features than
//! `--workspace`), while a check of them reads only metadata.

use std::path::Path;

use anyhow::{bail, Context, Result};

/// The pages whose `cargo build` commands `cargo xtask test` checks.
pub const PAGES: &[&str] = &["docs/mpirun.md"];

/// The `cargo build` command lines of the ```` ```sh ```` blocks of
/// `markdown`, each as its words (`cargo`, `build`, ...).
pub fn cargo_builds(markdown: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in markdown.lines() {
        let t = line.trim();
        if let Some(info) = t.strip_prefix("```") {
            in_sh = !in_sh && info.trim() == "sh";
            pending.clear();
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = t.split(" #").next().unwrap_or("").trim_end();
        if let Some(head) = code.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(code);
        let words: Vec<String> = pending.split_whitespace().map(String::from).collect();
        pending.clear();
        if words.len() >= 2 && words[0] == "cargo" && words[1] == "build" {
            commands.push(words);
        }
    }
    commands
}

/// The arguments after `cargo` that check a documented `cargo build` in the
/// dev profile: `check` and its arguments but `--release`.
pub fn as_dev_check(words: &[String]) -> Vec<String> {
    std::iter::once("check".to_string())
        .chain(words.iter().skip(2).filter(|w| *w != "--release").cloned())
        .collect()
}

/// Checks every `cargo build` of [`PAGES`] under `root` ([`as_dev_check`])
/// through `run_cargo`, which gets the arguments after `cargo`.
pub fn check_documented(
    root: &Path,
    mut run_cargo: impl FnMut(&[String]) -> Result<()>,
) -> Result<()> {
    for page in PAGES {
        let path = root.join(page);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let commands = cargo_builds(&text);
        if commands.is_empty() {
            bail!("{page} has no `cargo build` command in a ```sh block");
        }
        for words in &commands {
            run_cargo(&as_dev_check(words))
                .with_context(|| format!("{page}: `{}` does not check", words.join(" ")))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "\
# Title

```sh
cargo build --release -p vkshmem-bench --features mpi   # the bench
mpirun -n 4 target/release/vkshmem-bench
```

Prose that says cargo build --release -p nothing.

```rust
// cargo build --release -p not-sh
```

- A list item:

  ```sh
  cargo build --release \\
      -p vkshmem-c --features mpi
  cargo test -p xtask
  ```
";

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn finds_the_cargo_builds_of_sh_blocks_only() {
        assert_eq!(
            cargo_builds(PAGE),
            vec![
                words("cargo build --release -p vkshmem-bench --features mpi"),
                words("cargo build --release -p vkshmem-c --features mpi"),
            ]
        );
    }

    #[test]
    fn checks_in_the_dev_profile() {
        assert_eq!(
            as_dev_check(&words(
                "cargo build --release -p vkshmem-bench --features mpi"
            )),
            words("check -p vkshmem-bench --features mpi")
        );
    }

    #[test]
    fn the_mpirun_page_has_a_build_command() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let mut seen = Vec::new();
        check_documented(root, |args| {
            seen.push(args.to_vec());
            Ok(())
        })
        .unwrap();
        assert!(
            seen.iter().any(|a| a.iter().any(|w| w == "mpi")),
            "docs/mpirun.md builds with the feature mpi: {seen:?}"
        );
        assert!(seen
            .iter()
            .all(|a| a[0] == "check" && !a.contains(&"--release".to_string())));
    }
}
