#!/bin/sh
# usage: probe.sh BIN NODE_SIZE files...
bin=$1; ns=$2; shift 2
export MESA_SHADER_CACHE_DISABLE=true VKSHMEM_PIPELINE_CACHE=0 VKSHMEM_PREBUILD=0 VKSHMEM_NODE_SIZE=$ns
timeout 900 mpirun --allow-run-as-root --oversubscribe -n 2 -x MESA_SHADER_CACHE_DISABLE -x VKSHMEM_PIPELINE_CACHE -x VKSHMEM_PREBUILD -x VKSHMEM_NODE_SIZE $bin "$@" 2>&1 | grep "probe pe=0"
