"""numaplan's JSON schemas (schemas/), checked with a real JSON Schema validator (the
`jsonschema` package): every example spec and every compiled plan validates, every JSON report
validates against its schema, and every key the loader accepts in a spec is in the job schema."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import jsonschema
import pytest
import yaml

import numaplan
from conftest import REPO, TWO_RANKS, Plan

SCHEMAS = REPO / "schemas"
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
# Specs the loader accepts: the examples and the compile cases that are not errors.
ACCEPTED = EXAMPLES + sorted(
    p for p in (REPO / "tests/cases/compile").glob("*.yaml") if not p.name.startswith("err_")
)


def schema(kind: str) -> Dict[str, Any]:
    return json.loads((SCHEMAS / f"{kind}.schema.json").read_text())


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML reads YAML 1.1, where `0000:18:00.0` is a base-60 number; numaplan (serde_yaml)
    and editors read YAML 1.2, where it is a string. Floats and ints as 1.2 has them."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers
            if tag not in ("tag:yaml.org,2002:float", "tag:yaml.org,2002:int")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$"),
    list("-+.0123456789"))


def load_yaml(path: Path) -> Any:
    """A YAML file as the JSON it stands for (mapping keys as strings: `0:` is `"0"`; an empty
    document is an empty mapping, as numaplan's loader takes it)."""
    value = yaml.load(path.read_text(), Loader=Yaml12Loader)  # noqa: S506 - a safe loader
    return json.loads(json.dumps(value if value is not None else {}))


def validate(kind: str, instance: Any) -> None:
    validator = jsonschema.Draft202012Validator(schema(kind))
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def run_json(*args: str, ok: bool = True) -> Any:
    # `--quiet` only where a plan's warnings are shown: elsewhere it is a usage error.
    quiet = ["--quiet"] if args[0] in ("compile", "exec", "bind") else []
    out = subprocess.run([numaplan.executable(), *quiet, *args], cwd=REPO,
                         capture_output=True, text=True)
    if ok:
        assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_every_schema_is_a_valid_schema():
    kinds = sorted(p.name.split(".")[0] for p in SCHEMAS.glob("*.schema.json"))
    assert kinds == ["bind", "codes", "diff", "exec", "explain", "job", "plan", "topology",
                     "verify", "watch"]
    for kind in kinds:
        jsonschema.Draft202012Validator.check_schema(schema(kind))


@pytest.mark.parametrize("spec", ACCEPTED, ids=lambda p: p.name)
def test_a_spec_the_loader_accepts_validates(spec: Path):
    validate("job", load_yaml(spec))


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda p: p.name)
def test_every_compiled_example_validates(spec: Path):
    validate("plan", run_json("compile", str(spec), "--format", "json"))
    validate("explain", run_json("explain", str(spec), "--format", "json"))


def test_every_fixture_validates():
    for fixture in sorted((REPO / "examples/topologies").glob("*.yaml")):
        validate("topology", load_yaml(fixture))
        validate("topology", run_json("topo", "--topology", str(fixture), "--format", "json"))


def test_the_reports_validate(tmp_path: Path):
    lumi = "examples/lumi-g.yaml"
    validate("diff", run_json("diff", lumi, "examples/frontier.yaml", "--format", "json"))
    validate("codes", run_json("codes", "--format", "json"))
    validate("codes", run_json("codes", "E0304", "--format", "json"))
    plan = Plan(tmp_path, TWO_RANKS)
    validate("exec", run_json("exec", str(plan.path), "--dry-run", "--format", "json", "--",
                              "true"))
    validate("bind", run_json("bind", str(plan.path), "--local-rank", "1", "--dry-run",
                              "--format", "json"))
    # This process as rank 0: bound otherwise (exit 1), reported all the same.
    verify = run_json("verify", str(plan.path), "--pids", str(os.getpid()), "--format", "json",
                      ok=False)
    validate("verify", verify)
    assert verify["numaplan_verify"] == 2 and verify["ranks"][0]["pid"] == os.getpid()
    # --watch: JSON Lines, the report first, then the events and the summary (this process is
    # bound otherwise, so its memory and CPUs are reported at once).
    out = subprocess.run([numaplan.executable(), "verify", str(plan.path), "--pids",
                          str(os.getpid()), "--watch", "--count", "1", "--interval", "0.1",
                          "--format", "json"], cwd=REPO, capture_output=True, text=True)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    validate("verify", lines[0])
    assert [e["event"] for e in lines[1:]][-1] == "summary", out.stdout
    for event in lines[1:]:
        validate("watch", event)


def keys(value: Any, path: Tuple[str, ...] = ()) -> Iterator[Tuple[str, ...]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield path + (str(key),)
            yield from keys(child, path + (str(key),))


def properties(node: Dict[str, Any], root: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The object schemas `node` may be (through $ref, anyOf, oneOf, allOf)."""
    if "$ref" in node:
        node = root["$defs"][node["$ref"].split("/")[-1]]
    found = [node] if "properties" in node or "additionalProperties" in node else []
    for combinator in ("anyOf", "oneOf", "allOf"):
        for option in node.get(combinator, []):
            found += properties(option, root)
    return found


def in_schema(path: Tuple[str, ...], root: Dict[str, Any]) -> bool:
    nodes = [root]
    for key in path:
        nxt = []
        for node in nodes:
            for obj in properties(node, root):
                if key in obj.get("properties", {}):
                    nxt.append(obj["properties"][key])
                elif isinstance(obj.get("additionalProperties"), dict):
                    nxt.append(obj["additionalProperties"])
        if not nxt:
            return False
        nodes = nxt
    return True


def test_a_plan_is_checked_against_the_one_shape_it_has():
    # `groups` chooses the shape (if/then/else, not anyOf): a flat plan with a wrong value is
    # told what is wrong with that value, at its path, not that it matches neither shape.
    flat = run_json("compile", "examples/lumi-g.yaml", "--format", "json")
    flat["ranks"][0]["cores"] = "eight"
    def errors(instance: Any) -> List[Tuple[List[Any], str]]:
        found = jsonschema.Draft202012Validator(schema("plan")).iter_errors(instance)
        return [(list(e.absolute_path), e.message) for e in found]
    assert errors(flat) == [(["ranks", 0, "cores"], "'eight' is not of type 'integer'")]
    grouped = run_json("compile", "examples/rl-groups.yaml", "--format", "json")
    validate("plan", grouped)
    grouped["groups"][1]["policy"] = 7
    assert errors(grouped) == [(["groups", 1, "policy"], "7 is not of type 'string'")]


def test_every_key_the_loader_accepts_is_in_the_schema():
    root = schema("job")
    seen = set()
    for spec in ACCEPTED:
        for path in keys(load_yaml(spec)):
            assert in_schema(path, root), f"{spec.name}: {'.'.join(path)} is not in the job schema"
            seen.add(path[0])
    assert {"cpu", "memory", "gpus", "env"} <= seen
