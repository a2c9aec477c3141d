//! Host-initiated collectives on teams, one family per file: broadcast
//! (`broadcast.rs`), fcollect and collect (`collect.rs`), alltoall and alltoalls
//! (`alltoall.rs`), reductions ([`reduce`]), the deprecated active-set forms
//! ([`active`]); the algorithms they choose from: the host path for small calls
//! (`host_path.rs`), the wide kernels (`wide.rs`) and the generic pull kernels
//! of the device library (`crate::kernels::prebuild` builds their kernels
//! after init).
//!
//! Every call runs the same steps on every member of the team (this file):
//!
//! 1. **Meet and agree** (`run_collective`, through `rendezvous.rs`): each
//!    member publishes a small descriptor of its call (which collective,
//!    addresses, counts, root, operation, element type, whether its own checks
//!    passed, whether it staged its data for the host path) with its arrival at
//!    the team's entry sync on the sync plane, and reads everyone's after it. It
//!    is the "source is ready, dest is free" synchronisation the collective needs
//!    anyway, and it lets every member report the same typed error when members
//!    disagree (an fcollect whose `nelems` differ, different roots) or one member
//!    passed bad arguments, instead of hanging or corrupting memory.
//! 2. **Move**: on the host when every member staged its part (`host_path.rs`:
//!    complete on return, no closing sync); else one dispatch on this PE's device
//!    of a kernel from the device library (`shaders/collectives.wgsl`,
//!    `vkshmem_device::collectives`), over enough workgroups to fill the device,
//!    that *pulls* this PE's part: it reads peers' heaps directly and writes its
//!    own dest (reductions: combines one slice of the elements from every member
//!    and writes it to every member).
//!    Each member's part is planned as steps (`part.rs`) and submitted by the
//!    member itself, or by the team's first member for all of them in one
//!    submission where they agreed to (`VKSHMEM_SUBMIT`) and it can run
//!    every step (wide launches always; generic kernels, run as each member,
//!    where it reaches every PE's heap directly).
//! 3. **Complete** (kernel path): a meeting of the team that carries every
//!    member's outcome, so that on return every member's dest is written and
//!    every source may be reused, or every member reports the failure.
//!
//! The device-side waits of the per-thread and work_group forms are not used, so
//! the host path does not depend on cross-process spinning on the device.

mod across_nodes;
pub mod active;
mod alltoall;
mod broadcast;
mod collect;
#[doc(hidden)]
pub mod copy;
mod direct;
mod engine;
mod host_path;
mod moves;
mod part;
pub mod reduce;
mod staged;
mod ucc;
mod wide;

pub(crate) use host_path::Small;
pub(crate) use part::{Part, Step};

use bytemuck::{Pod, Zeroable};
use vkshmem_device::collectives::{HostArgs, HostCall, HOST_WORKGROUP};
use vkshmem_device::layout;

use crate::collective::reduce::ReduceOp;
use crate::error::{Error, Result};
use crate::kernels::library::{Declared, KernelShape, LibraryKernel};
use crate::runtime::Runtime;
use crate::symbuf::SymSlice;
use engine::{Call, Ran, Then};

/// Work items (heap words) per invocation the host forms aim for: many
/// workgroups with a few items each (lavapipe's copies were fastest that way).
const ITEMS_PER_INVOCATION: u64 = 4;

pub use crate::symbuf::MAX_DEVICE_BYTE;

/// `items`, or 0 (nothing to launch) when there are no bytes to move.
fn nonzero(bytes: u64, items: u64) -> u64 {
    if bytes == 0 {
        0
    } else {
        items
    }
}

/// Which collective a descriptor describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Which {
    Broadcast = 1,
    Collect = 2,
    Fcollect = 3,
    Alltoall = 4,
    Alltoalls = 5,
    Reduce = 6,
}

impl Which {
    fn from_code(code: u32) -> Option<Which> {
        [
            Which::Broadcast,
            Which::Collect,
            Which::Fcollect,
            Which::Alltoall,
            Which::Alltoalls,
            Which::Reduce,
        ]
        .into_iter()
        .find(|w| *w as u32 == code)
    }

