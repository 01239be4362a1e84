#!/usr/bin/env bash
# The rooms (modules) two commands walk through, compared: every numaplan function callgrind
# sees called, by its module. By default `compile` of a spec without groups against one with
# groups, which should differ only in what is about groups as such (validating `groups:`, and
# the grouped plan file's serializer). Needs valgrind and a debug build (`cargo build`).
# Usage: scripts/walk.sh [SPEC_A SPEC_B]
set -euo pipefail
cd "$(dirname "$0")/.."
a=${1:-examples/dgx-a100-llama.yaml}
b=${2:-examples/rl-groups.yaml}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
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
