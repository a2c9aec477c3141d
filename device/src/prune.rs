//! The library text a kernel can reach, cut out before naga parses it.
//!
//! Every kernel is linked with the library generated for its job (thousands
//! of lines: typed wrappers, every collective's forms, the accessors of every
//! heap binding), and naga's parse and validation of that whole text was
//! nearly all of a link. The link then dropped, by naga's compaction, all
//! that the entry point does not reach, so the driver never saw it. [`prune`]
//! drops it before the parse instead: it splits the library into its
//! module-scope items (a function, constant, struct, alias, override or
//! variable with its attributes) and keeps those whose names the user's
//! source reaches through the items' text, transitively, in their order.
//!
//! The reach is by name, over-approximated: an identifier anywhere in a kept
//! item (a local variable or a struct member that shares an item's name
//! included) keeps the item of that name, so the kept text is a superset of
//! what the compaction keeps, and the compaction still runs after the parse.
//! Items without a name (directives, `const_assert`) and the library's own
//! entry points (`@compute`, such as the one that keeps the loop check for
//! the SPIR-V pass) are always kept. Comments between items are dropped.
//!
//! This is a text scan, not a parser: it relies on the library's text being
//! valid WGSL (naga checks the whole library for every configuration in the
//! device crate's tests and `cargo xtask shaders`, [`crate::check_library`]),
//! where an item ends at a `;` outside braces or at the `}` that closes its
//! braces, and a comment is `//` to the end of the line or a (nested) `/* */`.

use std::collections::{HashMap, HashSet};

/// One module-scope item of the library text.
#[derive(Debug)]
struct Item<'a> {
    /// The item's text, attributes included.
    text: &'a str,
    /// The name it declares (`None`: a directive or `const_assert`).
    name: Option<&'a str>,
    /// Whether it is an entry point (`@compute`, `@vertex`, `@fragment`).
    entry: bool,
}

/// The module-scope items of `src` (valid WGSL), in order.
fn items(src: &str) -> Vec<Item<'_>> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        i = skip_space_and_comments(b, i);
        if i >= b.len() {
            return out;
        }
        if b[i] == b';' {
            // A stray `;` (after a struct's `}`).
            i += 1;
            continue;
        }
        let start = i;
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'/' if b.get(i + 1).is_some_and(|&c| c == b'/' || c == b'*') => {
                    i = skip_comment(b, i);
                    continue;
                }
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        let text = &src[start..i];
        let (name, entry) = declared(text);
        out.push(Item { text, name, entry });
    }
}

/// Index past the whitespace and comments from `i`.
fn skip_space_and_comments(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if b[i] == b'/' && b.get(i + 1).is_some_and(|&c| c == b'/' || c == b'*') {
            i = skip_comment(b, i);
        } else {
            break;
        }
    }
    i
}

/// Index past the comment that starts at `i` (`//` or a nested `/* */`).
fn skip_comment(b: &[u8], mut i: usize) -> usize {
    if b[i + 1] == b'/' {
        while i < b.len() && b[i] != b'\n' {
            i += 1;
        }
        return i;
    }
    let mut depth = 0usize;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// The tokens of `text` that matter here, comments skipped: identifiers
/// (ASCII, as the library's; other characters end one) and `@`, `<`, `>`.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            let c = b[i];
            if c == b'/' && b.get(i + 1).is_some_and(|&n| n == b'/' || n == b'*') {
                i = skip_comment(b, i);
            } else if c.is_ascii_alphabetic() || c == b'_' {
                let s = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                return Some(&text[s..i]);
            } else if c.is_ascii_digit() {
                // A number (its suffix, `u` or `f`, is no identifier).
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    i += 1;
                }
            } else {
                i += 1;
                if matches!(c, b'@' | b'<' | b'>') {
                    return Some(&text[i - 1..i]);
                }
            }
        }
        None
    })
}

