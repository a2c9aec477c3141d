export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3 4; do for n in 2 4 8; do for ip in oop inplace; do for v in cur r4 r4nm r8; do
  extra=""; [ $ip = inplace ] && extra="--in-place"
  b=/tmp/b23l1; rc=0; unset TRY_NOMOVSB
  case $v in cur) b=/tmp/b23cur;; r4) rc=4096;; r4nm) rc=4096; export TRY_NOMOVSB=1;; r8) rc=8192;; esac
  TRY_RC=$rc timeout 120 $b/vkshmrun -n $n $b/vkshmem-bench --collective reduce --type float $extra --min-bytes 256K --max-bytes 4M --step-factor 4 --iters 30 --check --no-roofline --csv "$out/$v-$n-$ip-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n $ip
done; done; done; done
