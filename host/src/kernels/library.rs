//! The device library's kernels that host calls launch, each named once:
//! what it is called and how its source is made. The call that launches one
//! (`crate::collective`) and the builder that builds it ahead
//! (`prebuild.rs`) both take them from here, so both build the same
//! pipeline under the same name, and a name read back from a profile parses
//! here ([`LibraryKernel::parse`]).
//!
//! Names are unique per generated source: `vkshmem_<collective>`,
//! `vkshmem_reduce_<kind>`, `vkshmem_wide_copy_<blocks>`,
//! `vkshmem_wide_copy_words_<blocks>`, `vkshmem_wide_push_<dests>`,
//! `vkshmem_wide_reduce_<kind>_<op>_<members>`,
//! `vkshmem_wide_acc_<kind>_<op>_<sources>_<first|acc>`; the wide kernels
//! that come in units take `_u64` after that in `vec2<u64>` units
//! ([`WideUnit::suffix`]). A wide copy's or push's workgroup size is the
//! context's, the same for every kernel of a job, so it is not in the name.

use vkshmem_device::collectives::{
    self, HostCollective, Kind, ReduceOp, WideUnit, WIDE_REDUCE_MAX_MEMBERS, WIDE_REDUCE_WORKGROUP,
};
use vkshmem_device::LibraryConfig;

/// One kernel of the library that host calls launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LibraryKernel {
    /// A host collective's generic pull kernel.
    Host(HostCollective),
    /// The wide copy of `blocks` blocks, in workgroups of `wg`.
    WideCopy { blocks: u32, wg: u32 },
    /// The word-by-word wide copy of `blocks` blocks (always in words).
    WideCopyWords { blocks: u32, wg: u32 },
    /// The wide push to `dests` dests, in workgroups of `wg`.
    WidePush { dests: u32, wg: u32 },
    /// The wide reduction over up to 8 members (their count an immediate).
    WideReduce { kind: Kind, op: ReduceOp },
    /// A step of a chained wide reduction: up to 8 sources (their count an
    /// immediate) folded into the dest (`accumulate`: onto its running
    /// result).
    WideAccumulate {
        kind: Kind,
        op: ReduceOp,
        accumulate: bool,
    },
}

impl LibraryKernel {
    /// Whether it comes in units (the wide kernels but the word copy).
    pub(crate) fn has_units(&self) -> bool {
        !matches!(
            self,
            LibraryKernel::Host(_) | LibraryKernel::WideCopyWords { .. }
        )
    }

    /// Its name in `unit` (the unit counts only where [`Self::has_units`]).
    pub(crate) fn name(&self, unit: WideUnit) -> String {
        let base = match *self {
            LibraryKernel::Host(c) => return c.name(),
            LibraryKernel::WideCopyWords { blocks, .. } => {
                return format!("vkshmem_wide_copy_words_{blocks}")
            }
            LibraryKernel::WideCopy { blocks, .. } => format!("vkshmem_wide_copy_{blocks}"),
            LibraryKernel::WidePush { dests, .. } => format!("vkshmem_wide_push_{dests}"),
            LibraryKernel::WideReduce { kind, op } => {
                format!("vkshmem_wide_reduce_{}_{}", kind.name, op.name())
            }
            LibraryKernel::WideAccumulate {
                kind,
                op,
                accumulate,
            } => format!(
                "vkshmem_wide_acc_{}_{}_{}",
                kind.name,
                op.name(),
                if accumulate { "acc" } else { "first" }
            ),
        };
        format!("{base}{}", unit.suffix())
    }

    /// Its source in `unit`; `None` where the library has none (a kind or
    /// operation without wide kernels, a size past the limits).
    pub(crate) fn source(&self, unit: WideUnit) -> Option<String> {
        match *self {
            LibraryKernel::Host(c) => Some(c.source()),
            LibraryKernel::WideCopy { blocks, wg } => {
                collectives::wide_copy_source(blocks, wg, unit)
            }
            LibraryKernel::WideCopyWords { blocks, wg } => {
                collectives::wide_copy_words_source(blocks, wg)
            }
            LibraryKernel::WidePush { dests, wg } => collectives::wide_push_source(dests, wg, unit),
            LibraryKernel::WideReduce { kind, op } => {
                collectives::wide_reduce_source(&kind, op, WIDE_REDUCE_WORKGROUP, unit)
            }
            LibraryKernel::WideAccumulate {
                kind,
                op,
                accumulate,
            } => collectives::wide_accumulate_source(
                &kind,
                op,
                accumulate,
                WIDE_REDUCE_WORKGROUP,
                unit,
            ),
        }
    }

