#!/usr/bin/env bash
# slurm-multi.sh - multi-node Slurm cluster on one Linux host, for CI tests of
# sbatch files that span several nodes. Debian 12 (Slurm 22.05), run as root.
# Copied from the project's shared CI harness without its own checks (and their python):
# scripts/test.sh starts it, tests/multinode.rs (NUMAPLAN_MSLURM=1) submits numaplan's
# generated batch files to it, and scripts/test.sh stops it.
#
# Each compute node is a network namespace with its own address, its own
# hostname (UTS namespace) and its own /etc/hosts (mount namespace), running
# its own slurmd.  slurmctld runs in a separate "ctl" namespace that holds the
# bridge.  The host (root namespace) gets one veth into the bridge, so sbatch,
# srun, squeue, scontrol work from the host with SLURM_CONF set (see 'env').
# One munged serves all daemons: its socket is a file, visible in every netns.
#
#   host ns   : ${NS}0  $NET.254/24 --veth--+
#   $NS-ctl   : bridge br0 $NET.1/24  <-----+--- slurmctld (hostname ctl)
#   $NS-n1 .. : eth0 $NET.11/24, $NET.12/24, ... slurmd -N n1 (hostname n1) ...
# No namespace gets a default route; the subnet exists only on these interfaces.
#
# Usage: slurm-multi.sh [install|start|submit|stop|status|env|exec|clean]
#   install  apt-get install slurm-wlm munge iproute2 util-linux (skipped when present)
#   start    create namespaces/veths/bridge, write config under $MSLURM_DIR,
#            start munged, slurmctld, one slurmd per node; wait (bounded) until
#            every node is idle.  Idempotent: what exists/runs is kept.
#   submit [SBATCH-OPTION...] SCRIPT [ARG...]  sbatch a job file (e.g. a generated
#            one), wait for it (bounded), print its output; exit 0 only if COMPLETED
#   stop     cancel jobs, stop the daemons (PID files), end the processes left
#            inside the namespaces, delete namespaces/veths/bridge.  Idempotent.
#   status   daemons, namespaces, addresses, sinfo
#   env      print 'export SLURM_CONF=...' for use with eval
#   exec NODE CMD...  run CMD inside NODE's namespaces (network, mounts, hostname)
#   clean    stop, then remove $MSLURM_DIR
#
# Environment (all optional):
#   MSLURM_DIR          state/config/log dir                       [/tmp/slurm-multi]
#   MSLURM_NODES        number of compute nodes (2..200)           [3]
#   MSLURM_NODE_PREFIX  node names are PREFIX1..PREFIXn            [n]
#   MSLURM_CPUS         CPUs declared per node (all nodes share them) [$(nproc)]
#   MSLURM_MEM_MB       RealMemory per node (not consumable)       [80% of MemTotal]
#   MSLURM_NET          first three octets of the private /24      [10.77.0]
#   MSLURM_NS           name prefix of namespaces and host veth    [mslurm]
#   MSLURM_CTLD_PORT    slurmctld port (inside the ctl namespace)  [6817]
#   MSLURM_SLURMD_PORT  slurmd port (inside each node namespace)   [6818]
#   MSLURM_AUTH         munge | none                               [munge]
#   MSLURM_TIMEOUT      seconds for each wait / each test job      [60]
#   MSLURM_INSTALL      1 = apt-get install if missing, 0 = never  [1]
#   MSLURM_PARTITION    name of the (default) partition            [debug]
#   MSLURM_JOB_TIMEOUT  seconds 'submit' waits for a job           [300]
set -euo pipefail

DIR=${MSLURM_DIR:-/tmp/slurm-multi}
NODES=${MSLURM_NODES:-3}
PREFIX=${MSLURM_NODE_PREFIX:-n}
CPUS=${MSLURM_CPUS:-$(nproc)}
MEM_MB=${MSLURM_MEM_MB:-$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.8}' /proc/meminfo)}
NET=${MSLURM_NET:-10.77.0}
NS=${MSLURM_NS:-mslurm}
CTLD_PORT=${MSLURM_CTLD_PORT:-6817}
SLURMD_PORT=${MSLURM_SLURMD_PORT:-6818}
AUTH=${MSLURM_AUTH:-munge}
TIMEOUT=${MSLURM_TIMEOUT:-60}
INSTALL=${MSLURM_INSTALL:-1}
PARTITION=${MSLURM_PARTITION:-debug}
JOB_TIMEOUT=${MSLURM_JOB_TIMEOUT:-300}

