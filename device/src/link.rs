//! Links a user's WGSL kernel with the device library and describes the result.
//!
//! The user's source comes first and the library after it, so naga's line numbers
//! are the user's own (a library line in an error counts in the library items
//! the kernel reaches, which alone are parsed: `crate::prune`). Set 0 belongs
//! to the library; the user's buffers live in set 1 (bindings 0..n, storage
//! buffers) and their immediates (`var<immediate>`) are the kernel's push
//! constants. Names starting with `vks_`/`VKS_` are reserved.

use std::collections::HashSet;

use naga::{AddressSpace, Block, Function, Handle, Module, Statement};

use crate::library::{heap_binding, library_source_for, LibraryConfig, LIBRARY_SET, USER_SET};
use crate::pass::{self, PassReport};
use crate::CompileError;

/// One of the user's storage buffers (set [`USER_SET`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserBinding {
    /// Binding number.
    pub binding: u32,
    /// The WGSL variable's name.
    pub name: String,
    /// Declared `read` (not `read_write`).
    pub read_only: bool,
}

/// A user kernel linked with the library and compiled to SPIR-V.
#[derive(Debug, Clone)]
pub struct LinkedKernel {
    /// The SPIR-V words, after the pass.
    pub spirv: Vec<u32>,
    /// The entry point's name.
    pub entry: String,
    /// The user's buffers, by binding number (0..n, no gaps).
    pub user_bindings: Vec<UserBinding>,
    /// Bindings of set [`LIBRARY_SET`] the kernel uses: one past the highest
    /// library binding left after unused code is removed (0: it calls no
    /// library function). Its pipeline's set 0 has this many, so a kernel
    /// that touches only this PE's heap (binding 0) is one pipeline whatever
    /// the library's slot count.
    pub library_bindings: u32,
    /// Bytes of immediates (push constants) the kernel declares.
    pub immediate_bytes: u32,
    /// The entry point's workgroup size.
    pub workgroup_size: [u32; 3],
    /// The entry point can reach a library wait (a sync, barrier or wait_until): it
    /// must follow the forward-progress rules.
    pub waits_on_peers: bool,
    /// The entry point can wait for this PE's proxy thread (a call that
    /// reaches a PE on another device): where the driver caps loops, the
    /// host throttles the driver's threads while it runs, as for
    /// `waits_on_peers`, so that the wait outlasts the proxy's round trips.
    pub waits_on_proxy: bool,
    /// The entry point can reach a multi-workgroup device collective
    /// (`shmemx_*_work_groups`): the workgroups of its dispatch wait for each
    /// other, so the host launches at most the device's resident workgroups.
    pub waits_on_groups: bool,
    /// What the SPIR-V pass did.
    pub report: PassReport,
}

/// Names the library declares at module scope.
fn declared_names(src: &str) -> HashSet<String> {
    declarations(src).into_iter().map(|(n, _, _)| n).collect()
}

/// Module-scope-looking declarations `fn|const|struct|alias|override|var<…> NAME` with
/// their 1-based line and column.
fn declarations(src: &str) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    for (ln, line) in src.lines().enumerate() {
        let mut rest = line;
        // Skip leading attributes such as @group(1) @binding(0).
        loop {
            rest = rest.trim_start();
            if let Some(r) = rest.strip_prefix('@') {
                let end = r.find(|c: char| c.is_whitespace()).unwrap_or(r.len());
                rest = &r[end..];
            } else {
                break;
            }
        }
        let kw_end = rest
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(rest.len());
        let kw = &rest[..kw_end];
        if !matches!(kw, "fn" | "const" | "struct" | "alias" | "override" | "var") {
            continue;
        }
        let mut after = &rest[kw_end..];
        if kw == "var" {
            match after.find('>') {
                Some(i) if after.trim_start().starts_with('<') => after = &after[i + 1..],
                _ => continue, // a local `var`
            }
        }
        let name_start = after.len() - after.trim_start().len();
        let name: String = after[name_start..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            let col = line.len() - after.len() + name_start + 1;
            out.push((name, ln as u32 + 1, col as u32));
        }
    }
    out
}

