//! Writes `shmem.h` and the Rust side of every C function (`api.rs`) from
//! the one description in `src/spec.rs`; the header is also copied to
//! `<target dir>/include/shmem.h`, where `oshcc` finds it.

use std::fmt::Write as _;
use std::path::PathBuf;

#[allow(dead_code)]
mod spec {
    include!("src/spec.rs");
}
use spec::{Api, Ty, API, CONSTANTS, EXTRA_C, GENERIC_ALIASES, HANDLES, PRELUDE_C};

/// One parameter of a C prototype.
struct Param {
    c_type: String,
    name: String,
}

/// A C prototype split into return type, name and parameters.
struct Proto {
    ret: String,
    name: String,
    params: Vec<Param>,
}

fn parse(proto: &str) -> Proto {
    let open = proto.find('(').expect("prototype has (");
    let head = proto[..open].trim();
    let split = head.rfind([' ', '*']).expect("return type");
    let ret = head[..=split].trim().to_string();
    let name = head[split + 1..].to_string();
    let args = proto[open + 1..proto.rfind(')').expect(")")].trim();
    let params = if args == "void" || args.is_empty() {
        Vec::new()
    } else {
        args.split(',')
            .map(|a| {
                let a = a.trim();
                let s = a.rfind([' ', '*']).expect("parameter name");
                Param {
                    c_type: a[..=s].trim().to_string(),
                    name: a[s + 1..].to_string(),
                }
            })
            .collect()
    };
    Proto { ret, name, params }
}

/// The Rust type of a C type of the prototypes (LP64).
fn rust_type(c: &str, ty: Option<&Ty>) -> String {
    let c = c.replace(" *", "*");
    if let Some(inner) = c.strip_suffix('*') {
        let (konst, base) = match inner.strip_prefix("const ") {
            Some(b) => ("const", b),
            None => ("mut", inner),
        };
        let base = if base == "void" {
            "core::ffi::c_void".into()
        } else {
            rust_type(base, ty)
        };
        return format!("*{konst} {base}");
    }
    match c.as_str() {
        "TYPE" => ty.expect("TYPE outside a family").2,
        "int" => "i32",
        "long" => "i64",
        "size_t" => "usize",
        "ptrdiff_t" => "isize",
        "uint64_t" => "u64",
        "char" => "core::ffi::c_char",
        "shmem_team_t" => "crate::TeamH",
        "vkshmem_combine_fn" => "crate::CombineFn",
        "shmem_ctx_t" => "crate::CtxH",
        "shmem_team_config_t" => "crate::TeamConfigC",
        other => panic!("no Rust type for C type {other:?}"),
    }
    .to_string()
}

/// A prototype's instance for type `ty` (or itself).
fn instance(t: &str, ty: Option<&Ty>) -> String {
    match ty {
        Some(ty) => t.replace("{N}", ty.0),
        None => t.to_string(),
    }
}

fn ctx_form(p: &Proto) -> Proto {
    let mut params = vec![Param {
        c_type: "shmem_ctx_t".into(),
        name: "ctx".into(),
    }];
    params.extend(p.params.iter().map(|q| Param {
        c_type: q.c_type.clone(),
        name: q.name.clone(),
    }));
    Proto {
        ret: p.ret.clone(),
        name: p.name.replacen("shmem_", "shmem_ctx_", 1),
        params,
    }
}

