//! The crate's modules depend on each other without cycles (ARCHITECTURE.md,
//! "Module dependencies"): reading the sources, each top-level module's
//! `crate::<module>` paths give its edges. `context` (the facade every part adds
//! its methods to) and `error` (the shared error type) are left out: they are the
//! hub, not layers. A `crate::team::shape` path counts as `team_shape`, the pure
//! leaf of `team` that the plane and the rendezvous build on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const HUB: [&str; 3] = ["context", "error", "lib"];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
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

/// The modules `text` names as `crate::<name>` outside comments.
fn uses(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let after = &rest[name.len()..];
            if name == "team" && after.starts_with("::shape") {
                out.insert("team_shape".into());
            } else if !name.is_empty() && name.chars().all(|c| c.is_lowercase() || c == '_') {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn the_module_graph_has_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let m = module_of(f.strip_prefix(&src).unwrap());
        let deps = uses(&std::fs::read_to_string(f).unwrap());
        let entry = graph.entry(m.clone()).or_default();
        entry.extend(deps.into_iter().filter(|d| *d != m));
    }
    for h in HUB {
        graph.remove(h);
    }
    for deps in graph.values_mut() {
        deps.retain(|d| !HUB.contains(&d.as_str()));
    }
    assert!(graph.len() > 10, "found only {graph:?}");
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(m) {
            return;
        }
        if let Some(i) = path.iter().position(|p| p == m) {
            panic!(
                "module cycle: {} -> {m}\n(graph: {graph:#?})",
                path[i..].join(" -> ")
            );
        }
        path.push(m.to_string());
        for d in graph.get(m).into_iter().flatten() {
            visit(d, graph, path, done);
        }
        path.pop();
        done.insert(m.to_string());
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn the_reader_sees_edges_and_skips_comments() {
    let u = uses(
        "use crate::sync::Plane; // crate::team\nlet x = crate::team::shape::TeamShape::world(1);",
    );
    assert_eq!(
        u,
        ["sync", "team_shape"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
}
