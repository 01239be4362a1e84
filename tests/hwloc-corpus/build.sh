#!/usr/bin/env bash
# Builds the hwloc corpus of tests/hwloc_corpus.rs in DIR (default target/hwloc-corpus): the
# real machines of hwloc's own test suite, from Debian's hwloc source package (the release
# numaplan links, 2.9.0; fetched with apt-get source through a private package list, so the
# system's apt configuration is not touched), as XML exports hwloc itself writes:
#   - tests/hwloc/xml/*.xml as they are (1.x and 2.x exports);
#   - every Linux sysfs snapshot (tests/hwloc/linux/*.tar.bz2) exported by the system's
#     lstopo with HWLOC_FSROOT, as hwloc's own test script reads it (its .env file sourced);
#   - every x86 CPUID dump (tests/hwloc/x86/*.tar.bz2) exported by lstopo --if cpuid, and the
#     x86+linux ones with both.
# Prints the corpus folder. Idempotent: a finished corpus is kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-target/hwloc-corpus}
case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac
VERSION=2.9.0
out=$DIR/xml
if [ -f "$DIR/done-$VERSION" ]; then
  echo "$out"
  exit 0
fi
command -v lstopo-no-graphics >/dev/null || { echo "hwloc-corpus: lstopo-no-graphics missing (apt-get install hwloc)" >&2; exit 1; }
rm -rf "$DIR"
mkdir -p "$DIR/apt/lists/partial" "$out"
cat > "$DIR/apt/sources.list" <<EOF
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
EOF
mkdir -p "$DIR/apt/cache/archives/partial"
apt=(-o "Dir::Etc::SourceList=$DIR/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o "Dir::State::Lists=$DIR/apt/lists" -o "Dir::Cache=$DIR/apt/cache"
     -o Debug::NoLocking=1)
echo "hwloc-corpus: fetching Debian's hwloc $VERSION source" >&2
apt-get "${apt[@]}" update -qq >&2
(cd "$DIR" && apt-get "${apt[@]}" source --download-only -qq "hwloc=$VERSION-1" >&2)
tar xjf "$DIR/hwloc_$VERSION.orig.tar.bz2" -C "$DIR"
tests=$DIR/hwloc-$VERSION/tests/hwloc

for f in "$tests"/xml/*.xml; do cp "$f" "$out/xml-$(basename "$f")"; done

# export NAME KIND SOURCE: unpacks a snapshot and writes hwloc's export of it to $out.
export_snapshot() {
  local name=$1 kind=$2 source=$3 work
  # A snapshot is thousands of small files: unpacked in memory where there is a tmpfs (40 times
  # faster than this machine's disk).
  work=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
  tar xjf "$source" -C "$work"
  local root
  root=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)
  (
    env=${source%.tar.bz2}.env
    # shellcheck disable=SC1090 # hwloc's own per-machine settings
    [ -f "$env" ] && . "$env"
    export LANG=C LC_ALL=C HWLOC_HIDE_ERRORS=1
    case "$kind" in
      linux) HWLOC_COMPONENTS=linux,stop HWLOC_FSROOT=$root HWLOC_DUMPED_HWDATA_DIR=/var/run/hwloc \
               lstopo-no-graphics --of xml "$out/$kind-$name.xml" ;;
      x86) lstopo-no-graphics -i "$root" --if cpuid --of xml "$out/$kind-$name.xml" ;;
      x86+linux) HWLOC_COMPONENTS=x86,linux,stop HWLOC_FSROOT=$root/fsroot HWLOC_CPUID_PATH=$root/cpuid \
                   lstopo-no-graphics --of xml "$out/x86-linux-$name.xml" ;;
    esac
  ) >/dev/null 2>&1 || echo "hwloc-corpus: hwloc $VERSION could not export $kind/$name (left out)" >&2
  rm -rf "$work"
}

for kind in linux x86 x86+linux; do
  for source in "$tests/$kind"/*.tar.bz2; do
    name=$(basename "$source" .tar.bz2)
    export_snapshot "$name" "$kind" "$source"
  done
done
rm -rf "$DIR/hwloc-$VERSION" "$DIR"/*.tar.* "$DIR"/*.dsc "$DIR/apt"
cat > "$DIR/SOURCE.txt" <<EOF
hwloc's own test-suite machines (BSD licence, Copyright © 2004-2023 the hwloc authors), from
Debian's hwloc $VERSION source package: tests/hwloc/xml/*.xml as they are (xml-*), the Linux
sysfs snapshots and x86 CPUID dumps exported by the system's lstopo (linux-*, x86-*).
Built by tests/hwloc-corpus/build.sh; not part of the repository.
EOF
touch "$DIR/done-$VERSION"
echo "hwloc-corpus: $(find "$out" -name '*.xml' | wc -l) machines in $out" >&2
echo "$out"
