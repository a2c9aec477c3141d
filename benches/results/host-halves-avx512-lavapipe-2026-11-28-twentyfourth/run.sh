# f16 reductions: old (the bf16 commit, /tmp/b24bf) against new (/tmp/b24f16), interleaved.
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
common="--scope host --collective reduce --type float16 --min-bytes 1M --max-bytes 4M --step-factor 4 --iters 60 --warmup 2 --check --no-roofline"
for r in 1 2 3 4 5 6 7 8; do for n in 2 4 8; do for v in bf f16; do
  b=/tmp/b24$v
  timeout 300 $b/vkshmrun -n $n $b/vkshmem-bench $common --op sum --csv "$out/$v-$n-r$r.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n $r
done; done; done
echo DONE
