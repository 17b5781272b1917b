#!/usr/bin/env bash
# Session 35, device run 10: the wgmma step with its data resident (benchmarks/micro/wgmma_step.cu, built on the CPU
# machine, carried as exp_variants/wgmma_step), its new mode 5: the pair-table decode in natural k order from the present
# layout (each lane loads its quad's stream words, one PRMT a step), against mode 1 (the kernel's decode). No kbit build.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p $OUT; R=/tmp/s35/r${RUN:-10}; mkdir -p $R
timeout 120 exp_variants/wgmma_step 256 | tee $R/wgmma_step-256.md; echo "rc=$?"
tar -czf $OUT/run${RUN:-10}.tar.gz -C $R .
