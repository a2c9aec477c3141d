cd /work/main
export MESA_SHADER_CACHE_DIR=/tmp/m22d/mesa VKSHMEM_PIPELINE_CACHE=/tmp/m22d/vk RUST_LOG=vkshmem_host::kernels=debug VKSHMEM_NODE_SIZE=2
/usr/bin/time -f "mesa22 final cold mpirun n=3 nodes of 2 %e s user %U maxrss %M KB" timeout 480 mpirun --allow-run-as-root --oversubscribe -n 3 -x MESA_SHADER_CACHE_DIR -x VKSHMEM_PIPELINE_CACHE -x RUST_LOG -x VKSHMEM_NODE_SIZE target/debug/examples/collectives_check --device-quick > /tmp/m22d/out.log 2>&1
echo "rc=$?" >> /tmp/m22d/out.log