fn link_error(name: &str, line: u32, column: u32, message: String) -> CompileError {
    CompileError::Link {
        name: name.to_string(),
        line,
        column,
        message,
    }
}

/// Links `user_source` with the library for `cfg` and compiles it. `entry` picks the
/// compute entry point (`None`: the only one). `name` labels errors.
///
/// # Errors
/// [`CompileError`] with the line and column in `user_source`: parse and validation
/// errors, a declaration that collides with the library or uses a reserved name,
/// a binding in set 0 or above set 1, a non-storage buffer in set 1, gaps in the
/// set-1 bindings, a missing entry point.
pub fn link_kernel(
    user_source: &str,
    name: &str,
    entry: Option<&str>,
    cfg: &LibraryConfig,
) -> Result<LinkedKernel, CompileError> {
    link_with(user_source, name, entry, cfg, true)
}

/// [`link_kernel`], the library pruned to what the kernel reaches or whole.
fn link_with(
    user_source: &str,
    name: &str,
    entry: Option<&str>,
    cfg: &LibraryConfig,
    prune: bool,
) -> Result<LinkedKernel, CompileError> {
    // The library's vec4 loops unroll for a kernel of one SIMD row only
    // (LibraryConfig::row_lanes): its row moves what several rows share
    // elsewhere, and each unrolled body costs llvmpipe compile time.
    let lib_cfg = LibraryConfig {
        row_lanes: if one_row_sizes(user_source, cfg.row_lanes) {
            cfg.row_lanes
        } else {
            0
        },
        ..*cfg
    };
    let library = library_source_for(&lib_cfg, Some(user_source));
    let reserved = declared_names(&library);
    for (decl, line, col) in declarations(user_source) {
        if decl.starts_with("vks_") || decl.starts_with("VKS_") {
            return Err(link_error(
                name,
                line,
                col,
                format!("`{decl}`: names starting with vks_/VKS_ are reserved for vkshmem"),
            ));
        }
        if reserved.contains(&decl) {
            return Err(link_error(
                name,
                line,
                col,
                format!("`{decl}` is already defined by the vkshmem device library"),
            ));
        }
    }
    let user_lines = user_source.lines().count() as u32;
    // Only the library items the kernel's names reach go to naga (crate::prune).
    let source = if prune {
        format!(
            "{user_source}\n{}",
            crate::prune::prune(&library, user_source)
        )
    } else {
        format!("{user_source}\n{library}")
    };
    let (module, info) = crate::parse_validate(&source, name).map_err(|e| match e {
        CompileError::Parse { line, .. } | CompileError::Validate { line, .. }
            if line > user_lines =>
        {
            link_error(
                name,
                0,
                0,
                format!(
                    "the kernel does not link with the vkshmem device library (library line {}): {e}",
                    line - user_lines - 1
                ),
            )
        }
        e => e,
    })?;

    let at = |span: naga::Span| {
        if span.is_defined() {
            let l = span.location(&source);
            (l.line_number, l.line_position)
        } else {
            (0, 0)
        }
    };
    let mut user_bindings = Vec::new();
    let mut immediate_bytes = 0;
    let mut layouter = naga::proc::Layouter::default();
    layouter
        .update(module.to_ctx())
        .map_err(|e| link_error(name, 0, 0, format!("laying out types: {e}")))?;
    for (h, var) in module.global_variables.iter() {
        let span = module.global_variables.get_span(h);
        let var_name = var.name.clone().unwrap_or_default();
        if var.space == AddressSpace::Immediate {
            immediate_bytes = layouter[var.ty].size.next_multiple_of(4);
        }
        let Some(b) = &var.binding else { continue };
        let (line, col) = at(span);
        if b.group == LIBRARY_SET && var_name.starts_with("vks_") {
            continue;
        }
        if b.group != USER_SET {
            return Err(link_error(
                name,
                line,
                col,
                format!(
                    "`{var_name}` is in @group({}): a vkshmem kernel's own buffers go in @group({USER_SET}) (group {LIBRARY_SET} belongs to the library)",
                    b.group
                ),
            ));
        }
        let AddressSpace::Storage { access } = var.space else {
            return Err(link_error(
                name,
                line,
                col,
                format!("`{var_name}`: only storage buffers (var<storage, …>) can be bound in @group({USER_SET})"),
            ));
        };
        user_bindings.push(UserBinding {
            binding: b.binding,
            name: var_name,
            read_only: !access.contains(naga::StorageAccess::STORE),
        });
    }
    user_bindings.sort_by_key(|b| b.binding);
    for (i, b) in user_bindings.iter().enumerate() {
        if b.binding != i as u32 {
            return Err(link_error(
                name,
                0,
                0,
                format!(
                    "@group({USER_SET}) bindings must be numbered 0..n without gaps; binding {i} is missing",
                ),
            ));
        }
    }

    let computes: Vec<_> = module
        .entry_points
        .iter()
        .filter(|e| e.stage == naga::ShaderStage::Compute && e.name != KEEP_ALIVE)
        .collect();
    let ep = match entry {
        Some(want) => computes.iter().find(|e| e.name == want).ok_or_else(|| {
            link_error(
                name,
                0,
                0,
                format!("no @compute entry point named `{want}`"),
            )
        })?,
        None if computes.len() == 1 => &computes[0],
        None => {
            return Err(link_error(
                name,
                0,
                0,
                format!(
                    "{} @compute entry points: name the one to use",
                    computes.len()
                ),
            ))
        }
    };
    let waits_on_peers = reaches(
        &module,
        &ep.function,
        &["vks_wait_epoch", "vks_wait_cmp", "vks_wait_vector"],
    );

    let waits_on_proxy = reaches(&module, &ep.function, &["vks_px_wait"]);
    let waits_on_groups = reaches(&module, &ep.function, &["vks_grid_sync"]);

    // Only what the entry points reach goes to the driver: every kernel
    // carries the whole library's source, and a driver translates every
    // function it is given (llvmpipe spent seconds per job on code no entry
    // point calls). Unused bindings go too; the pipeline layout keeps them.
    let (entry, workgroup_size) = (ep.name.clone(), ep.workgroup_size);
    let mut module = module;
    drop(info);
    naga::compact::compact(&mut module, naga::compact::KeepUnused::No);
    module.entry_points.retain(|e| e.name != KEEP_ALIVE);
    let library_bindings = module
        .global_variables
        .iter()
        .filter_map(|(_, v)| v.binding.as_ref())
        .filter(|b| b.group == LIBRARY_SET)
        .map(|b| heap_binding(b.binding) + 1)
        .max()
        .unwrap_or(0);
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| link_error(name, 0, 0, format!("after removing unused code: {e}")))?;
    let words = crate::write_spirv(&module, &info, name)?;
    // One SIMD row of llvmpipe: linked without barriers (LibraryConfig::row_lanes).
    let one_row = cfg.is_one_row(workgroup_size);
    let (spirv, report) = pass::run(&words, one_row).map_err(|message| CompileError::Backend {
        name: name.to_string(),
        message,
    })?;
    if cfg.loop_cap && report.loop_checks == 0 {
        return Err(CompileError::Backend {
            name: name.to_string(),
            message: "the loop-cap check was not inserted (vks_loop_check missing)".into(),
        });
    }
    Ok(LinkedKernel {
        spirv,
        entry,
        user_bindings,
        library_bindings,
        immediate_bytes,
        workgroup_size,
        waits_on_peers,
        waits_on_proxy,
        waits_on_groups,
        report,
    })
}