    fn name(self) -> &'static str {
        match self {
            Which::Broadcast => "broadcast",
            Which::Collect => "collect",
            Which::Fcollect => "fcollect",
            Which::Alltoall => "alltoall",
            Which::Alltoalls => "alltoalls",
            Which::Reduce => "reduce",
        }
    }
}

/// One member's view of a call, compared across the team before anything moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub(crate) struct Desc {
    which: u32,
    /// 1 when this member's own checks passed.
    ok: u32,
    dest: u64,
    source: u64,
    /// Elements (bytes for the mem forms).
    nelems: u64,
    /// Bytes per element.
    es: u32,
    root: u32,
    op: u32,
    /// 1: the root's dest is left alone (deprecated broadcast).
    skip_root: u32,
    /// The element type ([`ElemType::code`]).
    ty: u32,
    /// 1 when this member staged its part for the host path (see
    /// `host_path`); the host path runs when every member did.
    staged: u32,
    dst: u64,
    sst: u64,
    /// Elements the member's dest holds (checked by every member for collect).
    cap: u64,
    /// 1 when this member lets the team's first member submit every
    /// member's part (`VKSHMEM_SUBMIT`, see `part.rs`); taken when all do.
    leader: u32,
    /// How this member may move a call too large for the plane's data slot
    /// on the host (see `host_path`: a heap in host memory, within
    /// `VKSHMEM_HOST_MAPPED_MAX`): bits `HOSTED_DIRECT` (straight from the
    /// members' heaps, `direct.rs`) and `HOSTED_ROUNDS` (through the staging
    /// buffers, `staged.rs`); a way is taken when all members may.
    hosted: u32,
}

/// The host kernels a program is likely to call first on a team of
/// `s.size` (WORLD), the likeliest first: every family's wide kernels, then
/// their generic ones, each family's as it declares them in its own file
/// (`kernels` in `broadcast.rs`, `reduce.rs`, `collect.rs`,
/// `alltoall.rs`). The background builder builds these where no profile
/// says better (`crate::kernels::prebuild`); the façade hands them down.
pub(crate) fn first_kernels(s: &KernelShape) -> Vec<LibraryKernel> {
    let families: [fn(&KernelShape) -> Declared; 4] = [
        broadcast::kernels,
        reduce::kernels,
        collect::kernels,
        alltoall::kernels,
    ];
    let declared: Vec<Declared> = families.iter().map(|f| f(s)).collect();
    let mut out: Vec<LibraryKernel> = Vec::new();
    let all = declared
        .iter()
        .flat_map(|d| &d.wide)
        .chain(declared.iter().flat_map(|d| &d.generic));
    for k in all {
        if !out.contains(k) {
            out.push(*k);
        }
    }
    out
}

/// An element type as the members of a collective compare it: the primitive
/// types by name, any other `Pod` type by a hash of its Rust name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ElemType {
    code: u32,
}

/// The primitive types with their names, in code order (code = index + 1).
macro_rules! primitives {
    ($($t:ty),*) => {
        [$((std::any::TypeId::of::<$t>(), stringify!($t))),*]
    };
}

fn primitives() -> [(std::any::TypeId, &'static str); 14] {
    primitives!(u8, i8, u16, i16, u32, i32, u64, i64, usize, isize, f32, f64, u128, i128)
}

impl ElemType {
    /// The type of `T`.
    pub(crate) fn of<T: 'static>() -> ElemType {
        let id = std::any::TypeId::of::<T>();
        match primitives().iter().position(|(t, _)| *t == id) {
            Some(i) => ElemType { code: i as u32 + 1 },
            None => {
                // FNV-1a of the type's name: the same program on every PE names
                // it the same.
                let h = std::any::type_name::<T>()
                    .bytes()
                    .fold(0x811c_9dc5u32, |h, b| {
                        (h ^ b as u32).wrapping_mul(0x0100_0193)
                    });
                ElemType {
                    code: 0x8000_0000 | h,
                }
            }
        }
    }

    /// Its name for error messages.
    pub(crate) fn name(code: u32) -> String {
        match primitives().get((code as usize).wrapping_sub(1)) {
            Some((_, n)) => (*n).to_string(),
            None => format!("a type of its own (hash {code:#010x})"),
        }
    }
}

