//! The host crate's top-level modules form layers (ARCHITECTURE.md, "Module
//! dependencies"): a module uses modules of its own layer or lower ones, never
//! a higher one, and the graph has no cycle. Reaching up makes low layers
//! depend on everything above them, so nothing can be read, tested or moved
//! alone.
//!
//! The edges come from the sources: every `crate::` path outside `//`
//! comments, groups included (`crate::{a::{b, c}, d}` gives `a` and `d`).
//! A `crate::Name` re-exported by `lib.rs` counts as the module it comes
//! from. `team::shape` counts apart, as `team_shape`: it is vocabulary, the
//! rest of `team` is runtime.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module's layer, bottom to top.
const LAYERS: &[(&str, u8)] = &[
    // 1. Vocabulary: types and helpers every layer names.
    ("error", 1),
    ("config", 1),
    ("alloc", 1),
    ("fnv", 1),
    ("phases", 1),
    ("lock", 1),
    ("element", 1),
    ("team_shape", 1),
    // 2. Pure plans: the team table (which slot holds which team).
    ("team", 2),
    // 3. Mechanisms: Vulkan, the sync plane, meeting, moving bytes, waiting.
    ("vk", 3),
    ("sync", 3),
    ("bootstrap", 3),
    ("transport", 3),
    ("heap", 3),
    ("kernels", 3),
    ("driver", 3),
    ("combine", 3),
    ("trace", 3),
    // 4. Runtime: a PE's services, teams, buffers, user kernels, what the
    //    C ABI needs beyond the Rust API.
    ("runtime", 4),
    ("user_kernel", 4),
    ("interop", 4),
    // 5. Algorithms.
    ("collective", 5),
    ("rma", 5),
    ("queue", 5),
    // 6. Façades: the public `Context`, PEs as threads, the crate root.
    ("context", 6),
    ("threads", 6),
    ("lib", 6),
];

const LAYER_NAMES: [&str; 7] = [
    "",
    "vocabulary",
    "pure plans",
    "mechanisms",
    "runtime",
    "algorithms",
    "facades",
];

/// Upward edges today's code still has, each with its reason. The list only
/// shrinks: the test fails on an entry whose edge is gone.
const KNOWN_UPWARD: &[(&str, &str)] = &[];

/// Left out of the cycle check, as hubs: `error` (the shared error type) and
/// `lib` (re-exports).
const HUB: [&str; 2] = ["error", "lib"];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a source file belongs to (`team/shape.rs` is
/// `team_shape`).
fn module_of(rel: &Path) -> String {
    let parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.len() > 1 && parts[0] == "team" && parts[1] == "shape" {
        return "team_shape".into();
    }
    parts[0].clone()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Reads the use tree or path at the start of `s` (what follows `crate::`),
/// pushing its full paths: `a::{b, c::{d as e}}` gives `a::b`, `a::c::d`.
fn tree(s: &mut &str, prefix: &str, out: &mut Vec<String>) {
    *s = s.trim_start();
    if let Some(rest) = s.strip_prefix('{') {
        *s = rest;
        loop {
            let before = s.len();
            tree(s, prefix, out);
            *s = s.trim_start().trim_start_matches(',').trim_start();
            if s.is_empty() || s.starts_with('}') || s.len() == before {
                break;
            }
        }
        *s = s.strip_prefix('}').unwrap_or(s);
        return;
    }
    let name = take_ident(s);
    if name.is_empty() {
        if !prefix.is_empty() {
            out.push(prefix.to_string());
        }
        return;
    }
    let path = if prefix.is_empty() {
        name
    } else {
        format!("{prefix}::{name}")
    };
    if let Some(rest) = s.trim_start().strip_prefix("::") {
        *s = rest;
        return tree(s, &path, out);
    }
    if let Some(rest) = s.trim_start().strip_prefix("as ") {
        *s = rest.trim_start();
        take_ident(s); // the alias: the path is what counts
    }
    out.push(path);
}

/// Takes a name, or a glob's `*`, from the start of `s`.
fn take_ident(s: &mut &str) -> String {
    let end = if s.starts_with('*') {
        1
    } else {
        s.find(|c: char| !is_ident(c)).unwrap_or(s.len())
    };
    let (name, rest) = s.split_at(end);
    *s = rest;
    name.to_string()
}

/// The paths `text` names after `crate::`, outside `//` comments.
fn crate_paths(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").to_string() + "\n")
        .collect();
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if code[..i].ends_with(is_ident) {
            continue; // `foo_crate::`, not ours
        }
        tree(&mut &code[i + "crate::".len()..], "", &mut out);
    }
    out
}

/// The module a `crate::` path reaches: its first name, `team::shape` apart,
/// and a name `lib.rs` re-exports as the module it comes from.
fn target(path: &str, reexports: &BTreeMap<String, String>) -> String {
    let mut names = path.split("::");
    let first = names.next().unwrap_or("");
    if first == "team" && names.next() == Some("shape") {
        return "team_shape".into();
    }
    reexports.get(first).cloned().unwrap_or_else(|| {
        let upper = first.starts_with(|c: char| c.is_uppercase());
        if upper { "lib" } else { first }.to_string()
    })
}

/// What `lib.rs` re-exports, by name: `pub use error::{Error, Result}` maps
/// `Error` and `Result` to `error`.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (i, _) in lib.match_indices("pub use ") {
        let mut paths = Vec::new();
        tree(&mut &lib[i + "pub use ".len()..], "", &mut paths);
        for p in paths {
            let name = p.rsplit("::").next().unwrap().to_string();
            out.insert(name, target(&p, &BTreeMap::new()));
        }
    }
    out
}

