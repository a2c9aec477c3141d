//! Raw SPIR-V kernels and their dispatch on heap windows.

use super::{lock, HeapWindow, Runtime};
use crate::error::{Error, Result};
use crate::vk::kernel::Kernel;
use crate::vk::submit::Window;

/// The checks [`Context::kernel_from_spirv`](crate::Context::kernel_from_spirv) makes before handing a module to the
/// driver (pure).
fn check_spirv(spirv: &[u32], entry: &str, bindings: u32, push_bytes: u32) -> Result<()> {
    use rspirv::dr::Operand;
    use rspirv::spirv::{Decoration, ExecutionModel, Op, StorageClass};
    let bad = |why: String| Err(Error::InvalidArgument(format!("SPIR-V module: {why}")));
    if spirv.len() < 5 || spirv[0] != rspirv::spirv::MAGIC_NUMBER {
        return bad(format!(
            "no SPIR-V header ({} words, first {:#x?})",
            spirv.len(),
            spirv.first()
        ));
    }
    let m = match rspirv::dr::load_words(spirv) {
        Ok(m) => m,
        Err(e) => return bad(format!("malformed: {e}")),
    };
    let computes: Vec<&str> = m
        .entry_points
        .iter()
        .filter_map(|e| match e.operands.as_slice() {
            [Operand::ExecutionModel(ExecutionModel::GLCompute), _, Operand::LiteralString(n), ..] => {
                Some(n.as_str())
            }
            _ => None,
        })
        .collect();
    if !computes.contains(&entry) {
        return bad(format!(
            "no compute entry point {entry:?} (it has {computes:?})"
        ));
    }
    for d in m
        .annotations
        .iter()
        .filter(|i| i.class.opcode == Op::Decorate)
    {
        match d.operands.as_slice() {
            [Operand::IdRef(id), Operand::Decoration(Decoration::DescriptorSet), Operand::LiteralBit32(set)]
                if *set != 0 =>
            {
                return bad(format!(
                    "resource %{id} is in descriptor set {set}; kernels bind set 0 only"
                ));
            }
            [Operand::IdRef(id), Operand::Decoration(Decoration::Binding), Operand::LiteralBit32(b)]
                if *b >= bindings =>
            {
                return bad(format!(
                    "resource %{id} is at binding {b}; the kernel was given {bindings} bindings"
                ));
            }
            _ => {}
        }
    }
    let pushes = m.types_global_values.iter().any(|i| {
        i.class.opcode == Op::Variable
            && i.operands.first() == Some(&Operand::StorageClass(StorageClass::PushConstant))
    });
    if pushes && push_bytes == 0 {
        return bad("it declares push constants; the kernel was given 0 bytes of them".into());
    }
    Ok(())
}

impl Runtime {
    pub(crate) fn kernel_from_spirv(
        &self,
        spirv: &[u32],
        entry: &str,
        bindings: u32,
        push_bytes: u32,
    ) -> Result<Kernel> {
        check_spirv(spirv, entry, bindings, push_bytes)?;
        Kernel::new(&self.gpu, spirv, entry, &[bindings], push_bytes)
    }

    pub(crate) fn dispatch(
        &self,
        kernel: &Kernel,
        groups: [u32; 3],
        windows: &[HeapWindow],
        push: &[u8],
    ) -> Result<()> {
        let bound = self.bind_windows(windows)?;
        self.check_groups(groups)?;
        lock(&self.submit)
            .dispatch(kernel, groups, &[&bound], push, false, &mut |_| None)
            .map(|_| ())
    }

    /// Checks heap windows for binding and resolves them to buffers.
    pub(crate) fn bind_windows(&self, windows: &[HeapWindow]) -> Result<Vec<Window>> {
        let info = &self.gpu.info;
        let mut bound = Vec::with_capacity(windows.len());
        for w in windows {
            let block = self.check_range(w.pe, w.offset, w.bytes)?;
            if w.offset % info.min_storage_offset_alignment != 0 {
                return Err(Error::InvalidArgument(format!(
                    "window offset {} is not a multiple of the device's storage offset alignment {}",
                    w.offset, info.min_storage_offset_alignment
                )));
            }
            if w.bytes == 0 || w.bytes > info.max_storage_buffer_range {
                return Err(Error::InvalidArgument(format!(
                    "window of {} bytes: must be 1 to {} bytes (maxStorageBufferRange)",
                    w.bytes, info.max_storage_buffer_range
                )));
            }
            bound.push(Window {
                buffer: block.buffer,
                offset: w.offset,
                range: w.bytes,
            });
        }
        Ok(bound)
    }

    pub(crate) fn check_groups(&self, groups: [u32; 3]) -> Result<()> {
        let max = self.gpu.info.max_workgroups;
        if groups.contains(&0) || groups.iter().zip(max).any(|(&g, m)| g > m) {
            return Err(Error::InvalidArgument(format!(
                "workgroup count {groups:?}: each must be at least 1 and at most {max:?} (maxComputeWorkGroupCount)"
            )));
        }
        Ok(())
    }

    pub(crate) fn empty_submit(&self) -> Result<()> {
        lock(&self.submit).empty()
    }
}

#[cfg(test)]
mod tests {
    use super::check_spirv;
    use crate::error::Error;

    fn wgsl(src: &str) -> Vec<u32> {
        vkshmem_device::compile_wgsl(src, "t.wgsl").expect("valid WGSL")
    }

    const ONE_BINDING: &str = "@group(0) @binding(0) var<storage, read_write> a: array<u32>;
        @compute @workgroup_size(1) fn main() { a[0] = 1u; }";

    #[test]
    fn spirv_checks_reject_what_the_driver_cannot_take() {
        let words = wgsl(ONE_BINDING);
        assert!(check_spirv(&words, "main", 1, 0).is_ok());
        let invalid = |r: crate::Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
        assert!(invalid(check_spirv(&[], "main", 1, 0)));
        assert!(invalid(check_spirv(&[0xdead_beef; 16], "main", 1, 0)));
        assert!(invalid(check_spirv(
            &words[..words.len() / 2],
            "main",
            1,
            0
        )));
        assert!(invalid(check_spirv(&words, "other", 1, 0)));
        assert!(invalid(check_spirv(&words, "main", 0, 0)));
        let set1 = wgsl(&ONE_BINDING.replace("@group(0)", "@group(1)"));
        assert!(invalid(check_spirv(&set1, "main", 1, 0)));
        let push = wgsl(
            "struct P { x: u32 } var<immediate> p: P;
             @group(0) @binding(0) var<storage, read_write> a: array<u32>;
             @compute @workgroup_size(1) fn main() { a[0] = p.x; }",
        );
        assert!(invalid(check_spirv(&push, "main", 1, 0)));
        assert!(check_spirv(&push, "main", 1, 4).is_ok());
    }
}
