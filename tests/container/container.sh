#!/usr/bin/env bash
# container.sh CMD...  - run CMD in a real OCI container (podman + crun from Debian 12), with the
# host's root filesystem read-only as the container's root, so every binary and library of the
# host (a numaplan build, python, numactl) runs inside unchanged.
#
# What a container does to a job, and what this script reproduces:
#   - a seccomp profile: CT_PROFILE=docker (default) is Docker's default profile
#     (seccomp/docker-default.json, moby profiles v0.2.3), which containerd's RuntimeDefault
#     matches for these calls: get_mempolicy, mbind, set_mempolicy and set_mempolicy_home_node
#     are allowed only with CAP_SYS_NICE, else EPERM; migrate_pages and move_pages never.
#     CT_PROFILE=podman: podman's own default (allows the memory-policy calls on Debian 12's
#     containers-common); CT_PROFILE=unconfined; or a path to a profile.
#   - capabilities: podman's default set (no CAP_SYS_NICE); CT_ADD_CAPS=SYS_NICE adds it.
#   - a cpuset: CT_CPUSET (default "1"; empty: none), as `docker run --cpuset-cpus` or the
#     kubelet's static CPU manager gives a Guaranteed pod.
#   - CT_CGROUPNS=host|private, CT_ENV="A=1 B=2" (passed with -e), CT_ARGS (more podman args),
#     CT_MOUNTS="/src:/dst:ro /other" (bind mounts; a bare path is mounted read-write at itself).
#     The current directory is mounted read-write and is the working directory.
#
# Three things this nested VM needs, each worked around here (a normal host needs none):
#   1. crun refuses the hybrid cgroup layout: podman runs in a private mount namespace
#      (unshare -m) without /sys/fs/cgroup/unified; the host's mounts are untouched.
#   2. rlimits above the VM's hard limits are refused (no CAP_SYS_RESOURCE): explicit --ulimit.
#   3. `--rootfs /` fails (pivot_root busy): / is bind-mounted on $CT_ROOT and used from there,
#      read-only, with an empty tmpfs on /tmp (notmpcopyup: no copy of the host's /tmp).
# A start takes about 0.2-0.4 s. Exit status: CMD's; 125-127 are podman's own failures.
# Needs root and `apt-get install podman` (this script installs it when missing).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 CMD..." >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
command -v podman >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman >/dev/null
case ${CT_PROFILE:-docker} in
  docker) SECCOMP=$HERE/seccomp/docker-default.json ;;
  podman) SECCOMP="" ;;
  unconfined) SECCOMP=unconfined ;;
  *) SECCOMP=$CT_PROFILE ;;
esac
# The commas are podman's own option syntax (tmpfs options), not array separators.
# shellcheck disable=SC2054
args=(run --rm -i --read-only --read-only-tmpfs=false
      --tmpfs /tmp:rw,nosuid,nodev,notmpcopyup
      --ulimit nofile=4096:4096 --ulimit nproc=4096:4096
      --network none -v "$PWD:$PWD" --workdir "$PWD")
[ -n "$SECCOMP" ] && args+=(--security-opt "seccomp=$SECCOMP")
CPUSET=${CT_CPUSET-1}
[ -n "$CPUSET" ] && args+=(--cpuset-cpus "$CPUSET")
[ -n "${CT_ADD_CAPS:-}" ] && args+=(--cap-add "$CT_ADD_CAPS")
[ -n "${CT_CGROUPNS:-}" ] && args+=(--cgroupns "$CT_CGROUPNS")
for e in ${CT_ENV:-}; do args+=(-e "$e"); done
for m in ${CT_MOUNTS:-}; do case $m in *:*) args+=(-v "$m") ;; *) args+=(-v "$m:$m") ;; esac; done
# shellcheck disable=SC2206
[ -n "${CT_ARGS:-}" ] && args+=(${CT_ARGS})
ROOT=${CT_ROOT:-/var/tmp/ct-rootfs}
mkdir -p "$ROOT"
# The inner script is expanded by the inner bash, from its own arguments.
# shellcheck disable=SC2016
exec unshare -m --propagation private /bin/bash -c '
  set -e
  if mountpoint -q /sys/fs/cgroup/unified; then umount /sys/fs/cgroup/unified; fi
  mount --bind / "$0"
  # podman writes the container'"'"'s /run/.containerenv into its root: keep it off the host'"'"'s /run.
  mount -t tmpfs tmpfs "$0/run"
  exec podman "$@"
' "$ROOT" "${args[@]}" --rootfs "$ROOT" "$@"
