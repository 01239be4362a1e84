#!/usr/bin/env bash
# Builds the hwloc corpus of tests/hwloc_corpus.rs in DIR (default target/hwloc-corpus): the
# real machines of hwloc's own test suite, from Debian's hwloc source package (the release
# numaplan links, 2.9.0; fetched with apt-get source through a private package list made from
# the archives this machine's apt is configured with, so the system's apt configuration is not
# touched and no mirror is named here), as XML exports hwloc itself writes:
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
mkdir -p "$DIR/apt/lists/partial" "$DIR/apt/parts" "$out"

# The source archives of this release (bookworm), from the binary archives apt already uses: a
# one-line `deb URI SUITE COMPONENTS` becomes `deb-src ...`; a deb822 stanza (*.sources) of
# `Types: deb` with the suite becomes one of `Types: deb-src` and that suite alone.
suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release | tr -d "\"'")
[ -n "$suite" ] || { echo "hwloc-corpus: /etc/os-release names no release" >&2; exit 1; }
for list in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$list" ] || continue
  awk -v suite="$suite" '$1 == "deb" {
      n = 2
      if ($2 ~ /^\[/) { while (n < NF && $n !~ /\]$/) n++; n++ }
      if ($(n + 1) == suite) { $1 = "deb-src"; print } }' "$list"
done > "$DIR/apt/sources.list"
for sources in /etc/apt/sources.list.d/*.sources; do
  [ -f "$sources" ] || continue
  awk -v suite="$suite" 'BEGIN { RS = ""; ORS = "\n\n" }
    { deb = 0; hit = 0; out = ""; n = split($0, line, "\n")
      for (i = 1; i <= n; i++) {
        if (line[i] ~ /^#/) continue
        if (line[i] ~ /^Types:/) { if (line[i] ~ /[ \t]deb([ \t]|$)/) deb = 1; line[i] = "Types: deb-src" }
        if (line[i] ~ /^Suites:/) { if ((line[i] " ") ~ ("[ \t]" suite " ")) hit = 1; line[i] = "Suites: " suite }
        out = out line[i] "\n" }
      if (deb && hit) print out }' "$sources"
done > "$DIR/apt/parts/system.sources"
if ! grep -qs . "$DIR/apt/sources.list" "$DIR/apt/parts/system.sources"; then
  echo "hwloc-corpus: this machine's apt sources name no Debian $suite archive to fetch hwloc's source from" >&2
  exit 1
fi
mkdir -p "$DIR/apt/cache/archives/partial"
apt=(-o "Dir::Etc::SourceList=$DIR/apt/sources.list" -o "Dir::Etc::SourceParts=$DIR/apt/parts"
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