/// The name an item's text declares, and whether it is an entry point.
fn declared(text: &str) -> (Option<&str>, bool) {
    let mut entry = false;
    let mut after_at = false;
    let mut toks = tokens(text);
    while let Some(t) = toks.next() {
        if after_at && matches!(t, "compute" | "vertex" | "fragment") {
            entry = true;
        }
        after_at = t == "@";
        match t {
            "fn" | "const" | "struct" | "alias" | "override" => {
                return (toks.find(|t| is_ident(t)), entry);
            }
            "var" => {
                // `var<storage, read_write> name`: past the template.
                let mut depth = 0i32;
                for t in toks.by_ref() {
                    match t {
                        "<" => depth += 1,
                        ">" => depth -= 1,
                        t if depth == 0 && is_ident(t) => return (Some(t), entry),
                        _ => {}
                    }
                }
                return (None, entry);
            }
            _ => {}
        }
    }
    (None, entry)
}

fn is_ident(t: &str) -> bool {
    t.as_bytes()[0].is_ascii_alphabetic() || t.as_bytes()[0] == b'_'
}

/// The items of `library` (valid WGSL) that the identifiers of `user` reach,
/// with every unnamed item and entry point, in their order; one per line.
pub(crate) fn prune(library: &str, user: &str) -> String {
    let items = items(library);
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, it) in items.iter().enumerate() {
        if let Some(n) = it.name {
            by_name.entry(n).or_default().push(k);
        }
    }
    let mut keep = vec![false; items.len()];
    let mut seen: HashSet<&str> = HashSet::new();
    let mut work: Vec<&str> = Vec::new();
    for (k, it) in items.iter().enumerate() {
        if it.name.is_none() || it.entry {
            keep[k] = true;
            work.extend(tokens(it.text));
        }
    }
    // The user's identifiers (its non-ASCII ones name nothing here).
    work.extend(tokens(user));
    while let Some(t) = work.pop() {
        if !seen.insert(t) {
            continue;
        }
        for &k in by_name.get(t).map(Vec::as_slice).unwrap_or(&[]) {
            if !keep[k] {
                keep[k] = true;
                work.extend(tokens(items[k].text));
            }
        }
    }
    let mut out = String::new();
    for (it, _) in items.iter().zip(&keep).filter(|(_, &k)| k) {
        out.push_str(it.text);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIB: &str = "
// a comment with fn unused_in_comment() {
const A: u32 = 4u; // trailing
const B: u32 = A * 2u;
/* block /* nested */ still comment } */
struct S { a: u32, b: array<u32, 4> };
@group(0) @binding(1) var<storage, read_write> buf: array<u32>;
fn f(x: u32) -> u32 { if x > 0u { return B; } return g(); }
fn g() -> u32 { return buf[0]; }
fn h() -> S { var s: S; return s; }
fn lonely() {}
@compute @workgroup_size(1) fn keep_me() { lonely(); }
const_assert A == 4u;
";

    #[test]
    fn items_split_at_their_ends_with_names() {
        let it = items(LIB);
        let names: Vec<_> = it.iter().map(|i| i.name).collect();
        assert_eq!(
            names,
            [
                Some("A"),
                Some("B"),
                Some("S"),
                Some("buf"),
                Some("f"),
                Some("g"),
                Some("h"),
                Some("lonely"),
                Some("keep_me"),
                None
            ]
        );
        assert!(it[8].entry && !it[4].entry);
        assert!(it[3].text.starts_with("@group(0)") && it[3].text.ends_with(';'));
        assert!(it[4].text.ends_with("return g(); }"));
    }

    #[test]
    fn prune_keeps_what_the_user_reaches_and_the_entry_points() {
        let p = prune(LIB, "fn main() { let y = f(1u); } // h");
        for kept in [
            "const A",
            "const B",
            "fn f",
            "fn g",
            "var<storage",
            "fn lonely",
            "fn keep_me",
            "const_assert",
        ] {
            assert!(p.contains(kept), "{kept} missing:\n{p}");
        }
        // `h` only in the user's comment; S only through h.
        assert!(!p.contains("fn h") && !p.contains("struct S"), "{p}");
        assert!(!p.contains("comment"), "{p}");
        // Valid WGSL with a user entry point in front.
        let src = format!("@compute @workgroup_size(1) fn main() {{ let y = f(1u); }}\n{p}");
        crate::parse_validate(&src, "pruned").unwrap();
    }
}
