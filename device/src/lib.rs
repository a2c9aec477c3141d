//! vkshmem's device side: the WGSL device library and the kernel pipeline.
//!
//! - [`compile_wgsl`]: a self-contained WGSL kernel → naga (parse, validate) →
//!   SPIR-V (Vulkan 1.3 / SPIR-V 1.5).
//! - [`link_kernel`]: a user kernel that calls `shmem_*` functions, linked with the
//!   device library generated for one PE of one job ([`library`]), compiled, then
//!   rewritten by the SPIR-V [`pass`] that gives the library its memory semantics.
//! - [`layout`]: the control region shared with the host.
//!
//! Nothing here touches Vulkan: the host crate turns the words into pipelines.
//! Errors point at the line and column of the WGSL source they came from.
//!
//! ```
//! let words = vkshmem_device::compile_wgsl(
//!     "@group(0) @binding(0) var<storage, read_write> a: array<u32>;
//!      @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
//!          a[g.x] = g.x;
//!      }",
//!     "example",
//! ).unwrap();
//! assert_eq!(words[0], 0x0723_0203); // the SPIR-V magic number
//! ```

#![warn(missing_docs)]

mod amo;
pub mod collectives;
pub mod layout;
pub mod library;
mod link;
pub mod pass;
mod proxy;
mod prune;
pub mod queue;
pub mod rma;

pub use library::{HeapBinding, JobView, LibraryConfig, PeSet};
pub use link::{link_kernel, LinkedKernel, UserBinding};

use naga::back::spv;
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};

/// Why a kernel did not compile.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The WGSL does not parse.
    #[error("{name}:{line}:{column}: {message}\n{rendered}")]
    Parse {
        /// The kernel's name as given to [`compile_wgsl`].
        name: String,
        /// 1-based line of the first error, 0 when unknown.
        line: u32,
        /// 1-based column, 0 when unknown.
        column: u32,
        /// The parser's message.
        message: String,
        /// The full diagnostic with source excerpt.
        rendered: String,
    },
    /// The module parses but is not valid.
    #[error("{name}:{line}:{column}: invalid kernel: {message}")]
    Validate {
        /// The kernel's name.
        name: String,
        /// 1-based line, 0 when unknown.
        line: u32,
        /// 1-based column, 0 when unknown.
        column: u32,
        /// The validator's message.
        message: String,
    },
    /// The kernel cannot be linked with the device library (a reserved name, a
    /// binding in the library's set, a missing entry point …).
    #[error("{name}:{line}:{column}: {message}")]
    Link {
        /// The kernel's name.
        name: String,
        /// 1-based line in the user's source, 0 when it is not about one line.
        line: u32,
        /// 1-based column, 0 when unknown.
        column: u32,
        /// What is wrong.
        message: String,
    },
    /// SPIR-V generation or post-processing failed.
    #[error("{name}: SPIR-V generation failed: {message}")]
    Backend {
        /// The kernel's name.
        name: String,
        /// The backend's message.
        message: String,
    },
}

impl CompileError {
    /// The 1-based (line, column) of the error in the WGSL source, when known.
    pub fn location(&self) -> Option<(u32, u32)> {
        match self {
            CompileError::Parse { line, column, .. }
            | CompileError::Validate { line, column, .. }
            | CompileError::Link { line, column, .. }
                if *line > 0 =>
            {
                Some((*line, *column))
            }
            _ => None,
        }
    }
}

/// 1-based (line, column) of a naga source location, (0, 0) when there is none.
fn line_column(loc: Option<naga::SourceLocation>) -> (u32, u32) {
    loc.map(|l| (l.line_number, l.line_position))
        .unwrap_or((0, 0))
}

/// Compiles WGSL compute source to SPIR-V words. `name` labels error messages.
pub fn compile_wgsl(source: &str, name: &str) -> Result<Vec<u32>, CompileError> {
    let (module, info) = parse_validate(source, name)?;
    write_spirv(&module, &info, name)
}

/// Parses and validates `source`.
pub(crate) fn parse_validate(
    source: &str,
    name: &str,
) -> Result<(naga::Module, ModuleInfo), CompileError> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| {
        let (line, column) = line_column(e.location(source));
        CompileError::Parse {
            name: name.to_string(),
            line,
            column,
            message: e.message().to_string(),
            rendered: e.emit_to_string_with_path(source, name),
        }
    })?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .map_err(|e| {
            let (line, column) = line_column(e.location(source));
            CompileError::Validate {
                name: name.to_string(),
                line,
                column,
                message: e.emit_to_string(source),
            }
        })?;
    Ok((module, info))
}

/// Writes SPIR-V 1.5 with debug names (the pass finds library functions by name).
pub(crate) fn write_spirv(
    module: &naga::Module,
    info: &ModuleInfo,
    name: &str,
) -> Result<Vec<u32>, CompileError> {
    let options = spv::Options {
        lang_version: (1, 5),
        flags: spv::WriterFlags::DEBUG,
        ..spv::Options::default()
    };
    spv::write_vec(module, info, &options, None).map_err(|e| CompileError::Backend {
        name: name.to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_wgsl_points_at_its_line() {
        let src = "@compute @workgroup_size(1)\nfn main() {\n    let x: u32 = 1u;\n    let y = x + undefined_name;\n}\n";
        let e = compile_wgsl(src, "bad").unwrap_err();
        assert_eq!(e.location().map(|l| l.0), Some(4), "{e}");
        assert!(e.to_string().starts_with("bad:4:"), "{e}");
    }

    #[test]
    fn type_error_points_at_its_line() {
        let src = "@group(0) @binding(0) var<storage, read_write> a: array<u32>;\n@compute @workgroup_size(1)\nfn main() {\n    a[0] = 1.5;\n}\n";
        let e = compile_wgsl(src, "bad").unwrap_err();
        assert_eq!(e.location().map(|l| l.0), Some(4), "{e}");
    }

    #[test]
    fn immediates_compile() {
        let src = "struct P { a: u32, b: u32 }\nvar<immediate> p: P;\n@group(0) @binding(0) var<storage, read_write> a: array<u32>;\n@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: vec3<u32>) { if g.x < p.b { a[g.x] = p.a; } }\n";
        let words = compile_wgsl(src, "imm").unwrap();
        assert_eq!(words[0], 0x0723_0203);
    }
}
