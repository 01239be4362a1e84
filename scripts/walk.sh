#!/usr/bin/env bash
# The rooms (modules) numaplan's commands walk through, read off callgrind's call graph. Needs
# valgrind and a debug build (`cargo build`).
#
#   scripts/walk.sh [SPEC_A SPEC_B]
#     every numaplan function callgrind sees called, by its module, for `compile` of two specs:
#     by default one without groups against one with, which should differ only in what is
#     about groups as such (validating `groups:`, and the grouped plan file's serializer).
#   scripts/walk.sh --entries MODULE -- ARGS...
#     how often `numaplan ARGS...` enters MODULE (`app::input`): the calls from a numaplan
#     function outside it to one inside it, each (caller, callee) pair once, listed; a closure
#     MODULE hands out and another module calls back is one. Beside it, the count with the
#     standard library's calls of MODULE's closures (an iterator adaptor running one), which
#     are MODULE's own work; drop glue is not counted. NUMAPLAN_WALK_BIN=PATH walks another build (before and after a change).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ "${1:-}" = --entries ]; then
  module=$2
  shift 3
  valgrind --tool=callgrind --callgrind-out-file="$out/run.cg" "${NUMAPLAN_WALK_BIN:-target/debug/numaplan}" "$@" >/dev/null 2>&1 || true
  python3 - "$out/run.cg" "$module" <<'PY'
import re, sys
path, module = sys.argv[1], sys.argv[2]
inside = re.compile(r"^numaplan::" + re.escape(module) + r"(::|$)")
names, current, entries = {}, None, set()
def name(line):
    m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
    if not m:
        return line.split("=", 1)[1].strip()
    if m.group(2):
        names[m.group(1)] = m.group(2).strip()
    return names.get(m.group(1), "?")
for line in open(path, errors="replace"):
    if line.startswith("fn="):
        current = name(line.rstrip("\n"))
    elif line.startswith("cfn="):
        callee = name(line.rstrip("\n"))
        if inside.match(callee) and not inside.match(current) and "drop_in_place" not in callee:
            entries.add((current, callee))
ours = sorted(e for e in entries if e[0].startswith("numaplan::"))
print(f"{len(ours)} entr{'y' if len(ours) == 1 else 'ies'} into {module} from numaplan's code,"
      f" {len(entries)} counting the standard library's calls of its closures")
for caller, callee in sorted(entries):
    print(f"  {caller} -> {callee}")
PY
  exit
fi
a=${1:-examples/dgx-a100-llama.yaml}
b=${2:-examples/rl-groups.yaml}
for spec in "$a" "$b"; do
  valgrind --tool=callgrind --callgrind-out-file="$out/$(basename "$spec").cg" \
    target/debug/numaplan -q compile "$spec" -o "$out/$(basename "$spec").plan" >/dev/null 2>&1
done
python3 - "$out/$(basename "$a").cg" "$out/$(basename "$b").cg" "$a" "$b" <<'PY'
import re, sys
pat = re.compile(r"numaplan((?:::[a-z_][a-z0-9_]*)+)")
def rooms(path):
    found = set()
    for line in open(path, errors="replace"):
        if not line.startswith(("fn=", "cfn=")):
            continue
        for m in pat.finditer(line):
            segs = m.group(1).strip(":").split("::")
            rest = line[m.end():]
            # `module::Type::method` names its module whole; `module::function` less the function.
            whole = rest.startswith("::") and not rest.startswith(("::{{", "::_"))
            module = segs if whole else segs[:-1]
            if module:
                found.add("::".join(module))
    return found
a, b = rooms(sys.argv[1]), rooms(sys.argv[2])
print(f"{len(a & b)} rooms both walk")
print(f"only {sys.argv[3]}:", ", ".join(sorted(a - b)) or "none")
print(f"only {sys.argv[4]}:", ", ".join(sorted(b - a)) or "none")
PY
