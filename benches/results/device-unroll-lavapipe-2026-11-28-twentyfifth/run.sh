# The device forms at 4 MiB on 2 PEs, old (one vec4 per loop step on llvmpipe) against new (four),
# interleaved rounds. Usage: run.sh OUT (binaries in /tmp/d25old and /tmp/d25new).
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
for r in 1 2 3; do for v in old new; do
  b=/tmp/d25$v
  timeout 600 $b/vkshmrun -n 2 $b/vkshmem-bench --scope work_groups,work_group --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check --collective $colls --type float --csv "$out/$v-2-r$r.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $r
done; done
echo DONE
