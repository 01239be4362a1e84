//! `--emit k8s` and `--emit kubelet`: every case in tests/cases/k8s gives one snapshot (the
//! manifests, the kubelet fragment and the warnings, or the full diagnostic for `err_*`
//! cases), and on every fixture machine the kubelet fragment raises the Topology Manager's
//! limit exactly where the machine has more than 8 NUMA nodes and reserves exactly the CPUs
//! the plan leaves out. tests/python/test_kubernetes.py checks the manifests against
//! Kubernetes' own schemas and evaluates their claims' CEL.

mod common;

use common::{case_topology, fixtures, numaplan, numaplan_in, rel};
use numaplan::cpuset::CpuSet;

#[test]
fn kubernetes_cases() {
    insta::glob!("cases/k8s", "*.yaml", |path| {
        let case = rel(path);
        let topology = case_topology(path);
        let emit =
            |kind: &str| numaplan(&["compile", &case, "--topology", &topology, "--emit", kind]);
        let k8s = emit("k8s");
        let input = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        let shown = match name.starts_with("err_") {
            true => {
                assert_eq!(k8s.code, 1, "{case} must fail:\n{}", k8s.stdout);
                assert!(k8s.stdout.is_empty(), "{case}: nothing on stdout");
                k8s.stderr
            }
            false => {
                assert_eq!(k8s.code, 0, "{case}:\n{}", k8s.stderr);
                let kubelet = emit("kubelet");
                assert_eq!(kubelet.code, 0, "{case}:\n{}", kubelet.stderr);
                format!(
                    "== stderr\n{}== --emit k8s\n{}== --emit kubelet\n{}",
                    k8s.stderr, k8s.stdout, kubelet.stdout
                )
            }
        };
        insta::with_settings!({description => input}, { insta::assert_snapshot!(shown) });
    });
}

/// What a kubelet fragment says of `key` (a top-level key's value, or a nested key's line).
fn value_of(fragment: &str, key: &str) -> Option<String> {
    fragment
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(&format!("{key}: ")))
        .map(|v| v.trim_matches('"').to_string())
}

#[test]
fn kubelet_fragments_raise_the_numa_limit_past_8_nodes_and_reserve_what_the_plan_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen_past_8 = false;
    for fixture in fixtures() {
        let topology = numaplan::topology::load_file(&fixture).unwrap();
        let job = format!(
            "command: [x]\ntopology: {}\ncpu: {{policy: auto, reserve_cores: 1}}\n",
            fixture.display()
        );
        std::fs::write(dir.path().join("job.yaml"), job).unwrap();
        let plan = numaplan_in(dir.path(), &["compile", "job.yaml", "--format", "json"]).ok();
        let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
        let fragment = numaplan_in(dir.path(), &["compile", "job.yaml", "--emit", "kubelet"]).ok();
        let name = fixture.file_name().unwrap().to_string_lossy().to_string();
        let nodes = topology.nodes().len();
        let limit = value_of(&fragment, "max-allowable-numa-nodes");
        match nodes > 8 {
            true => {
                seen_past_8 = true;
                assert_eq!(limit, Some(nodes.to_string()), "{name}: {nodes} NUMA nodes")
            }
            false => assert_eq!(limit, None, "{name}: {nodes} NUMA nodes"),
        }
        // The plan's own record of what it leaves out, against the fragment's reservation.
        let mut left_out: CpuSet = plan["reserved_cpus"].as_str().unwrap().parse().unwrap();
        if let Some(excluded) = plan["excluded_cpus"].as_str() {
            left_out = left_out.union(&excluded.parse().unwrap());
        }
        let reserved: CpuSet = value_of(&fragment, "reservedSystemCPUs")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(reserved, left_out, "{name}");
        // No rank is planned on a reserved CPU.
        for rank in plan["ranks"].as_array().unwrap() {
            let cpus: CpuSet = rank["cpus"].as_str().unwrap().parse().unwrap();
            assert!(
                !cpus.intersects(&reserved),
                "{name}: rank on a reserved CPU"
            );
        }
    }
    assert!(
        seen_past_8,
        "a fixture of more than 8 NUMA nodes (GH200's 36) is among them"
    );
}

/// `compile --check` of manifests made from another spelling of the spec's path is up to date:
/// the plan's own header inside the ConfigMap, indented, is compared as the script's is.
#[test]
fn check_of_manifests_ignores_where_they_were_made_from() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("job.k8s.yaml");
    let out = out.to_str().unwrap();
    let spec = "examples/dgx-h100-k8s.yaml";
    numaplan(&["compile", spec, "--emit", "k8s", "-o", out]).ok();
    let again = numaplan(&[
        "compile",
        &format!("./{spec}"),
        "--emit",
        "k8s",
        "-o",
        out,
        "--check",
    ]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    let other = numaplan(&[
        "compile",
        spec,
        "--emit",
        "k8s",
        "-o",
        out,
        "--check",
        "--set",
        "kubernetes.memory=1Ti",
    ]);
    assert_eq!(other.code, 1, "a changed manifest is stale");
}
