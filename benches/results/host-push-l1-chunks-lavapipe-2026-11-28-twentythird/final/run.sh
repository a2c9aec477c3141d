export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3; do for n in 2 4 8; do for v in new3 new4; do
  mn=256K; mx=4M
  timeout 150 /tmp/b23$v/vkshmrun -n $n /tmp/b23$v/vkshmem-bench --scope host --collective fcollect,collect --type float --min-bytes $mn --max-bytes $mx --step-factor 4 --iters 30 --check --no-roofline --csv "$out/$v-$n-x-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n
done; done; done
