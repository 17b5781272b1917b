export CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++
KBIT_CUDA_ARCHS=90a python3 -m pip install --no-build-isolation --no-deps -q -e . > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
python3 -m pytest -q -x tests/test_cuda_gemm.py tests/test_nn.py 2>&1 | tail -3
B="--mode fast --shapes llama70b_gu,llama8b_gu,gateup,down,KV,moe_gu,moe_dn --ms 1,4,8 --ks 2,4,5 --dtypes fp16 --hot-ms 1 --no-model --sweep-experts 8,64 --sweep-ms 1 --no-plots --max-minutes 1.5"
python3 -m benchmarks.run $B --out $OUT/A > $OUT/A.log 2>&1
KBIT_TC_OCC3=1 python3 -m benchmarks.run $B --out $OUT/B > $OUT/B.log 2>&1
for v in A B; do echo "== $v"; grep -E "^\| (llama|gateup|down|KV|moe)" $OUT/$v/nvidia-*/results-fast.md | awk -F'|' '{print $2,$3,$4,$6}' | head -21; done
