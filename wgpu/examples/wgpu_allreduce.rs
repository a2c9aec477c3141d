//! A wgpu program: a wgpu compute pass writes each PE's "gradients" straight
//! into a symmetric buffer, and vkshmem sums them over every PE on the same
//! Vulkan device, in order with the pass, checked against a host reference.
//!
//! ```text
//! cargo build --workspace --examples
//! target/debug/vkshmrun -n 2 target/debug/examples/wgpu_allreduce
//! ```

use vkshmem_wgpu::{Collective, Shmem, Team};

const N: usize = 10_000;

/// The pattern PE `pe` writes at `i` (small integers: exact sums).
fn grad(pe: u32, i: usize) -> f32 {
    ((i * 31 + pe as usize * 7) % 257) as f32 - 128.0
}

fn main() -> anyhow::Result<()> {
    let adapter = vkshmem_wgpu::vulkan_adapter()?;
    let shmem = Shmem::open(&adapter, &wgpu::DeviceDescriptor::default())?;
    let (me, npes) = (shmem.my_pe(), shmem.n_pes());
    let grads = shmem.calloc::<f32>(N)?;
    let sum = shmem.calloc::<f32>(N)?;

    let device = shmem.device();
    let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("grads"),
        source: wgpu::ShaderSource::Wgsl(
            format!(
                "@group(0) @binding(0) var<storage, read_write> g: array<f32>;
                 @compute @workgroup_size(64)
                 fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
                     let i = id.x;
                     if i < {N}u {{ g[i] = f32((i * 31u + {me}u * 7u) % 257u) - 128.0; }}
                 }}"
            )
            .into(),
        ),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("grads"),
        layout: None,
        module: &shader,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: grads.binding(),
        }],
    });
    let mut enc = device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(N.div_ceil(64) as u32, 1, 1);
    }
    shmem.submit([enc.finish()]);
    // Runs after the pass, on the device: no host wait in between.
    let (s, g) = (shmem.slice(&sum)?, shmem.slice(&grads)?);
    shmem
        .post(Team::WORLD, Collective::sum_reduce(&s, &g, N))?
        .wait()?;

    let got = sum.to_vec()?;
    let bad = (0..N).find(|&i| got[i] != (0..npes).map(|pe| grad(pe, i)).sum::<f32>());
    if let Some(i) = bad {
        anyhow::bail!("PE {me}: sum[{i}] = {}", got[i]);
    }
    drop(bind);
    grads.free()?;
    sum.free()?;
    shmem.finalize()?;
    if me == 0 {
        println!("wgpu_allreduce: ok");
    }
    Ok(())
}