fn c_decl(p: &Proto, ty: Option<&Ty>) -> String {
    let sub = |t: &str| match ty {
        Some(ty) => t.replace("TYPE", ty.1),
        None => t.to_string(),
    };
    let ps = if p.params.is_empty() {
        "void".to_string()
    } else {
        p.params
            .iter()
            .map(|q| {
                let t = sub(&q.c_type);
                if t.ends_with('*') {
                    format!("{t}{}", q.name)
                } else {
                    format!("{t} {}", q.name)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ret = sub(&p.ret);
    let sep = if ret.ends_with('*') { "" } else { " " };
    format!("{ret}{sep}{}({ps});", p.name)
}

fn rust_fn(p: &Proto, body: &str, ty: Option<&Ty>, default_ctx: bool) -> String {
    let ps: Vec<String> = p
        .params
        .iter()
        .map(|q| format!("{}: {}", q.name, rust_type(&q.c_type, ty)))
        .collect();
    let ret = if p.ret == "void" {
        String::new()
    } else {
        format!(" -> {}", rust_type(&p.ret, ty))
    };
    let body = body.replace("{F}", &format!("\"{}\"", p.name));
    let body = match ty {
        Some(t) => body.replace("{R}", t.2),
        None => body,
    };
    let ctx = if default_ctx {
        "    let ctx: crate::CtxH = crate::SHMEM_CTX_DEFAULT;\n"
    } else {
        ""
    };
    format!(
        "/// `{}`\n#[no_mangle]\n#[allow(non_snake_case, unused_unsafe, clippy::missing_safety_doc, clippy::unused_unit)]\npub unsafe extern \"C\" fn {}({}){ret} {{\n{ctx}    {body}\n}}\n",
        c_decl(p, ty).trim_end_matches(';'),
        p.name,
        ps.join(", ")
    )
}

/// A C11 generic macro: name, dispatch index, whether it has ctx forms,
/// and its `(C type, plain function, ctx function)` associations.
type Generic = (String, usize, bool, Vec<(String, String, String)>);

fn main() {
    println!("cargo:rerun-if-changed=src/spec.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let mut rs = String::new();
    let mut decls = String::new();
    // static inline functions, after every declaration they call.
    let mut inlines = String::new();
    // Generic macro name -> (dispatch index, has ctx form, [(C type, plain fn, ctx fn)]).
    let mut generics: Vec<Generic> = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for api in API {
        let Api {
            proto,
            body,
            types,
            ctx,
            generic,
            inline_ld,
        } = api;
        let tys: Vec<Option<&Ty>> = match types {
            Some(t) => t.iter().map(Some).collect(),
            None => vec![None],
        };
        for ty in tys {
            let p = parse(&instance(proto, ty));
            // A long double passed or returned by value: a static inline.
            let inline = inline_ld.filter(|_| ty.is_some_and(|t| t.1 == "long double"));
            let mut emit = |p: &Proto, is_ctx: bool, default_ctx: bool| {
                assert!(names.insert(p.name.clone()), "{} described twice", p.name);
                match inline {
                    Some(c_body) => {
                        let (k, ka) = if is_ctx { ("ctx_", "ctx, ") } else { ("", "") };
                        let decl = c_decl(p, ty);
                        writeln!(
                            inlines,
                            "static inline {} {}",
                            decl.trim_end_matches(';'),
                            c_body.replace("{CTX}", k).replace("{CTXA}", ka)
                        )
                        .unwrap();
                    }
                    None => {
                        writeln!(decls, "{}", c_decl(p, ty)).unwrap();
                        rs += &rust_fn(p, body, ty, default_ctx);
                    }
                }
            };
            emit(&p, false, *ctx);
            let mut ctx_name = String::new();
            if *ctx {
                let c = ctx_form(&p);
                emit(&c, true, false);
                ctx_name = c.name;
            }
            if let (Some((g, on)), Some(t)) = (generic, ty) {
                if !t.3 {
                    continue;
                }
                let i = match generics.iter().position(|x| x.0 == *g) {
                    Some(i) => i,
                    None => {
                        generics.push((g.to_string(), *on, *ctx, Vec::new()));
                        generics.len() - 1
                    }
                };
                generics[i]
                    .3
                    .push((t.1.to_string(), p.name.clone(), ctx_name));
            }
        }
    }

    let mut h = String::new();
    h += "/* shmem.h: OpenSHMEM 1.5 for vkshmem. Generated by capi/build.rs from\n * capi/src/spec.rs; do not edit. */\n";
    h += "#ifndef VKSHMEM_SHMEM_H\n#define VKSHMEM_SHMEM_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n";
    h += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
    h += "#define SHMEM_VENDOR_STRING \"vkshmem\"\n#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING\n";
    for (name, value, doc) in CONSTANTS {
        if !doc.is_empty() {
            writeln!(h, "/* {doc} */").unwrap();
        }
        writeln!(h, "#define {name} {value}").unwrap();
    }
    h += "#define SHMEM_SYNC_SIZE_MAX 1\n\n";
    h += "typedef struct vkshmem_team_s *shmem_team_t;\ntypedef struct vkshmem_ctx_s *shmem_ctx_t;\n";
    h += "typedef struct {\n    int num_contexts;\n} shmem_team_config_t;\n";
    h += "/* Combines n elements of x into acc (vkshmemx_reduce_bytes). */\n";
    h += "typedef void (*vkshmem_combine_fn)(void *acc, const void *x, size_t n);\n\n";
    for (name, ty, v) in HANDLES {
        writeln!(h, "#define {name} (({ty}){v})").unwrap();
    }
    h += "\n";
    h += &decls;
    h += "\n";
    h += PRELUDE_C;
    h += &inlines;
    h += EXTRA_C;
    // C11 type-generic macros.
    h +=
        "\n#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)\n";
    h += "void vkshmem_generic_no_such_type(void);\n";
    h += "#define VKSHMEM_ARG0(a, ...) (a)\n#define VKSHMEM_ARG1(a, b, ...) (b)\n#define VKSHMEM_ARG2(a, b, c, ...) (c)\n";
    for (g, on, has_ctx, list) in &generics {
        let arg = |k: usize| format!("VKSHMEM_ARG{k}(__VA_ARGS__, 0, 0)");
        let assoc = |pick: &dyn Fn(&(String, String, String)) -> String| -> String {
            list.iter()
                .map(|e| {
                    let base = &e.0;
                    format!("{base} *: {f}, const {base} *: {f}", f = pick(e))
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let plain = assoc(&|e| e.1.clone());
        if *has_ctx {
            let ctxs = assoc(&|e| e.2.clone());
            writeln!(
                h,
                "#define {g}(...) _Generic({a0}, shmem_ctx_t: _Generic({a1}, {ctxs}, default: vkshmem_generic_no_such_type), {plain}, default: vkshmem_generic_no_such_type)(__VA_ARGS__)",
                a0 = arg(*on),
                a1 = arg(on + 1)
            )
            .unwrap();
        } else {
            writeln!(
                h,
                "#define {g}(...) _Generic({a}, {plain}, default: vkshmem_generic_no_such_type)(__VA_ARGS__)",
                a = arg(*on)
            )
            .unwrap();
        }
    }
    for (alias, name) in GENERIC_ALIASES {
        writeln!(h, "#define {alias}(...) {name}(__VA_ARGS__)").unwrap();
    }
    h += "#endif\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* VKSHMEM_SHMEM_H */\n";

    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("api.rs"), rs).expect("write api.rs");
    std::fs::write(out.join("shmem.h"), &h).expect("write shmem.h");
    // OUT_DIR is <target dir>/<profile>/build/<pkg>-<hash>/out.
    if let Some(profile_dir) = out.ancestors().nth(3) {
        let inc = profile_dir.join("include");
        std::fs::create_dir_all(&inc).expect("create include dir");
        let dst = inc.join("shmem.h");
        if std::fs::read_to_string(&dst).ok().as_deref() != Some(h.as_str()) {
            std::fs::write(&dst, &h).expect("write include/shmem.h");
        }
        std::fs::write(inc.join("pshmem.h"), "#include <shmem.h>\n").ok();
    }
}
