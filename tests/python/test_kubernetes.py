"""`--emit k8s` checked by Kubernetes' own definitions, with no cluster: every manifest of the
examples and of tests/cases/k8s, in both device modes, passes the upstream OpenAPI schemas of
Kubernetes 1.34 to 1.37 in strict mode (`kubernetes-validate`), the LeaderWorkerSet and JobSet
CRDs' schemas (tests/data/k8s/crds, with unknown fields refused), and loads into the
`kubernetes` client's models without losing a field. Each DRA claim's CEL selectors and
constraints, evaluated by an independent CEL (`cel-python`) against ResourceSlices built as the
GPU, NIC and CPU drivers publish them for the job's machine, admit exactly one allocation: the
plan's devices."""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import celpy
import jsonschema
import kubernetes.client as k8s_client
import kubernetes_validate
import pytest
import yaml

import numaplan
from conftest import REPO

VERSIONS = ["1.34.0", "1.35.0", "1.36.0", "1.37.0"]
CRDS = REPO / "tests/data/k8s/crds"
MAX_DEVICES_PER_CLAIM = 32
STANDARD = "resource.kubernetes.io"
CPU_DRIVER = "dra.cpu"


def cases() -> List[Tuple[str, Optional[str], List[str]]]:
    """Every spec with `kubernetes:` (the examples' and tests/cases/k8s's that compile), in
    the device mode it names and in the other (DRA with the CPU driver's `grouped` mode, which
    fits every plan)."""
    out: List[Tuple[str, Optional[str], List[str]]] = []
    specs = [(p, None) for p in sorted((REPO / "examples").glob("*.yaml"))]
    for p in sorted((REPO / "tests/cases/k8s").glob("*.yaml")):
        if p.name.startswith("err_"):
            continue
        name = p.read_text().splitlines()[0].removeprefix("# topology: ").strip()
        topology = name if "/" in name else f"examples/topologies/{name}.yaml"
        specs.append((p, topology))
    for path, topology in specs:
        if "kubernetes:" not in path.read_text():
            continue
        rel = str(path.relative_to(REPO))
        out.append((rel, topology, []))
        out.append((rel, topology, ["--set", "kubernetes.devices=device-plugin"]))
        out.append((rel, topology, ["--set", "kubernetes.devices=dra", "--set",
                                     "kubernetes.cpus=grouped"]))
    return out


CASES = cases()


def ids(case: Tuple[str, Optional[str], List[str]]) -> str:
    return " ".join([case[0]] + case[2][1::2])


def run(*args: str) -> str:
    out = subprocess.run([numaplan.executable(), *args], cwd=REPO, check=True,
                         capture_output=True, text=True)
    return out.stdout


@lru_cache(maxsize=None)
def compiled(spec: str, topology: Optional[str], sets: Tuple[str, ...]) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """The manifests (as kubectl reads them) and the plan (JSON) of a case."""
    where = ["--topology", topology] if topology else []
    docs = [d for d in yaml.safe_load_all(run("compile", "--quiet", spec, *where, *sets, "--emit", "k8s")) if d]
    plan = json.loads(run("compile", "--quiet", spec, *where, *sets, "--format", "json"))
    return docs, plan


def test_there_are_cases_of_every_shape() -> None:
    kinds = set()
    for spec, topology, sets in CASES:
        kinds |= {d["kind"] for d in compiled(spec, topology, tuple(sets))[0]}
    assert {"Pod", "Job", "LeaderWorkerSet", "JobSet", "ResourceClaimTemplate", "Service",
            "ConfigMap"} <= kinds


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_the_upstream_schemas_take_every_object(case: Tuple[str, Optional[str], List[str]]) -> None:
    docs, _ = compiled(case[0], case[1], tuple(case[2]))
    for doc in docs:
        if doc["kind"] in ("LeaderWorkerSet", "JobSet"):
            crd_schema_takes(doc)
            for template in pod_templates(doc):
                wrapped = {"apiVersion": "v1", "kind": "PodTemplate",
                           "metadata": {"name": "t"}, "template": template}
                for version in VERSIONS:
                    kubernetes_validate.validate(wrapped, version, strict=True)
        else:
            for version in VERSIONS:
                kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_the_client_models_keep_every_field(case: Tuple[str, Optional[str], List[str]]) -> None:
    docs, _ = compiled(case[0], case[1], tuple(case[2]))
    api = k8s_client.ApiClient()
    models = {"ConfigMap": "V1ConfigMap", "Service": "V1Service", "Pod": "V1Pod", "Job": "V1Job",
              "ResourceClaimTemplate": "V1ResourceClaimTemplate"}
    for doc in docs:
        parts = [(doc, models[doc["kind"]])] if doc["kind"] in models else \
            [(t, "V1PodTemplateSpec") for t in pod_templates(doc)]
        for data, model in parts:
            loaded = api._ApiClient__deserialize(copy.deepcopy(data), model)  # type: ignore[attr-defined]
            assert api.sanitize_for_serialization(loaded) == data, model


