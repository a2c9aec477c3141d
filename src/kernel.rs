//! Building self-contained compute kernels from WGSL for host-initiated dispatch.
//!
//! Kernels that call the device library (`shmem_*` from WGSL) are built with
//! [`Context::device_kernel`](crate::Context::device_kernel) instead.

use vkshmem_host::{Context, Error, Kernel};

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
///
/// # Errors
/// [`Error::Kernel`] when the WGSL does not compile (with its line and column),
/// [`Error::InvalidArgument`] when `entry` is not one of its compute entry points,
/// when it uses a binding outside group 0 or at `bindings` or above, or
/// immediates while `push_bytes` is 0, or for binding or push-constant counts
/// the device does not allow (see [`Context::kernel_from_spirv`]); Vulkan errors.
pub fn compile_kernel(
    ctx: &Context,
    source: &str,
    entry: &str,
    name: &str,
    bindings: u32,
    push_bytes: u32,
) -> Result<Kernel, Error> {
    let words = vkshmem_device::compile_wgsl(source, name)?;
    ctx.kernel_from_spirv(&words, entry, bindings, push_bytes)
}
