#!/usr/bin/env bash
# The prepared GPU check (issue 17): BERT-base pretraining step and inference in bf16 on one NVIDIA
# GPU, on JAX (XLA) and PyTorch (eager, then torch.compile); a few minutes in all.
# Where the GPU machine has no Keras (the lab's device image has jax and torch but no keras and no
# tensorflow), carry Keras as wheels: from a machine with pip access, in the repo root,
#   python -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl keras==3.15.1 namex optree
# and this script installs them into /tmp/site. Results: one JSON line per measurement in
# ${OUT:-out}/gpu.jsonl (see benchmarks/gpu.py for what is measured and how).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
if [ -d .whl ]; then
  $PYTHON -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2 XLA_PYTHON_CLIENT_MEM_FRACTION=0.6
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv
echo "== jax (XLA)";    KERAS_BACKEND=jax   timeout 200 $PYTHON benchmarks/gpu.py --out "$OUT/gpu.jsonl"
echo "== torch eager";  KERAS_BACKEND=torch timeout 130 $PYTHON benchmarks/gpu.py --no-torch-compile --out "$OUT/gpu.jsonl"
echo "== torch.compile"; KERAS_BACKEND=torch timeout 150 $PYTHON benchmarks/gpu.py --repeats 2 --out "$OUT/gpu.jsonl"
if $PYTHON -c "import tensorflow" 2>/dev/null; then
  echo "== tensorflow (XLA)"; KERAS_BACKEND=tensorflow timeout 200 $PYTHON benchmarks/gpu.py --out "$OUT/gpu.jsonl"
fi
