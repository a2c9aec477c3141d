export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3 4; do for v in auto on; do
  VKSHMEM_HOST_STREAM=$v timeout 200 /tmp/b23show/vkshmrun -n 4 /tmp/b23show/vkshmem-bench --scope host --collective broadcast,collect,fcollect --type float --min-bytes 2M --max-bytes 2M --iters 20 --check --no-roofline --csv "$out/$v-4-x-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v 4
  VKSHMEM_HOST_STREAM=$v timeout 200 /tmp/b23show/vkshmrun -n 8 /tmp/b23show/vkshmem-bench --scope host --collective broadcast,collect,fcollect --type float --min-bytes 512K --max-bytes 4M --step-factor 8 --iters 20 --check --no-roofline --csv "$out/$v-8-x-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v 8
done; done
