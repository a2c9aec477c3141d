//! The SPIR-V pass: gives the device library the semantics WGSL cannot express.
//!
//! naga writes every storage atomic as Relaxed at Device scope, has no standalone
//! fence, bounds every loop with a 64-bit counter, and refuses two variables on one
//! binding. On naga's output (GLSL450 memory model, which we keep) this pass:
//!
//! 1. in functions named `vks_acquire_*`, sets the memory semantics of every atomic
//!    to Acquire | UniformMemory (scope Device);
//! 2. in functions named `vks_volatile_*`, marks every `OpLoad`/`OpStore` Volatile: spin
//!    loops poll with these. A relaxed `OpAtomicLoad` would be the textbook
//!    choice, but Mesa's llvmpipe compiles it as a plain load that LLVM hoists out
//!    of the loop (and then treats the loop as infinite, which is undefined), so
//!    waits fell straight through; a volatile load is re-executed on every driver;
//! 3. gives the empty function `vks_fence_acq_rel` a body:
//!    `OpMemoryBarrier Device AcquireRelease|UniformMemory`;
//! 4. in every `vks_*` function but `vks_loop_check`, replaces the condition of naga's loop-bound exit
//!    (`all(loop_bound == 0)`) with `false`, so library spin loops are unbounded and
//!    the dead counter is left for the driver to remove;
//! 5. moves the library's plain heap views from binding `PLAIN_VIEW_OFFSET + b` onto
//!    `b` in set 0 (aliasing the atomic view, which Vulkan allows), and the
//!    64-bit atomic views from `QUAD_VIEW_OFFSET + b` and the vec4 views from
//!    `VEC4_VIEW_OFFSET + b`;
//! 6. decorates every storage buffer `Coherent` and `Aliased`: any of them, the
//!    user's included, may be a view of a symmetric heap that other PEs write, and
//!    the two library views of one heap alias each other;
//! 7. where the library defines `vks_loop_check` (drivers that cap loop
//!    iterations), calls it before every `OpReturn` of each entry point, so a
//!    kernel whose loops the driver cut short reports it;
//! 8. with `one_row` (llvmpipe, a workgroup of one SIMD row: see
//!    `LibraryConfig::row_lanes`), removes every `OpControlBarrier` and
//!    `OpMemoryBarrier`, the user's included, leaves `vks_fence_acq_rel`
//!    empty (step 3 skipped) and the `vks_acquire_*` atomics relaxed (step
//!    1 skipped: SPIR-V-to-NIR turns an acquire into a barrier): llvmpipe
//!    compiles a kernel with any barrier into coroutines, whose loops ran at
//!    half the speed, and the lanes of one row execute every instruction
//!    together, in program order.
//!
//! Release stores are not atomics with Release semantics but a fence followed by a
//! relaxed store (`vks_store_release` in the WGSL), which the memory model makes
//! equivalent: on Mesa 22.3's lavapipe an `OpAtomicStore` with Release semantics
//! inside a loop silently ends the invocation (found while building the barrier;
//! the fence form works). Waits likewise poll with relaxed loads and issue one
//! acquire fence when the condition holds, which is also the cheaper pattern on GPUs.
//!
//! Why the GLSL450 model with `Coherent` rather than the Vulkan memory model:
//! naga's output is GLSL450, `Coherent` plus device-scope acquire/release is what
//! GLSL compute shaders that communicate through buffers compile to on every
//! driver, and it needs no per-access MakeAvailable/MakeVisible operands that the
//! pass would have to thread through naga's code.
//!
//! The functions are found by their debug names, so the module must be written with
//! naga's `WriterFlags::DEBUG`.

use std::collections::{HashMap, HashSet};

use rspirv::binary::Assemble;
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Decoration, MemoryAccess, MemorySemantics, Op, Scope, StorageClass, Word};

use crate::library::{LIBRARY_SET, PLAIN_VIEW_OFFSET, QUAD_VIEW_OFFSET, VEC4_VIEW_OFFSET};

/// What the pass changed, for tests and logs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PassReport {
    /// Atomics given acquire semantics.
    pub acquires: usize,
    /// Loads and stores made volatile.
    pub volatiles: usize,
    /// Fences inserted.
    pub fences: usize,
    /// Loop bounds disabled.
    pub unbounded_loops: usize,
    /// Plain views moved onto their atomic view's binding.
    pub aliased_views: usize,
    /// Loop-cap checks inserted before entry-point returns.
    pub loop_checks: usize,
    /// Barriers removed from a one-row kernel (step 8).
    pub barriers_removed: usize,
}

