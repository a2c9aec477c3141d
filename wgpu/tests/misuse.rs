//! Bad use of vkshmem-wgpu gets a typed error, in a one-PE job (no
//! launcher): an adapter that is not Vulkan, features the adapter lacks, a
//! symmetric buffer of another context, an empty buffer.

use std::future::Future as _;

use vkshmem_wgpu::{Collective, Error, Shmem, Team};

/// wgpu's noop adapter: a backend that is not Vulkan.
fn noop_adapter() -> wgpu::Adapter {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::NOOP,
        backend_options: wgpu::BackendOptions {
            noop: wgpu::NoopBackendOptions {
                enable: true,
                ..Default::default()
            },
            ..Default::default()
        },
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let mut f = std::pin::pin!(instance.request_adapter(&Default::default()));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(a) = f.as_mut().poll(&mut cx) {
            return a.expect("the noop adapter");
        }
    }
}

#[test]
fn misuse_gets_typed_errors() {
    let e = Shmem::open(&noop_adapter(), &Default::default()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotVulkan {
                backend: wgpu::Backend::Noop,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("not Vulkan"), "{e}");

    let adapter = vkshmem_wgpu::vulkan_adapter().expect("a Vulkan adapter (lavapipe)");
    let lacking = wgpu::Features::all_native_mask() - adapter.features();
    let first_lacking = lacking.iter().next().expect("some native feature missing");
    let e = Shmem::open(
        &adapter,
        &wgpu::DeviceDescriptor {
            required_features: first_lacking,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");

    let a = Shmem::open(&adapter, &Default::default()).expect("open");
    let b = Shmem::open(&adapter, &Default::default()).expect("a second context");
    let x = a.calloc::<f32>(64).unwrap();
    let y = b.calloc::<f32>(64).unwrap();
    let e = b.slice(&x).unwrap_err();
    assert!(matches!(e, Error::ForeignBuffer { .. }), "{e}");
    // Its own buffers work beside: a one-PE sum is the source.
    y.write(&(0..64).map(|i| i as f32).collect::<Vec<_>>())
        .unwrap();
    let z = b.calloc::<f32>(64).unwrap();
    let (zs, ys) = (b.slice(&z).unwrap(), b.slice(&y).unwrap());
    b.post(Team::WORLD, Collective::sum_reduce(&zs, &ys, 64))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(z.to_vec().unwrap(), y.to_vec().unwrap());
    let e = a.calloc::<u32>(0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    for (s, bufs) in [(a, vec![x]), (b, vec![y, z])] {
        for buf in bufs {
            buf.free().unwrap();
        }
        s.finalize().unwrap();
    }
}
