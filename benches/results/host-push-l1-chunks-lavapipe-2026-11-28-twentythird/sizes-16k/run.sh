export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3 4 5; do for n in 2 4; do for v in cur p16 p16m p8m; do
  unset TRY_PM TRY_PC
  case $v in cur) ;; p16) export TRY_PC=16384;; p16m) export TRY_PM=1 TRY_PC=16384;; p8m) export TRY_PM=1 TRY_PC=8192;; esac
  mx=4M; [ $n = 4 ] && mx=2M
  timeout 120 /tmp/b23p/vkshmrun -n $n /tmp/b23p/vkshmem-bench --scope host --collective fcollect,collect --type float --min-bytes 512K --max-bytes $mx --step-factor 2 --iters 30 --check --no-roofline --csv "$out/$v-$n-x-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n
done; done; done
