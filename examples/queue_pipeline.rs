//! A program with its own Vulkan device runs vkshmem collectives in its own
//! command buffer: compute → allreduce → compute → fcollect → compute, one
//! submission, no host wait in between, checked against a host reference.
//!
//! ```text
//! cargo build --release --examples
//! target/release/vkshmrun -n 4 target/release/examples/queue_pipeline [N]
//! ```
//!
//! The program creates the instance and device with ash (as any Vulkan
//! program does, enabling `VK_KHR_external_memory_fd`), hands them to
//! `vkshmem::init_on_device`, binds symmetric buffers in its own descriptor
//! sets (`SymBuffer::vk_buffer`) and records the collectives with
//! `Context::record` between its own dispatches.

use std::ffi::CStr;

use vkshmem::ash::{self, vk};
use vkshmem::{Collective, Context, Team};

/// The program's kernels: stage 0 writes x, stage 1 reads the sum s and
/// writes z, stage 2 reads the fcollect result w and writes out.
const KERNEL: &str = "
struct P { stage: u32, n: u32, me: u32, npes: u32 }
var<immediate> p: P;
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> s: array<f32>;
@group(0) @binding(2) var<storage, read_write> z: array<f32>;
@group(0) @binding(3) var<storage, read_write> w: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if p.stage == 0u && i < p.n {
        x[i] = f32((i * 7u + p.me * 13u) % 101u);
    } else if p.stage == 1u && i < p.n {
        z[i] = s[i] * 0.5 + f32(p.me);
    } else if p.stage == 2u && i < p.n * p.npes {
        out[i] = w[i] + 1.0;
    }
}
";

/// The host reference of `out` on every PE.
fn reference(n: usize, npes: usize) -> Vec<f32> {
    let x = |pe: usize, i: usize| ((i * 7 + pe * 13) % 101) as f32;
    let s: Vec<f32> = (0..n).map(|i| (0..npes).map(|pe| x(pe, i)).sum()).collect();
    (0..npes)
        .flat_map(|pe| s.iter().map(move |v| v * 0.5 + pe as f32 + 1.0))
        .collect()
}

/// The program's own Vulkan objects.
struct App {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    family: u32,
}

impl App {
    /// An instance and a device with a compute queue and what vkshmem needs.
    fn new() -> anyhow::Result<(App, vkshmem::UserDevice)> {
        // SAFETY: loading the system's Vulkan loader.
        let entry = unsafe { ash::Entry::load()? };
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        // SAFETY: valid create info.
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )?
        };
        // SAFETY: valid instance.
        let physicals = unsafe { instance.enumerate_physical_devices()? };
        let fd_ext = ash::khr::external_memory_fd::NAME;
        let pick = physicals.iter().copied().find_map(|pd| {
            // SAFETY: pd is of this instance.
            let exts = unsafe { instance.enumerate_device_extension_properties(pd) }.ok()?;
            // SAFETY: extension names are NUL-terminated.
            let has = |name: &CStr| {
                exts.iter()
                    .any(|e| unsafe { CStr::from_ptr(e.extension_name.as_ptr()) } == name)
            };
            if !has(fd_ext) {
                return None;
            }
            // SAFETY: pd is of this instance.
            let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
            let family = families
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))?;
            Some((pd, family as u32))
        });
        let Some((physical, family)) = pick else {
            anyhow::bail!("no Vulkan device with compute and VK_KHR_external_memory_fd");
        };
        // Enable what vkshmem can use and the device has.
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f12);
        // SAFETY: valid physical device.
        unsafe { instance.get_physical_device_features2(physical, &mut f2) };
        let base = f2.features;
        let caps = vkshmem::DeviceCaps {
            int64: base.shader_int64 == vk::TRUE,
            float64: base.shader_float64 == vk::TRUE,
            int16: base.shader_int16 == vk::TRUE,
            timeline_semaphores: f12.timeline_semaphore == vk::TRUE,
            ..Default::default()
        };
        let mut want12 = vk::PhysicalDeviceVulkan12Features::default()
            .timeline_semaphore(caps.timeline_semaphores);
        let want = vk::PhysicalDeviceFeatures::default()
            .shader_int64(caps.int64)
            .shader_float64(caps.float64)
            .shader_int16(caps.int16);
        let prio = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&prio)];
        let exts = [fd_ext.as_ptr()];
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&exts)
            .enabled_features(&want)
            .push_next(&mut want12);
        // SAFETY: every feature enabled is supported (queried above).
        let device = unsafe { instance.create_device(physical, &info, None)? };
        let user = vkshmem::UserDevice {
            instance: instance.handle(),
            physical_device: physical,
            device: device.handle(),
            queue_family: family,
            queue_index: 0,
            enabled: caps,
            external_memory_host: false,
            driver_threads: None,
        };
        Ok((
            App {
                _entry: entry,
                instance,
                device,
                family,
            },
            user,
        ))
    }
}