impl Desc {
    /// A descriptor for `nelems` elements of `T` (the mem forms pass `u8`).
    pub(crate) fn new<T: Pod>(which: Which, dest: u64, source: u64, nelems: u64) -> Desc {
        Desc {
            which: which as u32,
            ok: 1,
            dest,
            source,
            nelems,
            es: std::mem::size_of::<T>() as u32,
            root: 0,
            op: 0,
            skip_root: 0,
            ty: ElemType::of::<T>().code,
            staged: 0,
            dst: 1,
            sst: 1,
            cap: 0,
            leader: 0,
            hosted: 0,
        }
    }
}

pub(crate) use crate::runtime::rendezvous::Members;

/// Every member's descriptor against member 0's: the same typed error on every
/// member when one passed bad arguments or they disagree.
fn agree(m: &Members, name: &str, all: &[Desc], same_nelems: bool) -> Result<()> {
    if let Some(i) = all.iter().position(|d| d.ok == 0) {
        return Err(Error::InvalidArgument(format!(
            "{name}: team member {i} (PE {}) passed invalid arguments (its error says which)",
            m.shape.member(i as u32)
        )));
    }
    let first = &all[0];
    for (i, d) in all.iter().enumerate() {
        let pe = m.shape.member(i as u32);
        let differs = |what: &str, a: String, b: String| {
            Err(Error::InvalidArgument(format!(
                    "{name}: team member {i} (PE {pe}) passed {what} {b}, member 0 (PE {}) passed {a}; every member must pass the same",
                    m.shape.member(0)
                )))
        };
        if d.which != first.which {
            return Err(Error::InvalidArgument(format!(
                    "collectives out of step on the team: member 0 (PE {}) is in {name}, member {i} (PE {pe}) in {}",
                    m.shape.member(0),
                    Which::from_code(d.which).map_or("another collective", Which::name)
                )));
        }
        if d.ty != first.ty {
            return differs(
                "elements of type",
                ElemType::name(first.ty),
                ElemType::name(d.ty),
            );
        }
        if d.op != first.op {
            let op = |c: u32| {
                ReduceOp::ALL
                    .get(c as usize)
                    .map_or(format!("code {c}"), |o| o.name().to_string())
            };
            return differs("the operation", op(first.op), op(d.op));
        }
        let pairs = [
            ("dest address", first.dest, d.dest),
            ("source address", first.source, d.source),
            ("element size", first.es as u64, d.es as u64),
            ("root", first.root as u64, d.root as u64),
            ("dst stride", first.dst, d.dst),
            ("sst stride", first.sst, d.sst),
            (
                "nelems",
                first.nelems,
                if same_nelems { d.nelems } else { first.nelems },
            ),
        ];
        for (what, a, b) in pairs {
            if a != b {
                return differs(what, a.to_string(), b.to_string());
            }
        }
    }
    Ok(())
}

/// Where a symmetric slice lies, without its element type: what the checks
/// need of a [`SymSlice`] after its type is gone (queued collectives keep it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// Byte offset in the heap.
    pub offset: u64,
    /// Length in elements.
    pub len: u64,
    /// Bytes per element.
    pub es: u64,
    /// The element type's name (for errors).
    pub ty: &'static str,
}

impl Span {
    /// The span of `s`.
    pub fn of<T: Pod>(s: &SymSlice<T>) -> Span {
        Span {
            offset: s.offset(),
            len: s.len() as u64,
            es: std::mem::size_of::<T>() as u64,
            ty: std::any::type_name::<T>(),
        }
    }
}