/// Whether every `@workgroup_size(x, y, z)` of `source` is one SIMD row of
/// `row_lanes` (`x <= row_lanes`, `y = z = 1`, integer literals), and there
/// is one: read from the text, before the library is generated for the
/// kernel. Anything else (a size that names a constant) says no, which
/// costs the kernel the unrolled loops only (the pass decides on the barriers
/// from the entry point's parsed size).
fn one_row_sizes(source: &str, row_lanes: u32) -> bool {
    const ATTR: &str = "@workgroup_size(";
    if row_lanes == 0 || !source.contains(ATTR) {
        return false;
    }
    source.split(ATTR).skip(1).all(|rest| {
        let Some((args, _)) = rest.split_once(')') else {
            return false;
        };
        let dims: Option<Vec<u32>> = args
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(|a| a.trim_end_matches(['u', 'i']).parse().ok())
            .collect();
        let one_row = |size| crate::library::is_one_row(row_lanes, size);
        match dims.as_deref() {
            Some(&[x]) => one_row([x, 1, 1]),
            Some(&[x, y]) => one_row([x, y, 1]),
            Some(&[x, y, z]) => one_row([x, y, z]),
            _ => false,
        }
    })
}

/// The library's entry point that keeps `vks_loop_check` (which only the
/// SPIR-V pass calls) through the removal of unreachable code; dropped after it.
const KEEP_ALIVE: &str = "vks_keep_alive";

