export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3 4; do for n in 2 4 8; do for v in cur bp; do
  unset TRY_BP; [ $v = bp ] && export TRY_BP=1
  timeout 150 /tmp/b23bp/vkshmrun -n $n /tmp/b23bp/vkshmem-bench --scope host --collective broadcast --type float --min-bytes 256K --max-bytes 4M --step-factor 4 --iters 30 --check --no-roofline --csv "$out/$v-$n-x-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n
done; done; done
