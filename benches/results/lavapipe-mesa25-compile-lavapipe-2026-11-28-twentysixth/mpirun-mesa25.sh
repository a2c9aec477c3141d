cd /work/main
export VK_DRIVER_FILES=/tmp/mesa25/lvp25.json LD_LIBRARY_PATH=/tmp/mesa25/usr/lib/x86_64-linux-gnu MESA_SHADER_CACHE_DIR=/tmp/m25n/mesa VKSHMEM_PIPELINE_CACHE=/tmp/m25n/vk RUST_LOG=vkshmem_host::kernels=debug VKSHMEM_NODE_SIZE=2
/usr/bin/time -f "mesa25 cold mpirun n=3 nodes of 2 %e s user %U maxrss %M KB" timeout 480 mpirun --allow-run-as-root --oversubscribe -n 3 -x VK_DRIVER_FILES -x LD_LIBRARY_PATH -x MESA_SHADER_CACHE_DIR -x VKSHMEM_PIPELINE_CACHE -x RUST_LOG -x VKSHMEM_NODE_SIZE target/debug/examples/collectives_check --device-quick > /tmp/m25n/out.log 2>&1
echo "rc=$?" >> /tmp/m25n/out.log