/// Runs the pass over `words`; returns the new module and what it did.
/// `one_row`: the kernel's workgroup is one SIMD row of llvmpipe (step 8).
pub fn run(words: &[u32], one_row: bool) -> Result<(Vec<u32>, PassReport), String> {
    let mut m = rspirv::dr::load_words(words).map_err(|e| format!("reading SPIR-V: {e}"))?;
    let mut report = PassReport::default();
    let names: HashMap<Word, String> = m
        .debug_names
        .iter()
        .filter(|i| i.class.opcode == Op::Name)
        .filter_map(|i| match (&i.operands[0], &i.operands[1]) {
            (Operand::IdRef(id), Operand::LiteralString(s)) => Some((*id, s.clone())),
            _ => None,
        })
        .collect();
    let mut ids = Ids::new(&mut m);
    let device = ids.u32_const(&mut m, Scope::Device as u32);
    let acquire = ids.u32_const(
        &mut m,
        (MemorySemantics::ACQUIRE | MemorySemantics::UNIFORM_MEMORY).bits(),
    );
    let acq_rel = ids.u32_const(
        &mut m,
        (MemorySemantics::ACQUIRE_RELEASE | MemorySemantics::UNIFORM_MEMORY).bits(),
    );
    let never = ids.false_const(&mut m);
    let loop_bounds: HashSet<Word> = names
        .iter()
        .filter(|(_, n)| n.as_str() == "loop_bound")
        .map(|(id, _)| *id)
        .collect();

    for f in &mut m.functions {
        let Some(name) = f.def_id().and_then(|id| names.get(&id)) else {
            continue;
        };
        if !name.starts_with("vks_") {
            continue;
        }
        if name.starts_with("vks_acquire_") && !one_row {
            for inst in f.blocks.iter_mut().flat_map(|b| b.instructions.iter_mut()) {
                if set_atomic_semantics(inst, device, acquire) {
                    report.acquires += 1;
                }
            }
        }
        if name.starts_with("vks_volatile_") {
            for inst in f.blocks.iter_mut().flat_map(|b| b.instructions.iter_mut()) {
                let slot = match inst.class.opcode {
                    Op::Load => 1,
                    Op::Store => 2,
                    _ => continue,
                };
                {
                    match inst.operands.get_mut(slot) {
                        Some(Operand::MemoryAccess(a)) => *a |= MemoryAccess::VOLATILE,
                        _ => inst
                            .operands
                            .push(Operand::MemoryAccess(MemoryAccess::VOLATILE)),
                    }
                    report.volatiles += 1;
                }
            }
        }
        if name == "vks_fence_acq_rel" && !one_row {
            let block = f.blocks.last_mut().ok_or("vks_fence_acq_rel has no body")?;
            let at = block.instructions.len().saturating_sub(1);
            block.instructions.insert(
                at,
                Instruction::new(
                    Op::MemoryBarrier,
                    None,
                    None,
                    vec![
                        Operand::IdScope(device),
                        Operand::IdMemorySemantics(acq_rel),
                    ],
                ),
            );
            report.fences += 1;
        }
        // vks_loop_check keeps naga's bound: its loop must be one the driver caps,
        // and on llvmpipe (Mesa 22.3) a loop whose only exit is an induction
        // variable test escaped the cap in our tests, while the bounded form
        // (two exits, like every user loop) is capped.
        if name != "vks_loop_check" {
            report.unbounded_loops += unbound_loops(f, &loop_bounds, never);
        }
    }
    if one_row {
        for b in m.functions.iter_mut().flat_map(|f| f.blocks.iter_mut()) {
            let before = b.instructions.len();
            b.instructions
                .retain(|i| !matches!(i.class.opcode, Op::ControlBarrier | Op::MemoryBarrier));
            report.barriers_removed += before - b.instructions.len();
        }
    }
    report.aliased_views = decorate_buffers(&mut m, &names);
    report.loop_checks = insert_loop_checks(&mut m, &names);
    Ok((m.assemble(), report))
}

