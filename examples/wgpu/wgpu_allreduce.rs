//! A wgpu program: a wgpu compute pass writes each PE's "gradients" straight
//! into a symmetric buffer, and vkshmem sums them over every PE on the same
//! Vulkan device, checked against a host reference.
//!
//! ```text
//! cargo build --workspace --examples
//! target/debug/vkshmrun -n 2 target/debug/examples/wgpu_allreduce
//! ```
//!
//! How: wgpu opens the device through wgpu-hal with `VK_KHR_external_memory_fd`
//! added to its extensions (`open_with_callback`), the raw Vulkan handles go
//! to `vkshmem::init_on_device`, and the symmetric buffer's `vk::Buffer`
//! (`SymBuffer::vk_buffer`) becomes a wgpu buffer that wgpu does not own
//! (`Buffer::from_raw_externally_owned`). Both submit to the one queue, in
//! program order on this thread.

use std::num::NonZeroU64;

use vkshmem::ash::{self, vk::Handle as _};
use vkshmem::{Collective, Team};
use wgpu::hal::api::Vulkan;

const N: usize = 10_000;

/// The pattern PE `pe` writes at `i` (small integers: exact sums).
fn grad(pe: u32, i: usize) -> f32 {
    ((i * 31 + pe as usize * 7) % 257) as f32 - 128.0
}

/// wgpu's futures on native backends are ready at once.
fn ready<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

fn main() -> anyhow::Result<()> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = ready(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))?;
    // The device, opened through wgpu-hal with the extension vkshmem needs.
    let open = {
        // SAFETY: the adapter is a Vulkan one (the only backend asked for).
        let hal = unsafe { adapter.as_hal::<Vulkan>() }
            .ok_or_else(|| anyhow::anyhow!("not a Vulkan adapter"))?;
        let add_fd: Box<wgpu::hal::vulkan::CreateDeviceCallback> = Box::new(|args| {
            args.extensions.push(ash::khr::external_memory_fd::NAME);
        });
        // SAFETY: the callback only adds an extension (the adapter reports it
        // or device creation fails with an error).
        unsafe {
            hal.open_with_callback(
                wgpu::Features::empty(),
                &wgpu::Limits::default(),
                &wgpu::MemoryHints::Performance,
                Some(add_fd),
            )?
        }
    };
    // SAFETY: `open` came from this adapter's hal adapter.
    let (device, queue) =
        unsafe { adapter.create_device_from_hal(open, &wgpu::DeviceDescriptor::default())? };
    let user = {
        // SAFETY: a Vulkan device (above).
        let hal = unsafe { device.as_hal::<Vulkan>() }
            .ok_or_else(|| anyhow::anyhow!("not a Vulkan device"))?;
        vkshmem::UserDevice {
            instance: ash::vk::Instance::from_raw(
                hal.shared_instance().raw_instance().handle().as_raw(),
            ),
            physical_device: hal.raw_physical_device(),
            device: hal.raw_device().handle(),
            queue_family: hal.queue_family_index(),
            queue_index: hal.queue_index(),
            // wgpu enabled no optional shader feature that vkshmem counts on:
            // the reduction below is over f32.
            enabled: vkshmem::DeviceCaps::default(),
            external_memory_host: false,
        }
    };
    // SAFETY: wgpu's handles outlive the context (finalized before `device`
    // drops, below).
    let ctx = unsafe { vkshmem::init_on_device(user)? };
    let (me, npes) = (ctx.my_pe(), ctx.n_pes());
    let grads = ctx.calloc::<f32>(N)?;
    let sum = ctx.calloc::<f32>(N)?;
    let raw = grads.vk_buffer(me)?;
    {
        // The symmetric buffer as a wgpu buffer that wgpu does not own.
        // SAFETY: vkshmem's buffer outlives this wgpu buffer (dropped at the
        // end of this block, before the context); wgpu never maps it.
        let hal_buffer = unsafe {
            wgpu::hal::vulkan::Buffer::from_raw_externally_owned(raw.buffer, Box::new(|| {}))
        };
        // SAFETY: the buffer is of this device, at least this large, with
        // storage usage (every heap block's buffer has it).
        let wbuf = unsafe {
            device.create_buffer_from_hal::<Vulkan>(
                hal_buffer,
                &wgpu::BufferDescriptor {
                    label: Some("symmetric grads"),
                    size: raw.offset + raw.bytes,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                },
            )
        };
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
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &wbuf,
                    offset: raw.offset,
                    size: NonZeroU64::new(raw.bytes),
                }),
            }],
        });
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(N.div_ceil(64) as u32, 1, 1);
        }
        // wgpu's submission goes to the queue first; vkshmem's, next, starts
        // with a barrier after every earlier command of the queue.
        queue.submit([enc.finish()]);
        ctx.post(
            Team::WORLD,
            Collective::sum_reduce(&sum.as_slice(), &grads.as_slice(), N),
        )?
        .wait()?;
        device.poll(wgpu::PollType::wait_indefinitely())?;
    }
    let got = sum.to_vec()?;
    let bad = (0..N).find(|&i| got[i] != (0..npes).map(|pe| grad(pe, i)).sum::<f32>());
    if let Some(i) = bad {
        anyhow::bail!("PE {me}: sum[{i}] = {}", got[i]);
    }
    grads.free()?;
    sum.free()?;
    ctx.finalize()?;
    if me == 0 {
        println!("wgpu_allreduce: ok");
    }
    drop(queue);
    drop(device);
    Ok(())
}
