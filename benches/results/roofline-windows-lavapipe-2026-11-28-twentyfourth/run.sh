# The memcpy bar timed over its groups' windows (new, /tmp/b24win) against over the whole trial
# (old, /tmp/b24f16 at 061ddef), interleaved: float host rows at 4 MiB.
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
common="--scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check"
for r in 1 2 3; do for n in 4 8; do
  [ $n = 8 ] && [ $r != 1 ] && continue
  for v in f16 win; do
  b=/tmp/b24$v
  timeout 300 $b/vkshmrun -n $n $b/vkshmem-bench $common --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --type float --csv "$out/$v-$n-r$r.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n $r
done; done; done
echo DONE
