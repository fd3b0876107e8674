#!/usr/bin/env bash
# Issue 31 items 1 and 2 at full scale on one GPU: the three multi-hop dev sets (HotpotQA, 2Wiki, MuSiQue), the first
# N (default 50) questions of each, both arms, N_g = 8, SmolLM2-135M, paper preset; then the page.
# Usage (repository root, the project's venv active):  bash benchmarks/repro_small_gpu.sh
#   OUT  where the results go (default $OUT/repro_small when the device tool's $OUT is set, else
#        benchmarks/results/repro_small/gpu); every question is cached there, so a cut run continues when rerun
#   ROOT where the dev graphs are built (default /tmp/hg-repro); N questions per set (default 50);
#   K    groups per generate call (default 50: all of a set's rollouts of one arm in one call per turn)
#   HG_DATA  the dev data folder (default /work/shared/data, as benchmarks/common.py)
#   GRAPHS_PREBUILT=1  use the graphs already in $ROOT/<set> and their own questions (the device has no spaCy)
#   DEVICE, MODEL, EXTRA  a CPU rehearsal of the paths: DEVICE=cpu MODEL=tiny-random EXTRA="--set rollout.max_turns=2"
# See benchmarks/results/repro_small/GPU.md for the expected time (an estimate).
set -euo pipefail
N=${N:-50}
K=${K:-50}
ROOT=${ROOT:-/tmp/hg-repro}
DATA=${HG_DATA:-/work/shared/data}
if [ -n "${OUT:-}" ]; then RESULT="$OUT/repro_small"; else RESULT=benchmarks/results/repro_small/gpu; fi
mkdir -p "$RESULT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$RESULT/device.txt" || true
# the graphs: the dev-graph builder (paper preset, sentence embeddings on the GPU, no CLI smoke checks), unless
# GRAPHS_PREBUILT=1: then $ROOT/<set> were built elsewhere (benchmarks/device/pack_gpu_session.sh: the lent GPU
# machine has no spaCy) and hold their own questions, which the runs use
if [ "${GRAPHS_PREBUILT:-0}" != 1 ]; then
  python benchmarks/build_dev_graphs.py --root "$ROOT" --only hotpotqa,2wiki,musique --preset paper --no-cli \
      --stem repro_small_graphs --set device=cuda 2>&1 | tail -n 12
fi
for spec in hotpotqa:hotpotqa:hotpotqa/hotpot_dev_distractor_v1.subset.json \
            2wiki:2wiki:2wikimultihopqa/dev.subset.json \
            musique:musique:musique/musique_ans_v1.0_dev.subset.jsonl; do
  IFS=: read -r name fmt rel <<< "$spec"
  args=(--graph "$ROOT/$name" --n-questions "$N" --out "$RESULT/$name" --device "${DEVICE:-cuda}" --batch-questions "$K"
        --model "${MODEL:-smollm2}" ${EXTRA:-})
  [ "${GRAPHS_PREBUILT:-0}" = 1 ] || args+=(--questions "$DATA/$rel" --format "$fmt")
  python benchmarks/repro_small.py equivalence "${args[@]}"
  python benchmarks/repro_small.py credit "${args[@]}"
  python benchmarks/repro_small.py page --out "$RESULT"  # after each set, so a cut run still has a page
done
du -sh "$RESULT"
