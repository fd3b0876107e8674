# Sourced by the set-up scripts: `step "message" command...` runs a command with its output appended to $LOG
# (set by the caller); on failure it prints the whole log and exits 1.
step() {
  echo "setup: $1"
  shift
  if ! "$@" >>"$LOG" 2>&1; then
    cat "$LOG"
    echo "setup: FAILED: $*" >&2
    exit 1
  fi
}