/// Step 7: `OpFunctionCall %void %vks_loop_check` before every `OpReturn` of every
/// entry point. Returns the number of calls inserted.
fn insert_loop_checks(m: &mut Module, names: &HashMap<Word, String>) -> usize {
    let Some((check, void)) = m.functions.iter().find_map(|f| {
        let def = f.def.as_ref()?;
        let id = def.result_id?;
        (names.get(&id)? == "vks_loop_check").then_some((id, def.result_type?))
    }) else {
        return 0;
    };
    let entries: HashSet<Word> = m
        .entry_points
        .iter()
        .filter_map(|e| match e.operands.get(1) {
            Some(Operand::IdRef(id)) => Some(*id),
            _ => None,
        })
        .collect();
    // SPIR-V 1.4+: an entry point lists every global variable its call tree uses.
    let used = globals_used_by(m, check);
    for e in &mut m.entry_points {
        for &var in &used {
            if !e.operands[3..].contains(&Operand::IdRef(var)) {
                e.operands.push(Operand::IdRef(var));
            }
        }
    }
    let header = m.header.as_mut().expect("a loaded module has a header");
    let mut count = 0;
    for f in &mut m.functions {
        if !f.def_id().is_some_and(|id| entries.contains(&id)) {
            continue;
        }
        for block in &mut f.blocks {
            if block.instructions.last().map(|i| i.class.opcode) == Some(Op::Return) {
                let at = block.instructions.len() - 1;
                let id = header.bound;
                header.bound += 1;
                block.instructions.insert(
                    at,
                    Instruction::new(
                        Op::FunctionCall,
                        Some(void),
                        Some(id),
                        vec![Operand::IdRef(check)],
                    ),
                );
                count += 1;
            }
        }
    }
    count
}

/// The global variables that function `root` and the functions it calls use.
fn globals_used_by(m: &Module, root: Word) -> Vec<Word> {
    let globals: HashSet<Word> = m
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Variable)
        .filter_map(|i| i.result_id)
        .collect();
    let by_id: HashMap<Word, &rspirv::dr::Function> = m
        .functions
        .iter()
        .filter_map(|f| Some((f.def_id()?, f)))
        .collect();
    let mut seen = HashSet::from([root]);
    let mut todo = vec![root];
    let mut used = Vec::new();
    while let Some(id) = todo.pop() {
        let Some(f) = by_id.get(&id) else { continue };
        for inst in f.blocks.iter().flat_map(|b| &b.instructions) {
            for o in &inst.operands {
                if let Operand::IdRef(r) = o {
                    if globals.contains(r) && !used.contains(r) {
                        used.push(*r);
                    }
                    if inst.class.opcode == Op::FunctionCall && seen.insert(*r) {
                        todo.push(*r);
                    }
                }
            }
        }
    }
    used
}

/// Sets scope and semantics of an atomic instruction; false for other opcodes.
fn set_atomic_semantics(inst: &mut Instruction, scope: Word, sem: Word) -> bool {
    match inst.class.opcode {
        // Pointer, Scope, Semantics[, Value]
        Op::AtomicLoad
        | Op::AtomicStore
        | Op::AtomicExchange
        | Op::AtomicIAdd
        | Op::AtomicISub
        | Op::AtomicAnd
        | Op::AtomicOr
        | Op::AtomicXor => {
            inst.operands[1] = Operand::IdScope(scope);
            inst.operands[2] = Operand::IdMemorySemantics(sem);
            true
        }
        _ => false,
    }
}

/// Replaces the exit condition of every naga loop bound in `f` with `never`.
fn unbound_loops(f: &mut rspirv::dr::Function, loop_bounds: &HashSet<Word>, never: Word) -> usize {
    // loop_bound -> OpLoad -> OpIEqual -> OpAll -> OpBranchConditional
    let mut loads = HashSet::new();
    let mut equals = HashSet::new();
    let mut alls = HashSet::new();
    let mut count = 0;
    for inst in f.blocks.iter_mut().flat_map(|b| b.instructions.iter_mut()) {
        let uses = |set: &HashSet<Word>| {
            inst.operands
                .iter()
                .any(|o| matches!(o, Operand::IdRef(id) if set.contains(id)))
        };
        match inst.class.opcode {
            Op::Load if uses(loop_bounds) => {
                loads.extend(inst.result_id);
            }
            Op::IEqual if uses(&loads) => {
                equals.extend(inst.result_id);
            }
            Op::All if uses(&equals) => {
                alls.extend(inst.result_id);
            }
            Op::BranchConditional if uses(&alls) => {
                inst.operands[0] = Operand::IdRef(never);
                count += 1;
            }
            _ => {}
        }
    }
    count
}

