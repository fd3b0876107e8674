#!/usr/bin/env bash
# Issue 31 items 1-2 at the paper's rollout settings (T = 6): re-make the three-seed comparison from the per-window
# folders already run (benchmarks/results/repro_small/SET-paper-t6-seedS-qA-B, each with equivalence.json and
# credit.json). No model runs: every step reads the folders' caches.
#   - pooled-paper-t6-seed2-all: the pool over every window seed 2 ran, with its empty-class check and seed 2 against
#     seeds 0 and 1 question by question (seed_pair_vs_seed0.json, seed_pair_vs_seed1.json);
#   - pooled-paper-t6-seed0-same2-all, pooled-paper-t6-seed1-same2-all: seeds 0 and 1 over the same windows, each with
#     its empty-class check;
#   - the page (index.html), unless PAGE=0.
# Every seed-2 window must have its seed-0 and seed-1 folders: a missing one is refused in one line before anything is
# written. About 3 minutes on 2 cores for the 150 questions committed.
# Usage: bash benchmarks/repro_small_seeds.sh [RESULTS_DIR]   (default benchmarks/results/repro_small; PYTHON, PAGE)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RESULTS=$(cd "${1:-$HERE/results/repro_small}" && pwd)
PY=${PYTHON:-python}
case $PY in */*) PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY") ;; esac  # a relative path, from here
cd "$RESULTS"

# every seed-2 folder, with its seed-0 and seed-1 folders (the pools resample in question order whatever order they
# are given); a folder without credit.json, a block still running, is left out
S2=(); S0=(); S1=()
for d in *-paper-t6-seed2-q*-*/; do
  d=${d%/}
  [ -f "$d/credit.json" ] || continue
  for s in 0 1; do
    [ -f "${d/-seed2-/-seed$s-}/credit.json" ] || {
      echo "repro_small_seeds: $d has no seed-$s counterpart (${d/-seed2-/-seed$s-}/credit.json); nothing written" >&2
      exit 2; }
  done
  S2+=("$d"); S0+=("${d/-seed2-/-seed0-}"); S1+=("${d/-seed2-/-seed1-}")
done
[ ${#S2[@]} -gt 0 ] || { echo "repro_small_seeds: no seed-2 folder with credit.json in $RESULTS" >&2; exit 2; }
echo "seed 2 (and seeds 0, 1 on the same questions): ${#S2[@]} folders: ${S2[*]}"

$PY "$HERE/repro_small.py" pool --from "${S2[@]}" --out pooled-paper-t6-seed2-all
$PY "$HERE/repro_small.py" pool --from "${S0[@]}" --out pooled-paper-t6-seed0-same2-all
$PY "$HERE/repro_small.py" pool --from "${S1[@]}" --out pooled-paper-t6-seed1-same2-all
$PY "$HERE/repro_empty_class.py" --from "${S2[@]}" --out pooled-paper-t6-seed2-all/empty_class.json
$PY "$HERE/repro_empty_class.py" --from "${S0[@]}" --out pooled-paper-t6-seed0-same2-all/empty_class.json
$PY "$HERE/repro_empty_class.py" --from "${S1[@]}" --out pooled-paper-t6-seed1-same2-all/empty_class.json
$PY "$HERE/repro_seed_pair.py" --a "${S2[@]}" --b "${S0[@]}" --out pooled-paper-t6-seed2-all/seed_pair_vs_seed0.json
$PY "$HERE/repro_seed_pair.py" --a "${S2[@]}" --b "${S1[@]}" --out pooled-paper-t6-seed2-all/seed_pair_vs_seed1.json
[ "${PAGE:-1}" = 0 ] || $PY "$HERE/repro_small.py" page --out "$RESULTS"
