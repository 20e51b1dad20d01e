# Sourced by scripts/drill/run.sh and scripts/stack/cluster-drill.sh: `run_harness <args>` runs the
# drill harness (scripts/drill/drill.mjs <args>) within a time budget and returns its exit status.
# Past the budget the harness writes a Node diagnostic report (its threads' stacks and open
# sockets, printed by hang-report.mjs) into $DRILL_RUN_DIR, the last lines of each app's log are
# printed, the harness is stopped, and the status is 1: a stuck drill fails and says where it
# stood, instead of running until the CI's own limit. Budget: 15 min with --quick, the soak's
# minutes + 15 with --soak, else 60 min; DRILL_BUDGET_S overrides. Sets `harness` to its pid (the
# caller's cleanup stops it).
run_harness() {
  local budget=3600 prev= arg
  for arg in "$@"; do
    case "$arg" in --quick) budget=900 ;; esac
    [ "$prev" = --soak ] && budget=$((arg * 60 + 900))
    prev=$arg
  done
  budget=${DRILL_BUDGET_S:-$budget}

  node --report-on-signal --report-signal=SIGUSR2 --report-directory="$DRILL_RUN_DIR" scripts/drill/drill.mjs "$@" &
  harness=$!
  (
    trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    sleep "$budget" >/dev/null 2>&1 &
    sleeper=$!
    wait "$sleeper"
    kill -0 "$harness" 2>/dev/null || exit 0
    echo "[drill] the drill overran its budget of ${budget}s: what it was doing" >&2
    : >"$DRILL_RUN_DIR/overran"
    # Its threads' states first: a stopped (T) or blocked (D) process writes no report.
    ps -L -o pid,lwp,stat,wchan:24,pcpu,etime,comm -p "$harness" >&2 || true
    kill -USR2 "$harness" 2>/dev/null
    sleep 5
    for report in "$DRILL_RUN_DIR"/report.*.json; do
      [ -f "$report" ] && node scripts/drill/hang-report.mjs "$report" >&2
    done
    for f in "$DRILL_RUN_DIR"/*.log; do
      [ -f "$f" ] || continue
      echo "--- last lines of $f" >&2
      tail -n 5 "$f" | cut -c1-400 >&2
    done
    kill -TERM "$harness" 2>/dev/null
    sleep 30 >/dev/null 2>&1 &
    sleeper=$!
    wait "$sleeper"
    kill -KILL "$harness" 2>/dev/null || true # a stopped or wedged process ignores TERM
  ) &
  local watchdog=$! code=0
  wait "$harness" || code=$?
  kill "$watchdog" 2>/dev/null || true
  if [ -f "$DRILL_RUN_DIR/overran" ]; then
    echo "[drill] FAILED: the drill did not finish within ${budget}s (the report above says where it stood)" >&2
    return 1
  fi
  return "$code"
}
