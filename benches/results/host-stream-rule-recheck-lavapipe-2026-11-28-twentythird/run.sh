export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3 4; do for n in 4 8; do for v in auto off; do
  VKSHMEM_HOST_STREAM=$v timeout 200 /tmp/b23show/vkshmrun -n $n /tmp/b23show/vkshmem-bench --scope host --collective broadcast,collect,fcollect,alltoall,reduce --type float --min-bytes 1M --max-bytes 4M --step-factor 2 --iters 20 --check --no-roofline --csv "$out/$v-$n-x-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n
done; done; done
