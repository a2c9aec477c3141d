# VKSHMEM_SYNC_YIELDS=0 (waits go straight to the futex) against the default (200 yields first),
# interleaved: float host rows at 4 MiB on 4 PEs, the bar included (its resting PEs wait too).
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"; b=${BIN:-/tmp/b24f16}
common="--scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check"
for r in 1 2 3 4; do for v in old new; do
  if [ $v = new ]; then y=0; else y=200; fi
  VKSHMEM_SYNC_YIELDS=$y timeout 300 $b/vkshmrun -n 4 $b/vkshmem-bench $common --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --type float --csv "$out/$v-4-r$r.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $r
done; done
echo DONE
