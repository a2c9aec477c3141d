export VKSHMEM_SYMMETRIC_SIZE=256M TRY_RC=4096
out=$1; mkdir -p "$out"
for round in 1 2 3 4; do for n in 8; do for ip in oop inplace; do for v in cur s0 s1 s2; do
  extra=""; [ $ip = inplace ] && extra="--in-place"
  b=/tmp/b23l1; ts=${v#s}
  case $v in cur) b=/tmp/b23cur;; esac
  TRY_S=$ts timeout 120 $b/vkshmrun -n $n $b/vkshmem-bench --collective reduce --type float $extra --min-bytes 2M --max-bytes 4M --step-factor 2 --iters 30 --check --no-roofline --csv "$out/$v-$n-$ip-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n $ip
done; done; done; done
