#!/usr/bin/env bash
# Around a device lease: take the committed benchmark results out of the working tree, so that every device call
# sends less and each carry folder can hold more, then put them back.
#
# Every device call sends the working tree (tracked and untracked-not-ignored files, counted in whole 4 KiB blocks)
# beside its carried folder, 64 MiB in all. Measured 2026-12-06 (carry.tree_bytes): the tree 43.4 MiB, 36.8 MiB of it
# benchmarks/results/ (3,901 tracked files, most of them repro_small's per-question caches), so a carry folder held
# 19.6 MiB; hidden, the tree is 6.55 MiB and a folder 56.4 MiB. A learning lease's payload (REPRO_GRAPHS=2wiki: the
# SmolLM2 GGUF, MiniLM, the 2wiki and bench graphs, wheels; 237 MB) is then 5 unpack calls instead of 13, the device
# seconds saved going to the learning run. Nothing on the device reads benchmarks/results/: gpu_session.sh writes its
# results to $OUT.
#
#   bash benchmarks/device/lean_tree.sh hide     # before pack_gpu_session.sh (its folders are sized to the tree)
#   bash benchmarks/device/lean_tree.sh status
#   bash benchmarks/device/lean_tree.sh restore  # after the lease, before unpacking what it returned into the tree
#
# hide is `git rm -r` of LEAN_PATHS (default benchmarks/results): the files leave the index and the disk, so no call
# sends them, and HEAD still holds them. It is refused, with nothing removed, when anything under those paths differs
# from HEAD or is untracked (it would be lost or would travel anyway), or when they are already hidden. restore puts
# them back from the commit they were hidden at; it is refused, with nothing changed, when files were written under
# those paths meanwhile (they could be overwritten). Do not commit while they are hidden: the commit would delete them
# (restore still brings them back, from the recorded commit).
set -euo pipefail
cd "$(dirname "$0")/../.."
read -r -a PATHS <<< "${LEAN_PATHS:-benchmarks/results}"
MARK=$(git rev-parse --git-path harness-g-lean-tree)
die() { echo "lean_tree: $*" >&2; exit 1; }

case "${1:-}" in
  hide)
    [ -f "$MARK" ] && die "${PATHS[*]} already hidden at $(cat "$MARK"); run restore first"
    dirty=$(git status --porcelain --untracked-files=all -- "${PATHS[@]}" | wc -l)
    [ "$dirty" -eq 0 ] || die "${PATHS[*]}: $dirty changed or untracked file(s); commit or move them first (nothing hidden)"
    n=$(git ls-files -- "${PATHS[@]}" | wc -l)
    [ "$n" -gt 0 ] || die "${PATHS[*]}: no tracked files to hide"
    git rev-parse HEAD > "$MARK"
    git rm -r -q -- "${PATHS[@]}"
    echo "hid $n tracked file(s) under ${PATHS[*]} (HEAD $(cut -c1-7 "$MARK")); do not commit until: bash $0 restore" ;;
  restore)
    [ -f "$MARK" ] || die "nothing hidden (no $MARK)"
    other=$(git status --porcelain --untracked-files=all -- "${PATHS[@]}" | grep -cv '^D  ' || true)
    [ "$other" -eq 0 ] || die "${PATHS[*]}: $other file(s) written there while hidden; move them out, restore, put them back"
    # index and files as the recorded commit has them: clean when HEAD is still that commit; after a commit made
    # while hidden, the files come back staged as additions to it
    git checkout "$(cat "$MARK")" -- "${PATHS[@]}"
    echo "restored ${PATHS[*]} from $(cut -c1-7 "$MARK")"
    rm -f "$MARK" ;;
  status)
    if [ -f "$MARK" ]; then echo "hidden: ${PATHS[*]} (at $(cat "$MARK"))"; else echo "not hidden"; fi ;;
  *) die "usage: lean_tree.sh hide|restore|status (got '${1:-}')" ;;
esac
