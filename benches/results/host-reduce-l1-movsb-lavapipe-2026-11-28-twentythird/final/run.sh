export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3 4; do for n in 2 4; do for ty in float int8 double bfloat16; do for ip in oop inplace; do for v in cur new3; do
  extra=""; [ $ip = inplace ] && extra="--in-place"
  timeout 120 /tmp/b23$v/vkshmrun -n $n /tmp/b23$v/vkshmem-bench --collective reduce --type $ty $extra --min-bytes 1M --max-bytes 4M --step-factor 4 --iters 30 --check --no-roofline --csv "$out/$v-$n-$ip$ty-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n $ip $ty
done; done; done; done; done