/// Each top-level module of `host/src` and the modules it uses (not itself).
fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let reexports = reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut graph = Graph::new();
    for f in &files {
        let m = module_of(f.strip_prefix(&src).unwrap());
        let text = std::fs::read_to_string(f).unwrap();
        let deps = crate_paths(&text)
            .into_iter()
            .map(|p| target(&p, &reexports));
        graph
            .entry(m.clone())
            .or_default()
            .extend(deps.filter(|d| *d != m));
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| modules.contains(d)); // macros, external crates
    }
    assert!(graph.len() > 10, "found only {graph:?}");
    graph
}

/// Panics on a cycle reached from `m`, naming it.
fn visit(m: &str, graph: &Graph, path: &mut Vec<String>, done: &mut BTreeSet<String>) {
    if done.contains(m) {
        return;
    }
    if let Some(i) = path.iter().position(|p| p == m) {
        panic!("module cycle: {} -> {m}", path[i..].join(" -> "));
    }
    path.push(m.to_string());
    for d in graph.get(m).into_iter().flatten() {
        visit(d, graph, path, done);
    }
    path.pop();
    done.insert(m.to_string());
}

#[test]
fn the_module_graph_has_no_cycle() {
    let mut graph = graph();
    graph.retain(|m, _| !HUB.contains(&m.as_str()));
    for deps in graph.values_mut() {
        deps.retain(|d| !HUB.contains(&d.as_str()));
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
}

fn layer(m: &str) -> Option<u8> {
    LAYERS.iter().find(|(n, _)| *n == m).map(|(_, l)| *l)
}

fn named(m: &str) -> String {
    format!("{m} ({})", LAYER_NAMES[layer(m).unwrap() as usize])
}

#[test]
fn no_module_imports_a_higher_layer() {
    let graph = graph();
    let unplaced: Vec<&String> = graph.keys().filter(|m| layer(m).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "modules missing from LAYERS: {unplaced:?}"
    );
    let mut upward = Vec::new();
    let mut known = BTreeSet::new();
    for (m, deps) in &graph {
        for d in deps.iter().filter(|d| layer(d) > layer(m)) {
            if KNOWN_UPWARD.contains(&(m.as_str(), d.as_str())) {
                known.insert((m.as_str(), d.as_str()));
            } else {
                upward.push(format!("{} -> {}", named(m), named(d)));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "modules import a higher layer (ARCHITECTURE.md, \"Module dependencies\"):\n  {}",
        upward.join("\n  ")
    );
    let gone: Vec<_> = KNOWN_UPWARD
        .iter()
        .filter(|e| !known.contains(*e))
        .collect();
    assert!(
        gone.is_empty(),
        "KNOWN_UPWARD edges no longer in the code, remove them: {gone:?}"
    );
}

#[test]
fn the_reader_sees_edges_and_skips_comments() {
    let paths = |text| {
        let re = reexports("pub use context::{Context, HeapWindow};\npub use ash;");
        let set: BTreeSet<String> = crate_paths(text).iter().map(|p| target(p, &re)).collect();
        set.into_iter().collect::<Vec<_>>()
    };
    assert_eq!(
        paths("use crate::sync::Plane; // crate::team\nlet x = crate::team::shape::T::w(1);"),
        ["sync", "team_shape"]
    );
    assert_eq!(
        paths("use crate::{\n    config,\n    error::Error, // crate::vk\n};\nuse my_crate::rma;"),
        ["config", "error"]
    );
    assert_eq!(
        paths("use crate::{a::{b, c::{d as e}}, f::*, team::{self, shape::S}};"),
        ["a", "f", "team", "team_shape"]
    );
    assert_eq!(
        paths("use crate::{team::shape::Y};\nuse crate::team::{shape::X};"),
        ["team_shape"]
    );
    assert_eq!(
        paths("fn f(c: &crate::Context) -> crate::X {}"),
        ["context", "lib"]
    );
}