CONF=$DIR/etc/slurm.conf
HOSTS=$DIR/etc/hosts
MUNGE_SOCK=$DIR/munge/munge.socket.2
NS_CTL=$NS-ctl
HOST_IF=${NS}0
CTL_NAME=ctl
CTL_IP=$NET.1
HOST_IP=$NET.254
export SLURM_CONF=$CONF

# elapsed time in the log counts from MSLURM_T0_NS ('all' passes it to its steps)
T0_NS=${MSLURM_T0_NS:-$(date +%s%N)}
elapsed() { awk -v a="$T0_NS" -v b="$(date +%s%N)" 'BEGIN {printf "%.1f", (b - a) / 1e9}'; }
log()  { printf '[slurm-multi %s +%ss] %s\n' "$(date +%T)" "$(elapsed)" "$*" >&2; }
die()  { log "ERROR: $*"; dump_logs; exit 1; }
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root() { [ "$(id -u)" = 0 ] || die "must run as root (namespaces; daemons run as SlurmUser=root)"; }

node_name() { echo "$PREFIX$1"; }               # node_name I -> n1
node_ip()   { echo "$NET.$((10 + $1))"; }       # node_ip I   -> 10.77.0.11
node_ns()   { echo "$NS-$(node_name "$1")"; }   # node_ns I   -> mslurm-n1
all_nodes() { local i; for ((i = 1; i <= NODES; i++)); do node_name "$i"; done; }
nodelist()  { echo "${PREFIX}[1-$NODES]"; }
ns_exists() { [ -e "/run/netns/$1" ]; }