/// Step 4 and 5: binding moves and Coherent/Aliased decorations. Returns the
/// number of plain views moved.
fn decorate_buffers(m: &mut Module, names: &HashMap<Word, String>) -> usize {
    let buffers: Vec<Word> = m
        .types_global_values
        .iter()
        .filter(|i| {
            i.class.opcode == Op::Variable
                && i.operands.first() == Some(&Operand::StorageClass(StorageClass::StorageBuffer))
        })
        .filter_map(|i| i.result_id)
        .collect();
    let mut set_of = HashMap::new();
    let mut has = HashSet::new();
    for a in m
        .annotations
        .iter()
        .filter(|a| a.class.opcode == Op::Decorate)
    {
        if let [Operand::IdRef(id), Operand::Decoration(d), rest @ ..] = a.operands.as_slice() {
            has.insert((*id, *d));
            if let (Decoration::DescriptorSet, [Operand::LiteralBit32(s)]) = (d, rest) {
                set_of.insert(*id, *s);
            }
        }
    }
    let mut moved = 0;
    for a in m
        .annotations
        .iter_mut()
        .filter(|a| a.class.opcode == Op::Decorate)
    {
        if let [Operand::IdRef(id), Operand::Decoration(Decoration::Binding), Operand::LiteralBit32(b)] =
            a.operands.as_mut_slice()
        {
            let offset = match names.get(id) {
                Some(n) if n.starts_with("vks_w_") => PLAIN_VIEW_OFFSET,
                Some(n) if n.starts_with("vks_q_") => QUAD_VIEW_OFFSET,
                Some(n) if n.starts_with("vks_v_") => VEC4_VIEW_OFFSET,
                _ => continue,
            };
            if set_of.get(id) == Some(&LIBRARY_SET) && *b >= offset {
                *b -= offset;
                moved += 1;
            }
        }
    }
    for id in buffers {
        for d in [Decoration::Coherent, Decoration::Aliased] {
            if !has.contains(&(id, d)) {
                m.annotations.push(Instruction::new(
                    Op::Decorate,
                    None,
                    None,
                    vec![Operand::IdRef(id), Operand::Decoration(d)],
                ));
            }
        }
    }
    moved
}

/// Finds or creates constants in the module.
struct Ids {
    u32_type: Option<Word>,
    bool_type: Option<Word>,
}

impl Ids {
    fn new(m: &mut Module) -> Ids {
        let find = |m: &Module, op: Op, operands: &[Operand]| {
            m.types_global_values
                .iter()
                .find(|i| i.class.opcode == op && i.operands == operands)
                .and_then(|i| i.result_id)
        };
        Ids {
            u32_type: find(
                m,
                Op::TypeInt,
                &[Operand::LiteralBit32(32), Operand::LiteralBit32(0)],
            ),
            bool_type: find(m, Op::TypeBool, &[]),
        }
    }

    fn fresh(m: &mut Module) -> Word {
        let header = m.header.as_mut().expect("a loaded module has a header");
        let id = header.bound;
        header.bound += 1;
        id
    }

    /// Types go before anything that uses them: insert new types at the front.
    fn type_id(m: &mut Module, slot: &mut Option<Word>, op: Op, operands: Vec<Operand>) -> Word {
        if let Some(id) = *slot {
            return id;
        }
        let id = Self::fresh(m);
        m.types_global_values
            .insert(0, Instruction::new(op, None, Some(id), operands));
        *slot = Some(id);
        id
    }

    fn u32_const(&mut self, m: &mut Module, value: u32) -> Word {
        let ty = Self::type_id(
            m,
            &mut self.u32_type,
            Op::TypeInt,
            vec![Operand::LiteralBit32(32), Operand::LiteralBit32(0)],
        );
        let id = Self::fresh(m);
        // After the type, before any function: appending to the global section works.
        m.types_global_values.push(Instruction::new(
            Op::Constant,
            Some(ty),
            Some(id),
            vec![Operand::LiteralBit32(value)],
        ));
        id
    }

    fn false_const(&mut self, m: &mut Module) -> Word {
        let ty = Self::type_id(m, &mut self.bool_type, Op::TypeBool, vec![]);
        let id = Self::fresh(m);
        m.types_global_values.push(Instruction::new(
            Op::ConstantFalse,
            Some(ty),
            Some(id),
            vec![],
        ));
        id
    }
}
