# shellcheck shell=bash
# Shared by slurm-local.sh and slurm-multi.sh (sourced, not run): waiting, process checks and
# munge. The sourcing script defines log, die, DIR, AUTH, MUNGE_SOCK and TIMEOUT first.

dump_logs() {
  for f in "$DIR"/log/*.log; do
    [ -f "$f" ] || continue
    echo "----- last lines of $f -----" >&2; tail -n 15 "$f" >&2 || true
  done
}
# wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds or time runs out
wait_for() {
  local secs=$1 what=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$end" ] || { log "timed out after ${secs}s waiting for: $what"; return 1; }
    sleep 0.3
  done
}
# proc_alive PID: running and not a zombie (orphans are reaped late in some containers)
proc_alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
pid_alive() { [ -f "$1" ] && proc_alive "$(cat "$1")"; }

start_munge() {
  [ "$AUTH" = munge ] || return 0
  if pid_alive "$DIR/run/munged.pid"; then log "munged already running (pid $(cat "$DIR/run/munged.pid"))"; return 0; fi
  if [ ! -s "$DIR/munge/key/munge.key" ]; then
    dd if=/dev/urandom of="$DIR/munge/key/munge.key" bs=1024 count=1 status=none
    chmod 400 "$DIR/munge/key/munge.key"
  fi
  # --force: tolerate group-writable parent dirs (e.g. a CI workspace)
  munged --force --key-file="$DIR/munge/key/munge.key" --socket="$MUNGE_SOCK" \
         --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
         --seed-file="$DIR/munge/key/munged.seed" \
    || die "munged failed to start"
  wait_for "$TIMEOUT" "munge socket" bash -c "munge -n -S '$MUNGE_SOCK' | unmunge -S '$MUNGE_SOCK'" \
    || die "munge does not answer on $MUNGE_SOCK"
  log "munged started (pid $(cat "$DIR/run/munged.pid"))"
}