check_args() {
  if ! [[ $NODES =~ ^[0-9]+$ ]] || [ "$NODES" -lt 2 ] || [ "$NODES" -gt 200 ]; then
    die "MSLURM_NODES must be 2..200 (got $NODES)"
  fi
  [[ $NET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "MSLURM_NET must be three octets like 10.77.0 (got $NET)"
  [ "${#HOST_IF}" -le 15 ] || die "MSLURM_NS too long for an interface name ($HOST_IF)"
}

do_install() {
  local pkgs="slurm-wlm munge iproute2 util-linux"
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v srun >/dev/null \
     && command -v ip >/dev/null && command -v unshare >/dev/null && command -v nsenter >/dev/null \
     && { [ "$AUTH" = none ] || command -v munged >/dev/null; }; then
    log "install: already installed ($(slurmctld -V))"; return 0
  fi
  [ "$INSTALL" = 1 ] || die "slurm/iproute2/util-linux missing and MSLURM_INSTALL=0"
  log "install: apt-get install -y $pkgs"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq || die "apt-get update failed"
  # shellcheck disable=SC2086
  timeout 900 apt-get install -y -qq $pkgs >/dev/null || die "apt-get install $pkgs failed"
  log "install: done ($(slurmctld -V))"
}

# ---------------------------------------------------------------- network
# The /24 must not be in use on the host, except on our own veth.
check_subnet_free() {
  local used
  used=$(ip -4 -o addr show | awk -v p="$NET." -v me="$HOST_IF" 'index($4, p) == 1 && $2 != me {print $2}')
  [ -z "$used" ] || die "subnet $NET.0/24 already has addresses on: $used (set MSLURM_NET)"
  used=$(ip -4 route show match "$CTL_IP" | grep -v '^default' | grep -v " dev $HOST_IF " || true)
  [ -z "$used" ] || die "subnet $NET.0/24 is already routed on this host: $used (set MSLURM_NET)"
}

must() { "$@" || die "failed: $*"; }
ns_add() {
  ns_exists "$1" || ip netns add "$1" \
    || die "cannot create network namespace $1 (needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN)"
  must ip -n "$1" link set lo up
}

net_up() {
  check_subnet_free
  mkdir -p "$DIR/run"
  [ -e /run/netns ] || [ -e "$DIR/run/created-run-netns" ] || touch "$DIR/run/created-run-netns"
  ns_add "$NS_CTL"
  ip -n "$NS_CTL" link show br0 >/dev/null 2>&1 || must ip -n "$NS_CTL" link add br0 type bridge
  must ip -n "$NS_CTL" addr replace "$CTL_IP/24" dev br0
  must ip -n "$NS_CTL" link set br0 up
  if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
    must ip link add "$HOST_IF" type veth peer name vhost netns "$NS_CTL"
  fi
  must ip -n "$NS_CTL" link set vhost master br0 up
  must ip addr replace "$HOST_IP/24" dev "$HOST_IF"
  must ip link set "$HOST_IF" up
  local i n ns
  for ((i = 1; i <= NODES; i++)); do
    n=$(node_name "$i"); ns=$(node_ns "$i")
    ns_add "$ns"
    if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
      must ip -n "$NS_CTL" link add "v-$n" type veth peer name eth0 netns "$ns"
    fi
    must ip -n "$NS_CTL" link set "v-$n" master br0 up
    must ip -n "$ns" addr replace "$(node_ip "$i")/24" dev eth0
    must ip -n "$ns" link set eth0 up
  done
  log "network: $HOST_IF $HOST_IP (host) <-> br0 $CTL_IP ($NS_CTL) <-> $NODES node namespaces"
}

# end every process whose network namespace is $1 (daemons, steps, tasks started in it)
kill_ns_pids() {
  local ns=$1 pids
  ns_exists "$ns" || return 0
  pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ') || true
  [ -n "${pids// /}" ] || return 0
  log "ending processes left in $ns: $pids"
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  if ! wait_for 10 "processes in $ns to exit" bash -c "[ -z \"\$(ip netns pids '$ns')\" ]"; then
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ') || true
    # shellcheck disable=SC2086
    [ -z "${pids// /}" ] || kill -KILL $pids 2>/dev/null || true
    wait_for 5 "processes in $ns to die" bash -c "[ -z \"\$(ip netns pids '$ns')\" ]" || true
  fi
}

net_down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NS-" || true); do
    kill_ns_pids "$ns"
    ip netns del "$ns" 2>/dev/null || log "could not delete netns $ns"
  done
  # the host veth goes with its peer in $NS_CTL; remove it if it is still there
  if ip link show "$HOST_IF" >/dev/null 2>&1; then ip link del "$HOST_IF" 2>/dev/null || true; fi
}

# ---------------------------------------------------------------- config
write_config() {
  mkdir -p "$DIR"/{etc,state,spool,log,run,jobs,munge/key}
  chmod 755 "$DIR" "$DIR/munge"   # munged wants the socket dir traversable by all
  chmod 700 "$DIR/munge/key"
  local auth_lines i
  if [ "$AUTH" = munge ]; then
    auth_lines="AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
CredType=cred/munge"
  else
    auth_lines="AuthType=auth/none
CredType=cred/none"
  fi
  {
    cat <<EOF
# generated by slurm-multi.sh: $NODES nodes in network namespaces on $(hostname -s)
ClusterName=mslurm
SlurmctldHost=$CTL_NAME($CTL_IP)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
$auth_lines
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# Heterogeneous jobs are scheduled only by the backfill scheduler, every bf_interval seconds
# (default 30): 1 starts them in about a second, as a plain job starts.
SchedulerParameters=batch_sched_delay=0,bf_interval=1
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
PlugStackConfig=$DIR/etc/plugstack.conf
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
EOF
    for ((i = 1; i <= NODES; i++)); do
      echo "NodeName=$(node_name "$i") NodeHostname=$(node_name "$i") NodeAddr=$(node_ip "$i") CPUs=$CPUS Sockets=1 CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=$MEM_MB State=UNKNOWN"
    done
    echo "PartitionName=$PARTITION Nodes=$(nodelist) Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } > "$CONF"
  : > "$DIR/etc/plugstack.conf"
  # /etc/hosts seen inside the namespaces (the host's own /etc/hosts is not touched)
  {
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
    echo "$CTL_IP $CTL_NAME"
    echo "$HOST_IP $(hostname -s)"
    for ((i = 1; i <= NODES; i++)); do echo "$(node_ip "$i") $(node_name "$i")"; done
  } > "$HOSTS"
}

# ns_run NETNS HOSTNAME CMD...: run CMD in NETNS with its own hostname and with
# $HOSTS on /etc/hosts and $DIR/etc on /etc/slurm (private mount namespace).
# nsenter, not 'ip netns exec': the latter remounts /sys, which hides
# /sys/fs/cgroup, and slurmd 22.05 refuses to start without it.
ns_run() {
  local ns=$1 host=$2; shift 2
  # shellcheck disable=SC2016
  nsenter --net="/run/netns/$ns" unshare --mount --uts --propagation private \
    sh -c 'set -e
      hostname "$1"
      mount --bind "$2" /etc/hosts
      if [ -d /etc/slurm ]; then mount --bind "$3" /etc/slurm; fi
      shift 3; exec "$@"' sh "$host" "$HOSTS" "$DIR/etc" "$@"
}

# ---------------------------------------------------------------- daemons
nodes_idle() {
  local n
  n=$(timeout 10 sinfo -h -N -p "$PARTITION" -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | wc -l)
  [ "$n" -ge "$NODES" ]
}

start_slurm() {
  if pid_alive "$DIR/run/slurmctld.pid"; then
    log "slurmctld already running (pid $(cat "$DIR/run/slurmctld.pid"))"
  else
    ns_run "$NS_CTL" "$CTL_NAME" slurmctld -c -f "$CONF" || die "slurmctld failed to start"
    wait_for "$TIMEOUT" "slurmctld to answer" timeout 10 scontrol ping || die "slurmctld does not answer on $CTL_IP:$CTLD_PORT"
    log "slurmctld started in $NS_CTL (pid $(cat "$DIR/run/slurmctld.pid"))"
  fi
  local i n
  for ((i = 1; i <= NODES; i++)); do
    n=$(node_name "$i")
    mkdir -p "$DIR/spool/$n"
    if pid_alive "$DIR/run/slurmd-$n.pid"; then
      log "slurmd $n already running (pid $(cat "$DIR/run/slurmd-$n.pid"))"; continue
    fi
    ns_run "$(node_ns "$i")" "$n" slurmd -N "$n" -f "$CONF" || die "slurmd $n failed to start"
  done
  for n in $(all_nodes); do
    wait_for "$TIMEOUT" "slurmd $n pid file" pid_alive "$DIR/run/slurmd-$n.pid" || die "slurmd $n did not stay up"
  done
  log "slurmd running on $(all_nodes | paste -sd' ')"
  if ! wait_for "$TIMEOUT" "$NODES nodes idle" nodes_idle; then
    log "node states: $(timeout 10 sinfo -h -N -o '%N:%t' 2>&1 | paste -sd' '); trying resume"
    timeout 10 scontrol update NodeName="$(nodelist)" State=RESUME || true
    wait_for "$TIMEOUT" "$NODES nodes idle after resume" nodes_idle || die "nodes never became idle"
  fi
  log "cluster up: $(timeout 10 sinfo -h -N -o '%N:%t' | paste -sd' ')"
}

do_start() {
  need_root; check_args; do_install
  if pid_alive "$DIR/run/slurmctld.pid"; then log "slurmctld running: keeping existing $CONF"; else write_config; fi
  net_up
  start_munge
  start_slurm
}

all_dead() { local p; for p in "$@"; do ! proc_alive "$p" || return 1; done; }

# stop_pidfiles PIDFILE...: SIGTERM every live daemon named by a PID file, wait
# (bounded) until all have exited, SIGKILL the rest; remove the PID files
stop_pidfiles() {
  local pf pid pids="" names=""
  for pf in "$@"; do
    [ -e "$pf" ] || continue
    if pid_alive "$pf"; then
      pid=$(cat "$pf"); pids="$pids $pid"; names="$names $(basename "$pf" .pid)($pid)"
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    if ! wait_for "$TIMEOUT" "$names to exit" all_dead $pids; then
      log "still running after SIGTERM; sending SIGKILL to:$names"
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
      sleep 1
    fi
    log "stopped:$names"
  fi
  for pf in "$@"; do rm -f "$pf"; done
}

do_stop() {
  local jobs
  if pid_alive "$DIR/run/slurmctld.pid"; then
    jobs=$(timeout 10 squeue -h -o %i 2>/dev/null | paste -sd' ') || true
    # shellcheck disable=SC2086
    if [ -n "$jobs" ]; then log "cancelling jobs: $jobs"; timeout 10 scancel $jobs 2>/dev/null || true; fi
  fi
  stop_pidfiles "$DIR"/run/slurmd-*.pid "$DIR/run/slurmctld.pid"
  net_down      # also ends what is left in the namespaces (slurmstepd, tasks)
  stop_pidfiles "$DIR/run/munged.pid"
}

do_clean() {
  do_stop
  # /run/netns was created by 'ip netns add' for this cluster: remove it again if empty
  if [ -e "$DIR/run/created-run-netns" ] && [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ]; then
    umount /run/netns 2>/dev/null || true
    rmdir /run/netns 2>/dev/null || true
  fi
  rm -rf "$DIR"; log "removed $DIR"
}

do_status() {
  local d pf
  if [ "$AUTH" = munge ]; then
    if pid_alive "$DIR/run/munged.pid"; then echo "munged: running (pid $(cat "$DIR/run/munged.pid"))"; else echo "munged: stopped"; fi
  fi
  for pf in "$DIR/run/slurmctld.pid" "$DIR"/run/slurmd-*.pid; do
    [ -e "$pf" ] || continue
    d=$(basename "$pf" .pid)
    if pid_alive "$pf"; then echo "$d: running (pid $(cat "$pf"))"; else echo "$d: stopped"; fi
  done
  echo "namespaces: $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NS-" | paste -sd' ' || true)"
  ip -br -4 addr show dev "$HOST_IF" 2>/dev/null || echo "$HOST_IF: absent"
  if pid_alive "$DIR/run/slurmctld.pid"; then timeout 10 sinfo -N -o '%N %P %t %c %m %E' || true; fi
}

do_exec() { # do_exec NODE CMD...
  local n=${1:?usage: exec NODE CMD...}; shift
  pid_alive "$DIR/run/slurmd-$n.pid" || die "slurmd $n is not running"
  [ $# -gt 0 ] || set -- bash
  exec nsenter --target "$(cat "$DIR/run/slurmd-$n.pid")" --net --mount --uts -- "$@"
}

# ---------------------------------------------------------------- jobs
# wait_job ID SECONDS: poll (0.3 s) until job ID ends or SECONDS pass; prints
# its final state.  Returns 0 only for COMPLETED; cancels the job on timeout.
# A heterogeneous job has one record per component (ID+0, ID+1, ...): it is
# COMPLETED when all are, and takes the first other final state any has.
wait_job() {
  local id=$1 secs=$2 st end states
  end=$((SECONDS + secs))
  while :; do
    states=$(timeout 10 scontrol show job -o "$id" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2) || true
    st=$(printf '%s\n' "$states" | grep -vxE 'COMPLETED|' | head -1)
    [ -z "$st" ] && [ -n "$states" ] && st=COMPLETED
    case "$st" in
      COMPLETED) echo "$st"; return 0 ;;
      FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED) echo "$st"; return 1 ;;
    esac
    if [ "$SECONDS" -ge "$end" ]; then
      timeout 10 scancel "$id" 2>/dev/null || true
      echo "${st:-UNKNOWN} after ${secs}s (cancelled)"; return 1
    fi
    sleep 0.3
  done
}