def pod_specs(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    if doc["kind"] == "Pod":
        return [doc["spec"]]
    if doc["kind"] == "Job":
        return [doc["spec"]["template"]["spec"]]
    if doc["kind"] in ("LeaderWorkerSet", "JobSet"):
        return [t["spec"] for t in pod_templates(doc)]
    return []


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_every_pod_is_guaranteed(case: Tuple[str, Optional[str], List[str]]) -> None:
    """Kubernetes' own rule for the Guaranteed class: every container and init container has
    CPU and memory requests equal to its limits; the static CPU Manager gives exclusive CPUs
    only for a whole CPU count. The ranks' container asks the plan's CPUs on its node."""
    docs, plan = compiled(case[0], case[1], tuple(case[2]))
    specs = [s for d in docs for s in pod_specs(d)]
    assert specs
    for spec in specs:
        for c in spec["containers"] + spec.get("initContainers", []):
            r = c["resources"]
            assert r["requests"] == r["limits"], c["name"]
            assert {"cpu", "memory"} <= set(r["requests"]), c["name"]
            assert str(r["requests"]["cpu"]).isdigit() and int(r["requests"]["cpu"]) >= 1, c["name"]
    groups = plan.get("groups", [plan])
    asked = sorted(int(s["containers"][0]["resources"]["requests"]["cpu"]) for s in specs)
    planned = sorted(len({c for r in g["ranks"] for c in cpulist(r["cpus"])}) for g in groups)
    assert asked == planned


def pod_templates(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    if doc["kind"] == "LeaderWorkerSet":
        return [doc["spec"]["leaderWorkerTemplate"]["workerTemplate"]]
    return [j["template"]["spec"]["template"] for j in doc["spec"]["replicatedJobs"]]


@lru_cache(maxsize=None)
def crd_schema(kind: str) -> Dict[str, Any]:
    for path in CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["names"]["kind"] == kind:
            return crd
    raise AssertionError(f"no CRD of {kind}")


def closed(schema: Any) -> Any:
    """A CRD schema that refuses unknown fields, as `kubectl apply --validate=strict` does:
    every object with `properties` and no other rule for the rest gets
    `additionalProperties: false`."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    return out


def crd_schema_takes(doc: Dict[str, Any]) -> None:
    crd = crd_schema(doc["kind"])
    group, version = doc["apiVersion"].split("/")
    assert group == crd["spec"]["group"]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    assert served["served"] and served.get("storage", False), f"{doc['apiVersion']} is stored"
    schema = closed(served["schema"]["openAPIV3Schema"])
    body = copy.deepcopy(doc)
    body["metadata"] = {}  # ObjectMeta is the API server's, not the CRD's
    jsonschema.validate(body, schema)


def test_the_crd_check_refuses_an_unknown_field() -> None:
    spec, topology, sets = next(c for c in CASES if "vllm_two_nodes" in c[0])
    docs, _ = compiled(spec, topology, tuple(sets))
    lws = copy.deepcopy(next(d for d in docs if d["kind"] == "LeaderWorkerSet"))
    lws["spec"]["leaderWorkerTemplate"]["sizee"] = 2
    with pytest.raises(jsonschema.ValidationError):
        crd_schema_takes(lws)


# -- DRA: the claims against the drivers' ResourceSlices ---------------------------------------


@lru_cache(maxsize=None)
def machine(topology: str) -> Dict[str, Any]:
    return json.loads(run("topo", "--topology", topology, "--format", "json"))


def cpulist(text: str) -> List[int]:
    cpus: List[int] = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def pcie_root(device: Dict[str, Any]) -> str:
    """The root of the device's PCI path as sysfs names it (`pci0000:15`); a fixture's opaque
    first bridge stands for its own root."""
    path = device.get("pci_path") or [device["pci"]]
    first = path[0]
    if first.startswith("host:"):
        return "pci" + first.removeprefix("host:")
    return f"pci-{first}"


def slices(topology: str, reserved: List[int], cpu_mode: str) -> List[Dict[str, Any]]:
    """Every device the drivers publish for the machine: NVIDIA's GPU driver, the network driver
    (every NIC with a PCI address), and the CPU driver in `cpu_mode`, which leaves out the CPUs
    it is told to reserve."""
    m = machine(topology)
    standard = lambda d: {"pciBusID": d["pci"], "pcieRoot": pcie_root(d),  # noqa: E731
                          **({"numaNode": d["numa_node"]} if "numa_node" in d else {})}
    devices: List[Dict[str, Any]] = []
    for g in m.get("gpus", []):
        devices.append({"class": "gpu.nvidia.com", "name": f"gpu-{g['index']}",
                        "attributes": {STANDARD: standard(g), "gpu.nvidia.com": {"index": g["index"]}},
                        "capacity": {}})
    for n in m.get("nics", []):
        if "pci" in n:
            devices.append({"class": "dranet", "name": n["name"],
                            "attributes": {STANDARD: standard(n)}, "capacity": {}})
    for node in m["nodes"]:
        cpus = [c for c in cpulist(node.get("cpus", "")) if c not in reserved]
        if not cpus:
            continue
        if cpu_mode == "grouped":
            devices.append({"class": CPU_DRIVER, "name": f"cpudevnuma{node['id']:03}",
                            "attributes": {STANDARD: {"numaNode": node["id"]},
                                           CPU_DRIVER: {"numCPUs": len(cpus)}},
                            "capacity": {f"{CPU_DRIVER}/cpu": len(cpus)}})
        else:
            for c in cpus:
                devices.append({"class": CPU_DRIVER, "name": f"cpudev{c:03}",
                                "attributes": {STANDARD: {"numaNode": node["id"]},
                                               CPU_DRIVER: {"cpuID": c}},
                                "capacity": {}})
    return devices


CEL = celpy.Environment()


@lru_cache(maxsize=None)
def program(expression: str) -> Any:
    return CEL.program(CEL.compile(expression))


def selected(request: Dict[str, Any], device: Dict[str, Any]) -> bool:
    exactly = request["exactly"]
    if device["class"] != exactly["deviceClassName"]:
        return False
    activation = {"device": celpy.json_to_cel({"driver": device["class"],
                                               "attributes": device["attributes"],
                                               "capacity": device["capacity"]})}
    if not all(bool(program(s["cel"]["expression"]).evaluate(activation))
               for s in exactly.get("selectors", [])):
        return False
    asked = exactly.get("capacity", {}).get("requests", {})
    return all(device["capacity"].get(k, 0) >= int(v) for k, v in asked.items())


def allocations(claim: Dict[str, Any], devices: List[Dict[str, Any]], limit: int = 2) -> List[Dict[str, List[str]]]:
    """The allocations the scheduler could make for a claim (at most `limit`): each request's
    `count` devices it selects, no device twice, every constraint holding."""
    spec = claim["spec"]["spec"]["devices"]
    requests = spec["requests"]
    candidates = [[d for d in devices if selected(r, d)] for r in requests]
    found: List[Dict[str, List[str]]] = []

    def attribute(device: Dict[str, Any], qualified: str) -> Any:
        domain, _, name = qualified.rpartition("/")
        return device["attributes"].get(domain, {}).get(name)

    def holds(chosen: Dict[str, List[Dict[str, Any]]]) -> bool:
        for c in spec.get("constraints", []):
            values = [attribute(d, c["matchAttribute"]) for r in c["requests"] for d in chosen[r]]
            if None in values or len(set(map(str, values))) > 1:
                return False
        return True

    def walk(i: int, used: set, chosen: Dict[str, List[Dict[str, Any]]]) -> None:
        if len(found) >= limit:
            return
        if i == len(requests):
            if holds(chosen):
                found.append({r: sorted(d["name"] for d in ds) for r, ds in chosen.items()})
            return
        r = requests[i]
        free = [d for d in candidates[i] if d["name"] not in used]
        for combo in itertools.combinations(free, r["exactly"].get("count", 1)):
            walk(i + 1, used | {d["name"] for d in combo}, {**chosen, r["name"]: list(combo)})

    walk(0, set(), {})
    return found


def groups_of(plan: Dict[str, Any], topology: Optional[str]) -> Iterator[Tuple[str, Dict[str, Any], str]]:
    """Each group's name (`""` for a job of one group), plan and machine."""
    for g in plan.get("groups", [plan]):
        yield g.get("group", ""), g, g["topology"].get("file") or topology


def claim_named(docs: List[Dict[str, Any]], name: str) -> Optional[Dict[str, Any]]:
    return next((d for d in docs if d["kind"] == "ResourceClaimTemplate"
                 and d["metadata"]["name"] == name), None)


DRA_CASES = [c for c in CASES if "kubernetes.devices=device-plugin" not in c[2]
             and ("devices: dra" in (REPO / c[0]).read_text() or c[2])]


@pytest.mark.parametrize("case", DRA_CASES, ids=ids)
def test_each_claim_admits_only_the_plans_devices(case: Tuple[str, Optional[str], List[str]]) -> None:
    docs, plan = compiled(case[0], case[1], tuple(case[2]))
    base = next(d for d in docs if d["kind"] == "ConfigMap")["metadata"]["name"].removesuffix("-plan")
    checked = 0
    for group, g, topology in groups_of(plan, case[1]):
        prefix = f"{base}-{group}" if group else base
        reserved = cpulist(g.get("reserved_cpus", "")) + cpulist(g.get("excluded_cpus", ""))
        devices_claim = claim_named(docs, f"{prefix}-devices")
        cpus_claim = claim_named(docs, f"{prefix}-cpus")
        assert cpus_claim is not None, f"{prefix}-cpus"
        grouped = "numaNode ==" in json.dumps(cpus_claim)
        published = slices(topology, reserved, "grouped" if grouped else "individual")
        by_name = {d["name"]: d for d in published}
        for claim in filter(None, [devices_claim, cpus_claim]):
            asked = sum(r["exactly"].get("count", 1) for r in claim["spec"]["spec"]["devices"]["requests"])
            assert asked <= MAX_DEVICES_PER_CLAIM, claim["metadata"]["name"]
            found = allocations(claim, published)
            assert len(found) == 1, f"{claim['metadata']['name']} admits {len(found)} allocations"
            got = [by_name[n] for names in found[0].values() for n in names]
            if claim is devices_claim:
                want_pci = {p for r in g["ranks"] for p in r.get("gpu_pci", []) + r.get("nic_pci", [])}
                assert {d["attributes"][STANDARD]["pciBusID"] for d in got} == want_pci
            else:
                plan_cpus = {c for r in g["ranks"] for c in cpulist(r["cpus"])}
                node_cpus = {n["id"]: set(cpulist(n.get("cpus", ""))) for n in machine(topology)["nodes"]}
                if grouped:
                    want = {n: len(plan_cpus & cpus) for n, cpus in node_cpus.items() if plan_cpus & cpus}
                    asked_per_node = {
                        int(r["exactly"]["selectors"][0]["cel"]["expression"].rsplit("==", 1)[1]):
                            int(r["exactly"]["capacity"]["requests"][f"{CPU_DRIVER}/cpu"])
                        for r in claim["spec"]["spec"]["devices"]["requests"]}
                    assert asked_per_node == want
                    assert {d["attributes"][STANDARD]["numaNode"] for d in got} == set(want)
                else:
                    assert {d["attributes"][CPU_DRIVER]["cpuID"] for d in got} == plan_cpus
            checked += 1
    assert checked >= 1


def test_a_claim_that_admits_another_allocation_is_caught() -> None:
    spec, topology, sets = next(c for c in DRA_CASES if "dra_individual_one_node" in c[0])
    docs, plan = compiled(spec, topology, tuple(sets))
    claim = copy.deepcopy(claim_named(docs, "small-devices"))
    assert claim is not None
    del claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
    published = slices(topology or "", [], "individual")
    assert len(allocations(claim, published)) > 1
    cpus = copy.deepcopy(claim_named(docs, "small-cpus"))
    assert cpus is not None
    request = cpus["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    request["count"] -= 1
    assert len(allocations(cpus, published)) > 1