/// Device code's byte addresses are u32 (and a word index times 4 must not
/// wrap): every object `(offset, bytes)` of a kernel that takes them (the
/// generic kernels of host collectives, device and queued collectives) must
/// end within [`MAX_DEVICE_BYTE`]. The wide kernels bind windows anywhere in
/// the heap, so host collectives check this only where they take a generic
/// step. Zero-byte objects touch nothing.
pub(crate) fn generic_reach(what: &str, objects: &[(u64, u64)]) -> Result<()> {
    for &(offset, bytes) in objects {
        let end = offset.checked_add(bytes);
        if bytes > 0 && !end.is_some_and(|e| e <= MAX_DEVICE_BYTE) {
            return Err(Error::InvalidArgument(format!(
                "{what}: the object at byte {offset} ends past the first 4 GiB of the heap, which this call's kernel addresses (device and queued collectives, and host collectives with a piece off whole words or that otherwise run on the generic kernel)"
            )));
        }
    }
    Ok(())
}

/// collect: the total of the counts (elements), after checking that every
/// member's dest holds it (every member checks every member's, so all fail
/// alike).
pub(crate) fn collect_total(all: &[Desc]) -> Result<u64> {
    let total = all.iter().fold(0u64, |t, d| t.saturating_add(d.nelems));
    if let Some(i) = all.iter().position(|d| d.cap < total) {
        return Err(Error::InvalidArgument(format!(
            "collect: the counts add up to {total} elements; team member {i}'s dest holds {}",
            all[i].cap
        )));
    }
    Ok(total)
}

/// Whether the team's first member submits every member's part of a call
/// whose members met with `all`: every member asked for it
/// (`VKSHMEM_SUBMIT`) on a team of more than one. The same on every member;
/// plans that depend on it (the broadcast's whole push) take it from here.
pub(crate) fn submits_together(m: &Members, all: &[Desc]) -> bool {
    m.shape.size > 1 && all.iter().all(|d| d.leader == 1)
}

impl Runtime {
    /// Checks that `n` elements of `s` are inside `s` and the heap (past the
    /// control region, within the first 4 GiB that device code addresses).
    pub(crate) fn check_sym<T: Pod>(&self, what: &str, s: &SymSlice<T>, n: u64) -> Result<()> {
        self.check_span(what, &Span::of(s), n)
    }

    /// [`Runtime::check_sym`] anywhere in the heap: for the host collectives
    /// whose wide and staged paths bind or copy any part of it; their generic
    /// steps check the first 4 GiB themselves ([`generic_reach`]).
    pub(crate) fn check_sym_heap<T: Pod>(&self, what: &str, s: &SymSlice<T>, n: u64) -> Result<()> {
        self.check_span_heap(what, &Span::of(s), n)
    }

    /// [`Runtime::check_sym`] on a slice's [`Span`].
    pub(crate) fn check_span(&self, what: &str, s: &Span, n: u64) -> Result<()> {
        self.check_span_heap(what, s, n)?;
        generic_reach(what, &[(s.offset, n * s.es)])
    }

    /// [`Runtime::check_sym_heap`] on a slice's [`Span`].
    fn check_span_heap(&self, what: &str, s: &Span, n: u64) -> Result<()> {
        let es = s.es;
        let control = layout::control_bytes(self.n_pes());
        if es == 0 {
            return Err(Error::InvalidArgument(format!(
                "{what}: the zero-sized type {} has no bytes to move",
                s.ty
            )));
        }
        // A zero-element call touches no memory: any address will do
        // (OpenSHMEM), and it still synchronises like any other call.
        if n == 0 {
            return Ok(());
        }
        if n > s.len {
            return Err(Error::InvalidArgument(format!(
                "{what}: {n} elements needed, the object holds {}",
                s.len
            )));
        }
        // Only the n elements the call touches count (a raw slice's own length may
        // be anything).
        let bytes = n.checked_mul(es);
        let end = bytes.and_then(|b| s.offset.checked_add(b));
        if s.offset < control || !end.is_some_and(|e| e <= self.heap_size()) {
            return Err(Error::InvalidArgument(format!(
                "{what}: {n} elements of {es} bytes at offset {} are not inside the symmetric heap's allocatable part ({control}..{})",
                s.offset,
                self.heap_size()
            )));
        }
        if s.offset % es != 0 {
            return Err(Error::InvalidArgument(format!(
                "{what}: offset {} is not a multiple of the element size {es}",
                s.offset
            )));
        }
        // A slice of a buffer that was freed (possible only through
        // SymSlice::from_raw: slices of a SymBuffer borrow it).
        if !self.is_live(s.offset, n * es) {
            return Err(Error::InvalidArgument(format!(
                "{what}: {n} elements of {es} bytes at offset {} are not inside one live symmetric allocation (freed, never allocated, or running past its end)",
                s.offset
            )));
        }
        Ok(())
    }

