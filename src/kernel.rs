//! Building compute kernels from WGSL for host-initiated dispatch.

use vkshmem_host::{Context, Kernel};

/// Why [`compile_kernel`] failed.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The WGSL did not compile; the error names the line and column.
    #[error(transparent)]
    Compile(#[from] vkshmem_device::CompileError),
    /// The pipeline could not be built.
    #[error(transparent)]
    Host(#[from] vkshmem_host::Error),
}

/// Compiles WGSL `source` (entry point `entry`) into a kernel on `ctx`'s device,
/// with `bindings` storage buffers in group 0 (bindings 0..n) and `push_bytes` of
/// immediates (`var<immediate>`). `name` labels compile errors.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ctx = vkshmem::init()?;
/// let k = vkshmem::compile_kernel(
///     &ctx,
///     "@group(0) @binding(0) var<storage, read_write> a: array<u32>;
///      @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
///          if g.x < arrayLength(&a) { a[g.x] = g.x; }
///      }",
///     "main", "iota", 1, 0)?;
/// let buf = ctx.malloc::<u32>(1000)?;
/// ctx.dispatch(&k, [16, 1, 1], &[buf.window(ctx.my_pe())], &[])?;
/// # Ok(()) }
/// ```
pub fn compile_kernel(
    ctx: &Context,
    source: &str,
    entry: &str,
    name: &str,
    bindings: u32,
    push_bytes: u32,
) -> Result<Kernel, KernelError> {
    let words = vkshmem_device::compile_wgsl(source, name)?;
    Ok(ctx.kernel_from_spirv(&words, entry, bindings, push_bytes)?)
}
