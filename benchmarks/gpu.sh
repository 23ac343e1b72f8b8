#!/usr/bin/env bash
# The prepared GPU check (issues 16, 17): BERT's pretraining step and inference against keras-hub
# and transformers on one NVIDIA GPU, fp32 and bf16, on JAX (XLA) and PyTorch (eager); about
# 9 minutes in all. What is measured and how: benchmarks/gpu.py. Results: one JSON line per row
# in ${OUT:-out}/gpu.jsonl, the log in ${OUT:-out}/gpu.log.
# The lab's device image has jax, torch and transformers but no keras, keras-hub or tensorflow:
# carry them as wheels, made in the repo root of a machine with pip access:
#   python -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 -d .whl \
#     keras==3.15.1 namex==0.1.0 optree==0.20.0 keras-hub==0.32.0
# and this script installs them into /tmp/site (keras_bert_lab is imported from the checkout).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
if [ -d .whl ]; then
  $PYTHON -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
export XLA_PYTHON_CLIENT_MEM_FRACTION=0.6
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.log"
run() {  # run SECONDS BACKEND ARGS...: one backend's process, cut at SECONDS
  local seconds=$1 backend=$2; shift 2
  echo "== $backend $*" | tee -a "$OUT/gpu.log"
  KERAS_BACKEND=$backend timeout "$seconds" $PYTHON benchmarks/gpu.py --out "$OUT/gpu.jsonl" "$@" \
    2>&1 | grep -v "^I0000\|^W0000\|UserWarning\|warnings.warn" | tee -a "$OUT/gpu.log"
}
run 160 torch --size base --steps 10
run 250 jax   --size base --steps 10
run 70  torch --size small --steps 10 --what train
run 90  jax   --size small --steps 10 --what train