    /// Steps 1-3 of the module docs ([`Shmem`] through the engine).
    /// `local` is this PE's own check; `small` what this PE stages for the
    /// host path when the call is small enough (see `host_path`); `plan`
    /// turns every member's descriptor into the part of the member it is
    /// given (its index in the team), called for every member.
    pub(crate) fn run_collective(
        &self,
        m: &Members,
        desc: Desc,
        local: Result<()>,
        same_nelems: bool,
        small: Small,
        plan: impl FnMut(u32, &[Desc]) -> Result<Part>,
    ) -> Result<()> {
        let call = Shmem {
            desc,
            local: Some(local),
            same_nelems,
            small,
            plan,
        };
        self.run_call(m, call)
    }

    /// `call`'s kernel, its immediates (`args` with the call's own arguments)
    /// and the workgroups for `items` work items: one dispatch of a host
    /// collective's pull kernel (also recorded by queued collectives).
    pub(crate) fn host_kernel_call(
        &self,
        call: HostCall,
        mut args: HostArgs,
        items: u64,
    ) -> Result<(std::sync::Arc<crate::DeviceKernel>, HostArgs, u32)> {
        let c = call.kernel();
        args.params = call.words();
        let name = c.name();
        let k = self
            .library_kernel(&name, || Some(c.source()))?
            .expect("every host collective has a source");
        Ok((k, args, self.host_groups(items, ITEMS_PER_INVOCATION)))
    }

    /// The library kernel named `name` (unique per generated source), built from
    /// `source()` the first time; `None` when `source` has none.
    pub(crate) fn library_kernel(
        &self,
        name: &str,
        source: impl FnOnce() -> Option<String>,
    ) -> Result<Option<std::sync::Arc<crate::DeviceKernel>>> {
        if let Some(k) = crate::lock::lock(&self.library_kernels).get(name) {
            return Ok(Some(k.clone()));
        }
        let Some(src) = source() else {
            return Ok(None);
        };
        let k = self.device_kernel(&src, name)?;
        crate::lock::lock(&self.library_kernels).insert(name.to_string(), k.clone());
        Ok(Some(k))
    }

    /// Workgroups of [`HOST_WORKGROUP`] for `items` work items, `per_invocation`
    /// each, within the device's limit (and 65535); kernels stride over the rest.
    pub(crate) fn host_groups(&self, items: u64, per_invocation: u64) -> u32 {
        self.groups_of(items, HOST_WORKGROUP as u64 * per_invocation)
    }

    /// Workgroups for `items` work items, `per_group` each, within the
    /// device's limit (and 65535); kernels stride over the rest.
    pub(crate) fn groups_of(&self, items: u64, per_group: u64) -> u32 {
        items.div_ceil(per_group).clamp(1, self.max_groups()) as u32
    }

    /// The most workgroups a host kernel is launched over: the device's
    /// limit, and 65535.
    pub(crate) fn max_groups(&self) -> u64 {
        (self.device_info().max_workgroups_x as u64).min(65535)
    }

    /// The kernel arguments' team and address part (the caller has checked
    /// that both objects lie in the first 4 GiB: [`generic_reach`]).
    pub(crate) fn host_args<T: Pod>(
        m: &Members,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
    ) -> HostArgs {
        HostArgs {
            start: m.shape.start,
            stride: m.shape.stride as u32,
            size: m.shape.size,
            me: m.me,
            dest: dest.offset() as u32,
            source: source.offset() as u32,
            ..Default::default()
        }
    }
}

/// A SHMEM collective as the engine runs it: its descriptor, this PE's own
/// check, what it stages for the host path, and its plan for the kernel
/// path (one per family: `broadcast.rs`, `collect.rs`, `alltoall.rs`,
/// `reduce.rs`).
pub(crate) struct Shmem<P> {
    desc: Desc,
    /// This PE's own check, taken by the agreement.
    local: Option<Result<()>>,
    /// Whether every member must pass the same `nelems`.
    same_nelems: bool,
    small: Small,
    plan: P,
}

