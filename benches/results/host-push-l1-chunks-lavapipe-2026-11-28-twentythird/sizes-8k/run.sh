export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3 4; do for n in 2 4 8; do for v in cur p8 p8m p4m; do
  unset TRY_PM TRY_PC
  case $v in cur) ;; p8) export TRY_PC=8192;; p8m) export TRY_PM=1 TRY_PC=8192;; p4m) export TRY_PM=1 TRY_PC=4096;; esac
  mn=1M; mx=4M; [ $n = 4 ] && mx=2M; [ $n = 8 ] && mn=128K && mx=512K
  timeout 120 /tmp/b23p/vkshmrun -n $n /tmp/b23p/vkshmem-bench --scope host --collective fcollect,collect --type float --min-bytes $mn --max-bytes $mx --step-factor 2 --iters 30 --check --no-roofline --csv "$out/$v-$n-x-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n
done; done; done