    /// The kernel named `name` for a library `cfg` whose wide copies and
    /// pushes run in workgroups of `wg`, with its unit; `None` for a name
    /// the builder does not build ahead (the accumulate steps, another
    /// library's kernels), a kind `cfg` cannot reduce, or a `vec2<u64>`
    /// name where `cfg` has no int64.
    pub(crate) fn parse(
        name: &str,
        cfg: &LibraryConfig,
        wg: u32,
    ) -> Option<(LibraryKernel, WideUnit)> {
        let words = WideUnit::Vec4U32;
        let movement = [
            HostCollective::Broadcast,
            HostCollective::Fcollect,
            HostCollective::Collect,
            HostCollective::Alltoall,
            HostCollective::Alltoalls,
        ];
        if let Some(c) = movement.into_iter().find(|c| c.name() == name) {
            return Some((LibraryKernel::Host(c), words));
        }
        if let Some(k) = name.strip_prefix("vkshmem_reduce_") {
            let kind = collectives::kind(k).filter(|k| collectives::kind_available(cfg, k))?;
            return Some((LibraryKernel::Host(HostCollective::Reduce(kind)), words));
        }
        let size = |s: &str| {
            s.parse::<u32>()
                .ok()
                .filter(|n| (1..=WIDE_REDUCE_MAX_MEMBERS).contains(n))
        };
        if let Some(n) = name.strip_prefix("vkshmem_wide_copy_words_") {
            let blocks = size(n)?;
            return Some((LibraryKernel::WideCopyWords { blocks, wg }, words));
        }
        let (family, rest, unit) = wide_parts(name)?;
        if unit == WideUnit::Vec2U64 && !cfg.int64 {
            return None;
        }
        let k = match family {
            Wide::Copy => LibraryKernel::WideCopy {
                blocks: size(rest)?,
                wg,
            },
            Wide::Push => LibraryKernel::WidePush {
                dests: size(rest)?,
                wg,
            },
            Wide::Reduce => {
                let (k, op) = rest.split_once('_')?;
                let kind =
                    collectives::kind(k).filter(|k| collectives::wide_kind_available(cfg, k))?;
                let op = ReduceOp::ALL.into_iter().find(|o| o.name() == op)?;
                LibraryKernel::WideReduce { kind, op }
            }
        };
        Some((k, unit))
    }
}

/// The wide kernels the builder builds ahead whose names carry their unit
/// ([`wide_parts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wide {
    Copy,
    Push,
    Reduce,
}

/// A wide copy's, push's or reduction's name taken apart: its family, the
/// rest of the name (the blocks, dests, or kind, op and members) and its
/// unit (`vec2<u64>` where the name ends with its suffix); `None` for any
/// other name, the word copies (`vkshmem_wide_copy_words_`, always in
/// words) included. The one place that knows which names carry a unit.
fn wide_parts(name: &str) -> Option<(Wide, &str, WideUnit)> {
    if name.starts_with("vkshmem_wide_copy_words_") {
        return None;
    }
    let (family, rest) = [
        ("vkshmem_wide_copy_", Wide::Copy),
        ("vkshmem_wide_push_", Wide::Push),
        ("vkshmem_wide_reduce_", Wide::Reduce),
    ]
    .into_iter()
    .find_map(|(p, f)| name.strip_prefix(p).map(|r| (f, r)))?;
    let u64s = WideUnit::Vec2U64;
    Some(match rest.strip_suffix(u64s.suffix()) {
        Some(r) => (family, r, u64s),
        None => (family, rest, WideUnit::Vec4U32),
    })
}

/// Whether kernel `name` carries its unit (a twin in the other unit has
/// the same name but for [`WideUnit::suffix`]).
pub(crate) fn carries_unit(name: &str) -> bool {
    wide_parts(name).is_some()
}

/// What a family of host collectives is told when it declares its kernels:
/// the team (WORLD) and the context's library and wide kernels.
pub(crate) struct KernelShape<'a> {
    /// The team's members.
    pub size: u32,
    /// The context's device library.
    pub cfg: &'a LibraryConfig,
    /// The wide copies' and pushes' workgroup size.
    pub wg: u32,
    /// Every kernel the family may launch (`VKSHMEM_PREBUILD=all`), not
    /// only those a typical program calls first.
    pub all: bool,
}

/// The kernels one family of host collectives launches, as it declares
/// them in its own file: those of its wide paths, then its generic ones,
/// the likeliest first in each.
pub(crate) struct Declared {
    pub wide: Vec<LibraryKernel>,
    pub generic: Vec<LibraryKernel>,
}

/// The host collectives' declarations together, the likeliest first
/// (`crate::collective::first_kernels`): what the background builder
/// builds where no profile says better. Handed down by the façade at init,
/// as the builder sits below the collectives.
pub(crate) type FirstKernels = fn(&KernelShape) -> Vec<LibraryKernel>;

/// A library with every feature, for tests.
#[cfg(test)]
pub(crate) fn test_library() -> LibraryConfig {
    LibraryConfig {
        slots: 8,
        chunks: 1,
        max_binding_bytes: 1 << 27,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel the builder builds ahead parses back from its name, in
    /// both units, to itself.
    #[test]
    fn names_parse_back_to_their_kernels() {
        let f32k = collectives::kind("f32").unwrap();
        let kernels = [
            LibraryKernel::Host(HostCollective::Broadcast),
            LibraryKernel::Host(HostCollective::Reduce(f32k)),
            LibraryKernel::WideCopy { blocks: 3, wg: 64 },
            LibraryKernel::WideCopyWords { blocks: 8, wg: 64 },
            LibraryKernel::WidePush { dests: 5, wg: 64 },
            LibraryKernel::WideReduce {
                kind: f32k,
                op: ReduceOp::Max,
            },
        ];
        for k in kernels {
            for unit in [WideUnit::Vec4U32, WideUnit::Vec2U64] {
                let unit = if k.has_units() {
                    unit
                } else {
                    WideUnit::Vec4U32
                };
                let name = k.name(unit);
                assert_eq!(
                    LibraryKernel::parse(&name, &test_library(), 64),
                    Some((k, unit)),
                    "{name}"
                );
                assert!(k.source(unit).is_some(), "{name} has a source");
            }
        }
        let acc = LibraryKernel::WideAccumulate {
            kind: f32k,
            op: ReduceOp::Sum,
            accumulate: true,
        };
        assert_eq!(
            acc.name(WideUnit::Vec2U64),
            "vkshmem_wide_acc_f32_sum_acc_u64"
        );
        assert_eq!(
            LibraryKernel::parse(&acc.name(WideUnit::Vec4U32), &test_library(), 64),
            None
        );
    }
}
