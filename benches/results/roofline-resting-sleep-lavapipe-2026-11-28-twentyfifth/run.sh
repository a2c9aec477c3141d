export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
common="--scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check"
for r in 1 2 3; do for n in 4 8; do for v in old new; do
  b=/tmp/b25$v
  timeout 300 $b/vkshmrun -n $n $b/vkshmem-bench $common --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --type float --csv "$out/$v-$n-r$r.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n $r
done; done; done
echo DONE
