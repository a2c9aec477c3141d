# The device forms on 2 PEs, the bench's llvmpipe workgroup of 64 (old, /tmp/d25old) against the
# smallest that fits the loop budget (new, /tmp/w25new: 16 here), interleaved rounds, at 64 B
# (--no-roofline: latency) and at 4 MiB with the roofline. Usage: run.sh OUT
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
for r in 1 2 3; do for v in old new; do
  b=/tmp/d25old; [ $v = new ] && b=/tmp/w25new
  timeout 600 $b/vkshmrun -n 2 $b/vkshmem-bench --scope work_groups,work_group --min-bytes 64 --max-bytes 64 --iters 40 --warmup 4 --check --no-roofline --collective $colls,barrier --type float --csv "$out/small-$v-2-r$r.csv" < /dev/null > /dev/null 2>&1 || echo FAIL small $v $r
  timeout 600 $b/vkshmrun -n 2 $b/vkshmem-bench --scope work_groups,work_group --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check --collective $colls --type float --csv "$out/$v-2-r$r.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $r
done; done
echo DONE