# do_submit [SBATCH-OPTION...] SCRIPT [ARG...]: sbatch a job file, wait
# (bounded by MSLURM_JOB_TIMEOUT), print its output; exit 0 only if COMPLETED
do_submit() {
  [ $# -gt 0 ] || die "usage: $0 submit [sbatch options] script [args]"
  pid_alive "$DIR/run/slurmctld.pid" || die "not started (run: $0 start)"
  local id st rc=0 f
  id=$(timeout "$TIMEOUT" sbatch --parsable "$@") || die "sbatch rejected the job"
  id=${id%%;*}
  log "submitted job $id; waiting up to ${JOB_TIMEOUT}s"
  st=$(wait_job "$id" "$JOB_TIMEOUT") || rc=1
  log "job $id: $st ($(timeout 10 scontrol show job -o "$id" 2>/dev/null | grep -oE '(^| )(ExitCode|NodeList)=[^ ]+' | paste -sd' ' | sed 's/^ //; s/  / /g'))"
  for f in $(timeout 10 scontrol show job -o "$id" 2>/dev/null | grep -oE '(StdOut|StdErr)=[^ ]+' | cut -d= -f2- | sort -u); do
    [ -f "$f" ] || continue
    echo "----- $f -----"; cat "$f"
  done
  return "$rc"
}

cmd=${1:-help}
case "$cmd" in
  install) need_root; do_install ;;
  start)   do_start ;;
  stop)    need_root; do_stop ;;
  status)  do_status ;;
  env)     echo "export SLURM_CONF=$CONF" ;;
  exec)    shift; do_exec "$@" ;;
  submit)  shift; do_submit "$@" ;;
  clean)   need_root; do_clean ;;
  -h|--help|help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0" ;;
  *) echo "unknown command: $cmd (try --help)" >&2; exit 2 ;;
esac