impl Drop for App {
    fn drop(&mut self) {
        // SAFETY: vkshmem's context (which used the device) is gone; the
        // program's own objects were destroyed by `run`.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

fn run(app: &App, ctx: &Context, n: usize) -> anyhow::Result<()> {
    let (me, npes) = (ctx.my_pe(), ctx.n_pes());
    let d = &app.device;
    let bufs = [
        ctx.calloc::<f32>(n)?,                 // x
        ctx.calloc::<f32>(n)?,                 // s = sum of x
        ctx.calloc::<f32>(n)?,                 // z
        ctx.calloc::<f32>(n * npes as usize)?, // w = fcollect of z
        ctx.calloc::<f32>(n * npes as usize)?, // out
    ];
    // The program's pipeline over the symmetric buffers.
    let spirv = vkshmem::compile_wgsl(KERNEL, "queue_pipeline")?;
    let binds: Vec<_> = (0..5)
        .map(|i| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(i)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let push = [vk::PushConstantRange::default()
        .stage_flags(vk::ShaderStageFlags::COMPUTE)
        .size(16)];
    // SAFETY (this block): plain object creation and recording on the
    // program's device, each object used only while alive, the command
    // buffer recorded on this thread only and submitted once, to the
    // context's queue under its lock.
    unsafe {
        let set_layout = d.create_descriptor_set_layout(
            &vk::DescriptorSetLayoutCreateInfo::default().bindings(&binds),
            None,
        )?;
        let layouts = [set_layout];
        let layout = d.create_pipeline_layout(
            &vk::PipelineLayoutCreateInfo::default()
                .set_layouts(&layouts)
                .push_constant_ranges(&push),
            None,
        )?;
        let module =
            d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&spirv), None)?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let pipeline = d
            .create_compute_pipelines(
                vk::PipelineCache::null(),
                &[vk::ComputePipelineCreateInfo::default()
                    .stage(stage)
                    .layout(layout)],
                None,
            )
            .map_err(|(_, e)| e)?[0];
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(5)];
        let pool = d.create_descriptor_pool(
            &vk::DescriptorPoolCreateInfo::default()
                .max_sets(1)
                .pool_sizes(&sizes),
            None,
        )?;
        let set = d.allocate_descriptor_sets(
            &vk::DescriptorSetAllocateInfo::default()
                .descriptor_pool(pool)
                .set_layouts(&layouts),
        )?[0];
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = bufs
            .iter()
            .map(|b| {
                let raw = b.vk_buffer(me)?;
                Ok([vk::DescriptorBufferInfo::default()
                    .buffer(raw.buffer)
                    .offset(raw.offset)
                    .range(raw.bytes)])
            })
            .collect::<vkshmem::Result<_>>()?;
        let writes: Vec<_> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(i as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        d.update_descriptor_sets(&writes, &[]);

        let cmd_pool = d.create_command_pool(
            &vk::CommandPoolCreateInfo::default().queue_family_index(app.family),
            None,
        )?;
        let cmd = d.allocate_command_buffers(
            &vk::CommandBufferAllocateInfo::default()
                .command_pool(cmd_pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1),
        )?[0];
        d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())?;
        let total = n * npes as usize;
        let compute = |stage: u32| {
            let p: [u32; 4] = [stage, n as u32, me, npes];
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
            d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, layout, 0, &[set], &[]);
            d.cmd_push_constants(
                cmd,
                layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                bytemuck::cast_slice(&p),
            );
            d.cmd_dispatch(cmd, total.div_ceil(64) as u32, 1, 1);
        };
        let [x, s, z, w, out] = &bufs;
        compute(0);
        // vkshmem's barriers order these with the program's dispatches.
        let q1 = ctx.record(
            cmd,
            Team::WORLD,
            Collective::sum_reduce(&s.as_slice(), &x.as_slice(), n),
        )?;
        compute(1);
        let q2 = ctx.record(
            cmd,
            Team::WORLD,
            Collective::fcollect(&w.as_slice(), &z.as_slice(), n),
        )?;
        compute(2);
        d.end_command_buffer(cmd)?;
        let fence = d.create_fence(&vk::FenceCreateInfo::default(), None)?;
        let cmds = [cmd];
        ctx.with_queue(|q| {
            d.queue_submit(
                q,
                &[vk::SubmitInfo::default().command_buffers(&cmds)],
                fence,
            )
        })?;
        d.wait_for_fences(&[fence], true, u64::MAX)?;
        // The fence says the queue is done; the handles say how it went.
        q1.wait()?;
        q2.wait()?;
        let got = out.to_vec()?;
        let want = reference(n, npes as usize);
        let bad = got.iter().zip(&want).position(|(a, b)| a != b);
        d.destroy_fence(fence, None);
        d.destroy_command_pool(cmd_pool, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_pipeline(pipeline, None);
        d.destroy_shader_module(module, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        if let Some(i) = bad {
            anyhow::bail!("PE {me}: out[{i}] = {} expected {}", got[i], want[i]);
        }
    }
    for b in bufs {
        b.free()?;
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let n: usize = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 1000,
    };
    let (app, user) = App::new()?;
    // SAFETY: the handles are the program's, valid until `app` drops, which
    // is after the context (finalized below).
    let ctx = unsafe { vkshmem::init_on_device(user)? };
    run(&app, &ctx, n)?;
    let me = ctx.my_pe();
    ctx.finalize()?;
    if me == 0 {
        println!("queue_pipeline: ok");
    }
    Ok(())
}