impl<P: FnMut(u32, &[Desc]) -> Result<Part>> Call for Shmem<P> {
    /// Every member's descriptor, and the ticket of the meeting on the
    /// plane (`None` on the socket).
    type Agreed = (Vec<Desc>, Option<crate::sync::Ticket>);

    fn name(&self) -> &str {
        Which::from_code(self.desc.which).map_or("collective", Which::name)
    }

    fn size(&self) -> (u64, Option<u32>) {
        let d = &self.desc;
        let root = (Which::from_code(d.which) == Some(Which::Broadcast)).then_some(d.root);
        (d.nelems.saturating_mul(u64::from(d.es)), root)
    }

    /// Publishes the descriptor (staging this PE's data for the host path
    /// where it is small) and checks every member's against member 0's.
    fn agree(&mut self, rt: &Runtime, m: &Members) -> Result<Self::Agreed> {
        let name = Which::from_code(self.desc.which).map_or("collective", Which::name);
        let local = self.local.take().expect("agreed once");
        let local = match &m.deferred {
            Some(why) => local.and(Err(Error::InvalidArgument(why.clone()))),
            None => local,
        };
        let mut desc = self.desc;
        desc.ok = u32::from(local.is_ok());
        desc.leader = u32::from(rt.leader_submit);
        let small = &self.small;
        let met = rt
            .meet(m, &mut |slot| {
                let mut d = desc;
                if let (Some(slot), true) = (slot, local.is_ok()) {
                    d.staged = u32::from(rt.stage_small(small, slot));
                    d.hosted = rt.host_ways(m, small);
                }
                d
            })
            .map_err(|e| e.during(name))?;
        local?;
        agree(m, name, &met.descs, self.same_nelems)?;
        Ok((met.descs, met.ticket))
    }