/// Whether `f` calls (transitively) a function named one of `targets`.
fn reaches(module: &Module, f: &Function, targets: &[&str]) -> bool {
    let mut seen = HashSet::new();
    let mut stack = Vec::new();
    calls(&f.body, &mut stack);
    while let Some(h) = stack.pop() {
        if !seen.insert(h) {
            continue;
        }
        let callee = &module.functions[h];
        if callee.name.as_deref().is_some_and(|n| targets.contains(&n)) {
            return true;
        }
        calls(&callee.body, &mut stack);
    }
    false
}

fn calls(block: &Block, out: &mut Vec<Handle<Function>>) {
    for s in block.iter() {
        match s {
            Statement::Call { function, .. } => out.push(*function),
            Statement::Block(b) => calls(b, out),
            Statement::If { accept, reject, .. } => {
                calls(accept, out);
                calls(reject, out);
            }
            Statement::Switch { cases, .. } => cases.iter().for_each(|c| calls(&c.body, out)),
            Statement::Loop {
                body, continuing, ..
            } => {
                calls(body, out);
                calls(continuing, out);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> LibraryConfig {
        LibraryConfig {
            slots: 8,
            chunks: 2,
            max_binding_bytes: 128 << 20,
            int64: true,
            float64: true,
            int64_atomics: true,
            divergent_fences: true,
            loop_cap: false,
            row_lanes: 0,
            proxy: false,
            vec4_u64: false,
        }
    }

    const USER: &str = "struct Push { addr: u32, n: u32 }
var<immediate> push: Push;
@group(1) @binding(0) var<storage, read_write> out: array<u32>;
@group(1) @binding(1) var<storage, read> inp: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
    out[li] = inp[li] > 0.0;
    shmemx_barrier_all_work_group(li);
}
";

    #[test]
    fn user_errors_point_at_user_lines() {
        // Line 8 assigns a bool to a u32.
        let e = link_kernel(USER, "user.wgsl", None, &cfg()).unwrap_err();
        assert_eq!(e.location().map(|l| l.0), Some(8), "{e}");
        assert!(e.to_string().starts_with("user.wgsl:8:"), "{e}");
    }

    #[test]
    fn links_and_describes() {
        let src = USER.replace("inp[li] > 0.0", "u32(inp[li]) + push.n");
        let k = link_kernel(&src, "user.wgsl", None, &cfg()).unwrap();
        assert_eq!(k.entry, "main");
        assert_eq!(k.immediate_bytes, 8);
        assert_eq!(k.workgroup_size, [64, 1, 1]);
        assert!(k.waits_on_peers);
        assert_eq!(k.user_bindings.len(), 2);
        assert!(k.user_bindings[1].read_only && !k.user_bindings[0].read_only);
        // Only the heap views the barrier reaches are left and moved (the
        // others went with the unreachable code); acquire/release/fence
        // rewritten.
        assert_eq!(k.report.aliased_views, 2);
        // Its waits poll with volatile loads and end in the one fence; it
        // reaches no vks_acquire_* function.
        assert_eq!(k.report.acquires, 0, "{:?}", k.report);
        assert!(k.report.volatiles >= 1, "{:?}", k.report);
        assert_eq!(k.report.fences, 1);
        assert!(k.report.unbounded_loops >= 3, "{:?}", k.report);
    }

    /// Set 0 holds the library bindings a kernel uses: all of them for a
    /// barrier (it signals every slot), this PE's own heap (slot 0's chunks)
    /// where only the loop check reads the control region, none for a kernel that
    /// calls nothing. The last two are one text, so one pipeline, for every
    /// slot count.
    #[test]
    fn set_0_holds_the_library_bindings_used() {
        let barrier = link_kernel(
            USER.replace("inp[li] > 0.0", "1u").as_str(),
            "b",
            None,
            &cfg(),
        );
        assert_eq!(barrier.unwrap().library_bindings, 16);
        let plain = "@group(1) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) { out[li] = li; }
";
        for loop_cap in [false, true] {
            let at = |slots| {
                let c = LibraryConfig {
                    slots,
                    loop_cap,
                    ..cfg()
                };
                link_kernel(plain, "plain", None, &c).unwrap()
            };
            let (two, eight) = (at(2), at(8));
            let own = if loop_cap { cfg().chunks } else { 0 };
            assert_eq!((two.library_bindings, eight.library_bindings), (own, own));
            assert_eq!(two.spirv, eight.spirv, "loop_cap {loop_cap}");
        }
    }

    /// The pruned library links every kernel as the whole one did: the same
    /// SPIR-V up to what [`normalized`] leaves out (naga's compaction kept
    /// only what the entry point reaches, and the pruned text holds all of
    /// it, in the same order) and the same description, for the example kernels, the host collectives' kernels
    /// and the queue's, direct and through the proxy, on 1, 3 and 8 PEs.
    #[test]
    fn pruned_library_links_as_the_whole_one() {
        use crate::collectives::{HostCollective, KINDS};
        use crate::queue::{QueueCall, QueueForm};
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shaders/examples");
        let mut sources: Vec<(String, String)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        sources.push(("user".into(), USER.replace("inp[li] > 0.0", "u32(inp[li])")));
        let mut host = vec![HostCollective::Broadcast, HostCollective::Alltoalls];
        host.extend(KINDS.iter().take(3).map(|k| HostCollective::Reduce(*k)));
        for c in host {
            sources.push((c.name(), c.source()));
        }
        let queue = [
            QueueCall::Barrier,
            QueueCall::Broadcast,
            QueueCall::Collect,
            QueueCall::Fcollect,
            QueueCall::Alltoall,
            QueueCall::Alltoalls,
            QueueCall::Gather,
            QueueCall::Scatter,
            QueueCall::Reduce(KINDS[0], crate::collectives::ReduceOp::Max),
            QueueCall::Scan(KINDS[1], false),
        ];
        for c in queue {
            for form in [QueueForm::Thread, QueueForm::WorkGroup] {
                if let Some(src) = c.source(form) {
                    sources.push((c.name(form), src));
                }
            }
        }
        let proxied = LibraryConfig {
            loop_cap: true,
            row_lanes: 0,
            proxy: true,
            ..cfg()
        };
        let shapes = [
            LibraryConfig { slots: 16, ..cfg() },
            cfg(),
            proxied,
            // llvmpipe's vec4 view: vec2<u64> elements.
            LibraryConfig {
                vec4_u64: true,
                ..cfg()
            },
            LibraryConfig {
                slots: 8,
                chunks: 1,
                ..cfg()
            },
        ];
        let mut linked = 0;
        for c in &shapes {
            for (name, src) in &sources {
                let whole = link_with(src, name, None, c, false);
                let pruned = link_with(src, name, None, c, true);
                let (whole, pruned) = match (whole, pruned) {
                    (Ok(w), Ok(p)) => (w, p),
                    (Err(_), Err(_)) => continue,
                    (w, p) => panic!("{name}: whole {w:?}, pruned {p:?}"),
                };
                assert!(
                    normalized(&whole.spirv) == normalized(&pruned.spirv),
                    "{name} for {c:?}: the SPIR-V differs"
                );
                let described =
                    |k: &LinkedKernel| format!("{k:?}").replace(&format!("{:?}", k.spirv), "");
                assert_eq!(described(&whole), described(&pruned), "{name}");
                linked += 1;
            }
        }
        assert!(linked > 60, "{linked} kernels linked");
    }

    /// What two modules of the same code share, as text with the ids left
    /// out: the instructions outside functions as a sorted list (naga emits
    /// a constant where a use first meets it, so their order differs) and
    /// the functions' in order; debug names, decorations, and constants and
    /// types that nothing uses (naga keeps some the pruned text never
    /// declared) dropped.
    fn normalized(words: &[u32]) -> (Vec<String>, Vec<String>) {
        use rspirv::binary::Disassemble;
        use rspirv::dr::Operand;
        use rspirv::spirv::Op;
        let mut m = rspirv::dr::load_words(words).unwrap();
        m.debug_names.clear();
        let droppable = |op: Op| {
            matches!(
                op,
                Op::Constant
                    | Op::ConstantComposite
                    | Op::ConstantTrue
                    | Op::ConstantFalse
                    | Op::ConstantNull
            ) || format!("{op:?}").starts_with("Type")
        };
        let ids = |i: &rspirv::dr::Instruction| {
            let refs = i.operands.iter().filter_map(|o| match o {
                Operand::IdRef(id) => Some(*id),
                _ => None,
            });
            i.result_type.into_iter().chain(refs).collect::<Vec<_>>()
        };
        // Drop unused constants and types until none is left (a composite's
        // parts go after it), and their decorations.
        let annotations = std::mem::take(&mut m.annotations);
        loop {
            let mut used = HashSet::new();
            m.all_inst_iter().for_each(|i| used.extend(ids(i)));
            let before = m.types_global_values.len();
            m.types_global_values.retain(|i| {
                !droppable(i.class.opcode) || i.result_id.is_some_and(|id| used.contains(&id))
            });
            if m.types_global_values.len() == before {
                break;
            }
        }
        let defined: HashSet<_> = m.all_inst_iter().filter_map(|i| i.result_id).collect();
        m.annotations = annotations
            .into_iter()
            .filter(|i| ids(i).first().is_some_and(|t| defined.contains(t)))
            .collect();
        let no_ids = |i: &rspirv::dr::Instruction| {
            let s = i.disassemble();
            let mut out = String::new();
            let mut in_id = false;
            for ch in s.chars() {
                if ch == '%' {
                    in_id = true;
                    out.push('%');
                } else if !(in_id && ch.is_ascii_digit()) {
                    in_id = false;
                    out.push(ch);
                }
            }
            out
        };
        let functions: Vec<String> = m
            .functions
            .iter()
            .flat_map(|f| f.all_inst_iter())
            .map(no_ids)
            .collect();
        m.functions.clear();
        let mut globals: Vec<String> = m.all_inst_iter().map(no_ids).collect();
        globals.sort();
        (globals, functions)
    }

    #[test]
    fn unreachable_library_code_is_left_out() {
        // The library is tens of thousands of SPIR-V words; a kernel that
        // calls one query keeps a few hundred, and under the loop cap its
        // check (called by the pass alone) survives, while the entry point
        // that kept it alive is gone.
        let src = "@group(1) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(1) fn main() { o[0] = u32(shmem_my_pe()); }";
        let barrier = "@group(1) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(1) fn main() { shmem_barrier_all(); o[0] = 1u; }";
        for loop_cap in [false, true] {
            let c = LibraryConfig { loop_cap, ..cfg() };
            let small = link_kernel(src, "k", None, &c).unwrap();
            let big = link_kernel(barrier, "k", None, &c).unwrap();
            assert!(
                small.spirv.len() < 3000 && small.spirv.len() * 2 < big.spirv.len(),
                "{} {}",
                small.spirv.len(),
                big.spirv.len()
            );
            assert_eq!(small.report.loop_checks, usize::from(loop_cap));
            let m = rspirv::dr::load_words(&small.spirv).unwrap();
            assert_eq!(m.entry_points.len(), 1);
            let names: Vec<_> = m
                .debug_names
                .iter()
                .filter_map(|i| match i.operands.get(1) {
                    Some(rspirv::dr::Operand::LiteralString(n)) => Some(n.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(names.contains(&"vks_loop_check"), loop_cap, "{names:?}");
            assert!(!names.contains(&"vks_keep_alive"), "{names:?}");
            assert!(!names.contains(&"vks_wait_epoch"), "{names:?}");
        }
    }

    #[test]
    fn no_waits_detected() {
        let src = "@group(1) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(1) fn main() { o[0] = u32(shmem_my_pe()); }";
        assert!(!link_kernel(src, "k", None, &cfg()).unwrap().waits_on_peers);
    }

    #[test]
    fn refuses_misuse_with_location() {
        let cases = [
            ("@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n@compute @workgroup_size(1) fn main() { o[0] = 1u; }", 1, "group(0)"),
            ("\nfn shmem_my_pe() -> i32 { return 0; }\n@compute @workgroup_size(1) fn main() {}", 2, "already defined"),
            ("const VKS_X: u32 = 1u;\n@compute @workgroup_size(1) fn main() {}", 1, "reserved"),
            ("@group(1) @binding(1) var<storage, read_write> o: array<u32>;\n@compute @workgroup_size(1) fn main() { o[0] = 1u; }", 0, "without gaps"),
            ("@group(1) @binding(0) var<uniform> o: vec4<u32>;\n@group(1) @binding(1) var<storage, read_write> p: array<u32>;\n@compute @workgroup_size(1) fn main() { p[0] = o.x; }", 1, "only storage"),
        ];
        for (src, line, what) in cases {
            let e = link_kernel(src, "k", None, &cfg()).unwrap_err();
            assert!(e.to_string().contains(what), "{e}");
            assert_eq!(e.location().map(|l| l.0).unwrap_or(0), line, "{e}");
        }
        let good = USER.replace("inp[li] > 0.0", "u32(inp[li])");
        let e = link_kernel(&good, "k", Some("nope"), &cfg()).unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
    }

    #[test]
    fn one_row_kernels_lose_their_barriers() {
        // llvmpipe (row_lanes 8): a workgroup of one SIMD row is linked
        // without control or memory barriers, the user's and the library's;
        // two rows (x over 8, or y over 1) and other drivers keep them all.
        let src = |size: &str| {
            format!(
                "@group(1) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size({size}) fn main(@builtin(local_invocation_index) li: u32) {{
    o[li] = 1u;
    workgroupBarrier();
    shmemx_barrier_all_work_group(li);
    storageBarrier();
}}"
            )
        };
        let lp = LibraryConfig {
            loop_cap: true,
            row_lanes: 8,
            divergent_fences: false,
            ..cfg()
        };
        let barriers = |k: &LinkedKernel| {
            rspirv::dr::load_words(&k.spirv)
                .unwrap()
                .all_inst_iter()
                .filter(|i| {
                    matches!(
                        i.class.opcode,
                        rspirv::spirv::Op::ControlBarrier | rspirv::spirv::Op::MemoryBarrier
                    )
                })
                .count()
        };
        for size in ["8", "5", "1"] {
            let k = link_kernel(&src(size), "k", None, &lp).unwrap();
            assert_eq!(barriers(&k), 0, "{size}: {:?}", k.report);
            assert!(k.report.barriers_removed >= 3, "{size}: {:?}", k.report);
            assert_eq!((k.report.fences, k.report.acquires), (0, 0), "{size}");
        }
        for (size, c) in [
            ("16", lp),
            ("4, 2", lp),
            ("8", LibraryConfig { row_lanes: 0, ..lp }),
        ] {
            let k = link_kernel(&src(size), "k", None, &c).unwrap();
            assert!(barriers(&k) >= 3, "{size}: {:?}", k.report);
            assert_eq!(k.report.barriers_removed, 0, "{size}");
            assert!(k.report.fences > 0, "{size}: {:?}", k.report);
        }
    }

    #[test]
    fn one_row_sizes_read_from_the_text() {
        let k = |size: &str| format!("@compute @workgroup_size({size}) fn main() {{}}");
        for (size, yes) in [
            ("8", true),
            ("8u, 1", true),
            ("5, 1, 1", true),
            ("1i", true),
            ("16", false),
            ("4, 2", false),
            ("8, 1, 2", false),
            ("WG", false),
            ("", false),
        ] {
            assert_eq!(one_row_sizes(&k(size), 8), yes, "{size}");
        }
        assert!(!one_row_sizes(&k("8"), 0));
        assert!(!one_row_sizes("fn f() {}", 8));
        // Two entry points: both must be one row.
        assert!(!one_row_sizes(&format!("{}\n{}", k("8"), k("64")), 8));
        assert!(one_row_sizes(&format!("{}\n{}", k("8"), k("4")), 8));
    }

    #[test]
    fn loop_cap_shape() {
        // Where the driver caps loops: many branch-free polls per wait iteration,
        // and a loop-cap check before the entry point's return.
        let src = "@group(1) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(1) fn main() { if o[0] == 0u { return; } shmem_barrier_all(); }";
        let capped = LibraryConfig {
            loop_cap: true,
            row_lanes: 0,
            divergent_fences: false,
            ..cfg()
        };
        let k = link_kernel(src, "k.wgsl", None, &capped).unwrap();
        assert_eq!(k.report.loop_checks, 2, "{:?}", k.report);
        let plain = link_kernel(src, "k.wgsl", None, &cfg()).unwrap();
        assert_eq!(plain.report.loop_checks, 0);
        let lib = crate::library::library_source(&capped);
        // Capped polls are atomic adds of 0 (vks_poll_own), each at an
        // address the compiler cannot fold, spaced by square roots.
        let polls = crate::library::CAPPED_POLLS_PER_ITERATION as usize;
        assert_eq!(
            lib.matches("vks_cond_bit(c, vks_poll_own(addr + (bitcast<u32>(d) & zero)))")
                .count(),
            polls
        );
        assert!(lib.contains("let zero = vks_w_0_0[VKS_CTRL_MAGIC] - VKS_CONTROL_MAGIC;"));
        assert!(
            lib.matches("d = sqrt(d + 1.0);").count()
                >= polls * crate::library::CAPPED_DELAY_STEPS as usize
        );
        // A wait's first test is one bare poll (vks_poll_once), in both.
        assert_eq!(
            lib.matches("vks_cond_bit(c, vks_poll_own(addr))").count(),
            1
        );
        assert_eq!(
            crate::library::library_source(&cfg())
                .matches("vks_cond_bit(c, vks_volatile_load_own(addr))")
                .count(),
            2
        );
    }
}
