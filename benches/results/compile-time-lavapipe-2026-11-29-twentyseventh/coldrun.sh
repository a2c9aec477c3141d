#!/bin/sh
cd /work/main
rm -rf /tmp/cold && mkdir -p /tmp/cold/mesa /tmp/cold/vks
export MESA_SHADER_CACHE_DIR=/tmp/cold/mesa VKSHMEM_PIPELINE_CACHE=/tmp/cold/vks VKS_TMP_COMPILE_LOG=/tmp/cold/compile.log
start=$(date +%s)
cargo test --workspace --features vkshmem/mpi,vkshmem-bench/mpi --test launcher -- --test-threads=1 2>&1 | while IFS= read -r l; do echo "$(( $(date +%s) - start )) $l"; done > /tmp/cold/tests.log
echo done >> /tmp/cold/tests.log