    /// The host path when every member staged its data; straight from the
    /// mappings, or in rounds through the staging buffers, where the heaps
    /// are in host memory; across nodes, or devices, through their own
    /// paths; else the kernels, each member's part planned by every member.
    fn run(&mut self, rt: &Runtime, m: &Members, (all, ticket): Self::Agreed) -> Ran {
        let name = Which::from_code(self.desc.which).map_or("collective", Which::name);
        let small = &self.small;
        if let Some(t) = &ticket {
            if all.iter().all(|d| d.staged == 1) {
                // Complete on return, no closing sync (see host_path).
                return Ran::Complete(rt.host_move(m, &all, t, small));
            }
            // Too large for the data slot, on a heap in host memory (see
            // host_path): straight from the members' heaps where every
            // member maps them all and no dest overlaps what peers read ...
            let direct = all.iter().all(|d| d.hosted & host_path::HOSTED_DIRECT != 0);
            match direct.then(|| moves::direct_safe(m.shape.size, &all)) {
                Some(Err(e)) => return Ran::Complete(Err(e)),
                Some(Ok(true)) => return rt.direct_move(m, &all, name, small.reduce, small.in_l1),
                _ => {}
            }
            // ... else in rounds through the staging buffers.
            if all.iter().all(|d| d.hosted & host_path::HOSTED_ROUNDS != 0) && !rt.spans_devices(m)
            {
                return Ran::Complete(rt.staged_move(m, &all, name, small.reduce));
            }
        }
        if let (Some(h), Some(f), Some(Which::Reduce)) = (
            rt.node_part(m),
            small.reduce,
            Which::from_code(self.desc.which),
        ) {
            // A reduction on a team that spans nodes: hierarchical, with
            // MPI_Allreduce between nodes (when MPI reduces the type).
            match rt.reduce_across_nodes(m, &h, &all, name, f) {
                Ok(false) => {}
                done => return Ran::Complete(done.map(drop)),
            }
        }
        if rt.spans_devices(m) {
            // Some member is on another device (the same answer on every
            // member: transports are symmetric): through the staging buffers.
            return Ran::Complete(rt.staged_move(m, &all, name, small.reduce));
        }
        // Every member plans every member's part, from the same agreed
        // values on the same device: all reach the same choice of who
        // submits (the closing meeting checks it), and an argument a part
        // cannot take (an object past the 4 GiB of a generic kernel) fails
        // every member alike, before anything moves.
        let together = submits_together(m, &all);
        let mut as_members = false;
        let (moved, how) = match (0..m.shape.size)
            .map(|j| (self.plan)(j, &all))
            .collect::<Result<Vec<Part>>>()
        {
            Err(e) => (Err(e), part::EACH),
            Ok(mut parts) => match together
                .then(|| rt.run_as_first(m, &parts, rt.runs_as_any_pe()))
                .flatten()
            {
                Some((ran, generic)) => {
                    as_members = generic;
                    (ran, part::LEADER)
                }
                None => (rt.run_part(parts.swap_remove(m.me as usize)), part::EACH),
            },
        };
        tracing::trace!(
            "{name}: {}",
            match (how == part::LEADER, as_members) {
                (true, false) => "every part submitted by the team's first member",
                (true, true) =>
                    "every part submitted by the team's first member, generic kernels run as each member",
                _ if m.shape.size == 1 => "a team of one submitted its part",
                _ => "each member submitted its own part",
            }
        );
        Ran::Moved {
            moved,
            how,
            then: Then::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{first_kernels, generic_reach, MAX_DEVICE_BYTE};
    use crate::config::Prebuild as Mode;
    use crate::kernels::library::{test_library as cfg, KernelShape};
    use crate::kernels::prebuild::{job_named, jobs, Job};
    use vkshmem_device::collectives::{self, HostCollective, ReduceOp, WideUnit};
    use vkshmem_device::LibraryConfig;

    /// The wide kernels' workgroup size in these tests (llvmpipe's).
    const WG: u32 = collectives::HOST_WORKGROUP;
    const U32: WideUnit = WideUnit::Vec4U32;

    /// The jobs the builder guesses in `mode` for a world of `size`.
    fn guesses(mode: Mode, size: u32, cfg: &LibraryConfig, wg: u32, unit: WideUnit) -> Vec<Job> {
        if mode == Mode::Off {
            return Vec::new();
        }
        let all = mode == Mode::All;
        jobs(&first_kernels(&KernelShape { size, cfg, wg, all }), unit)
    }

    #[test]
    fn jobs_are_named_and_keyed_as_the_collectives_make_them() {
        assert!(guesses(Mode::Off, 4, &cfg(), WG, U32).is_empty());
        let typical = guesses(Mode::Typical, 4, &cfg(), WG, U32);
        let names: Vec<_> = typical.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(
            names[..5],
            [
                "vkshmem_wide_push_4",
                "vkshmem_wide_copy_1",
                "vkshmem_wide_reduce_f32_sum",
                "vkshmem_wide_copy_4",
                "vkshmem_broadcast"
            ]
        );
        let b = HostCollective::Broadcast;
        assert!(typical.contains(&Job {
            source: b.source(),
            name: b.name()
        }));
        // One PE: the wide copy of one block is listed once.
        let one = guesses(Mode::Typical, 1, &cfg(), WG, U32);
        assert_eq!(
            one.iter()
                .filter(|j| j.name.starts_with("vkshmem_wide_copy"))
                .count(),
            1
        );
        // Past the wide paths' limit of members: pushes to groups of 8 (and
        // the rest), the one-block copy.
        let big = guesses(Mode::Typical, 16, &cfg(), WG, U32);
        let wide: Vec<_> = big.iter().filter(|j| j.name.contains("wide")).collect();
        assert_eq!(wide.len(), 2);
        assert_eq!(wide[0].name, "vkshmem_wide_push_8");
        assert_eq!(wide[1].name, "vkshmem_wide_copy_1");
        let odd = guesses(Mode::Typical, 11, &cfg(), WG, U32);
        assert!(odd.iter().any(|j| j.name == "vkshmem_wide_push_3"));
        let all = guesses(Mode::All, 4, &cfg(), WG, U32);
        assert!(all.len() > typical.len());
        let mut sources: Vec<_> = all.iter().map(|j| &j.source).collect();
        sources.sort();
        sources.dedup();
        assert_eq!(sources.len(), all.len());
        // No 64-bit reductions without 64-bit shader support.
        let mut small = cfg();
        small.int64 = false;
        small.float64 = false;
        assert!(guesses(Mode::All, 4, &small, WG, U32)
            .iter()
            .all(|j| !j.name.ends_with("64")));
    }

    #[test]
    fn every_host_kernel_is_found_by_its_name() {
        let c = cfg();
        let mut all = guesses(Mode::All, 4, &c, WG, U32);
        let u64s = guesses(Mode::All, 4, &c, WG, WideUnit::Vec2U64);
        // The vec2<u64> kernels are the wide ones, named apart.
        let wide_u64: Vec<_> = u64s
            .iter()
            .filter(|j| j.name.contains("_wide_") && j.name.ends_with("_u64"))
            .collect();
        assert!(wide_u64
            .iter()
            .all(|j| j.source.contains("array<vec2<u64>>")));
        assert_eq!(
            wide_u64.len(),
            all.iter()
                .filter(|j| j.name.contains("_wide_") && !j.name.contains("words"))
                .count()
        );
        all.extend(u64s);
        for j in &all {
            assert_eq!(job_named(&j.name, &c, WG).as_ref(), Some(j), "{}", j.name);
        }
        assert!(job_named("vkshmem_wide_reduce_u64_sum_u64", &c, WG).is_some());
        // Other kinds, and names that are not host kernels (a wide
        // reduction named by its team size, as before one served every size).
        let j = job_named("vkshmem_wide_reduce_i32_xor", &c, WG).unwrap();
        assert_eq!(
            j.source,
            collectives::wide_reduce_source(
                &collectives::kind("i32").unwrap(),
                ReduceOp::Xor,
                WG,
                U32
            )
            .unwrap()
        );
        assert!(job_named("vkshmem_wide_reduce_i32_xor_7", &c, WG).is_none());
        for name in [
            "vkshmem_wide_copy_0",
            "vkshmem_wide_copy_9",
            "vkshmem_wide_copy_words_0",
            "vkshmem_wide_copy_words_9",
            "vkshmem_wide_reduce_f32_xor",
            "vkshmem_wide_reduce_f64_xor",
            "vkshmem_reduce_f128",
            "vkshmem_wide_push_0",
            "vkshmem_wide_push_9",
            "vkshmem_gather",
            "count_in",
        ] {
            assert!(job_named(name, &c, WG).is_none(), "{name}");
        }
        let mut small = c;
        small.int64 = false;
        assert!(job_named("vkshmem_reduce_u64", &small, WG).is_none());
        // Wide reductions of 8-byte kinds only where the library has int64.
        assert_eq!(
            job_named("vkshmem_wide_reduce_f64_sum", &c, WG).is_some(),
            c.int64
        );
        assert!(job_named("vkshmem_wide_reduce_f64_sum", &small, WG).is_none());
        // No vec2<u64> kernels without int64.
        assert!(job_named("vkshmem_wide_copy_2_u64", &small, WG).is_none());
        assert!(job_named("vkshmem_wide_reduce_i8_max_u64", &small, WG).is_none());
        assert!(job_named("vkshmem_wide_copy_2_u64", &c, WG).is_some());
        assert!(job_named("vkshmem_wide_reduce_i8_max", &small, WG).is_some());
    }

    #[test]
    fn generic_kernels_reach_the_first_4_gib() {
        assert!(generic_reach("x", &[(0, MAX_DEVICE_BYTE), (MAX_DEVICE_BYTE, 0)]).is_ok());
        assert!(generic_reach("x", &[(5 << 30, 0)]).is_ok());
        let e = generic_reach("reduce", &[(16, 4), (MAX_DEVICE_BYTE - 4, 8)]).unwrap_err();
        assert!(
            e.to_string().contains("reduce") && e.to_string().contains("4 GiB"),
            "{e}"
        );
        assert!(generic_reach("x", &[(u64::MAX, 1)]).is_err());
    }
}
