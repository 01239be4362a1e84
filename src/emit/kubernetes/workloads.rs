//! The objects of `--emit k8s` (`manifests.rs` checks and composes them): the ConfigMap of the
//! plan, the headless Service of an Indexed Job, and the workloads, a Pod, an Indexed Job, a
//! LeaderWorkerSet or a JobSet, each with the pod template of its group (`pod.rs`).

use super::names::{Names, PLAN_KEY, SCRIPT_KEY};
use super::node::NodeFacts;
use super::pod::{self, Launch, Rank};
use super::yaml::{Map, Yaml};
use crate::plan::Plan;
use crate::plan::job::JobPlan;
use crate::spec::Engine;
use crate::spec::kubernetes::{Devices, DraCpus, KubernetesSpec, Workload};

/// A document of the stream and the comment above it.
pub type Document = (Vec<String>, Yaml);

/// A group's name, `""` for the one group of a job without groups.
pub fn group_name(plan: &Plan) -> &str {
    plan.group().map(|g| g.name.as_str()).unwrap_or("")
}

/// A JobSet's replicated job of a group: the group's name, or `ranks`.
pub fn job_name(plan: &Plan) -> &str {
    match group_name(plan) {
        "" => "ranks",
        g => g,
    }
}

/// Whether the pod's claims name the plan's own CPUs (DRA, the CPU driver's `individual` mode).
pub fn exact_cpus(k: &KubernetesSpec) -> bool {
    k.devices == Devices::Dra && k.cpus == DraCpus::Individual
}

pub fn config_map(names: &Names, plan: &str, script: Option<&str>) -> Document {
    let mut data = Map::new().set(PLAN_KEY, Yaml::Text(plan.to_string()));
    if let Some(s) = script {
        data = data.set(SCRIPT_KEY, Yaml::Text(s.to_string()));
    }
    (
        vec!["The reviewed plan, which every pod mounts and runs.".into()],
        Map::new()
            .set("apiVersion", "v1")
            .set("kind", "ConfigMap")
            .set("metadata", names.metadata(&names.config_map()))
            .set("data", data)
            .into(),
    )
}

/// The headless Service that gives an Indexed Job's pods their names (`NAME-0.NAME`).
pub fn service(names: &Names) -> Document {
    (
        vec!["Each pod's DNS name, the master's (index 0) among them.".into()],
        Map::new()
            .set("apiVersion", "v1")
            .set("kind", "Service")
            .set("metadata", names.metadata(&names.base))
            .set(
                "spec",
                Map::new()
                    .set("clusterIP", "None")
                    .why(
                        "publishNotReadyAddresses",
                        true,
                        "The ranks meet before any pod is ready.",
                    )
                    .set(
                        "selector",
                        Map::new().set("batch.kubernetes.io/job-name", names.base.as_str()),
                    ),
            )
            .into(),
    )
}

fn pod_template(spec: Map, names: &Names) -> Map {
    Map::new()
        .set(
            "metadata",
            Map::new().set(
                "labels",
                Map::new().set("app.kubernetes.io/name", names.base.as_str()),
            ),
        )
        .set("spec", spec)
}

pub fn workload_document(
    job: &JobPlan,
    facts: &[NodeFacts],
    workload: Workload,
    names: &Names,
    script: bool,
) -> Document {
    let pod_spec = |plan: &Plan, f: &NodeFacts, rank: &Rank| {
        let group = group_name(plan);
        let vllm = plan.engine == Some(Engine::Vllm);
        let launch = Launch {
            script,
            group: (!group.is_empty()).then_some(group),
            pod: match (exact_cpus(&plan.kubernetes), vllm) {
                (true, _) => Some("exact"),
                (false, false) => Some("given"),
                (false, true) => None,
            },
            args: &plan.kubernetes.args,
        };
        pod::spec(f, &plan.kubernetes, names, group, &launch, rank)
    };
    let plan = &job.groups[0];
    match workload {
        Workload::Pod => (
            vec!["The ranks of the plan's one node.".into()],
            object(names, "v1", "Pod")
                .set(
                    "spec",
                    pod_spec(plan, &facts[0], &Rank::Alone).set("restartPolicy", "Never"),
                )
                .into(),
        ),
        Workload::Job => {
            let rank = Rank::Indexed {
                master: format!("{0}-0.{0}", names.base),
            };
            let pod = pod_spec(plan, &facts[0], &rank).set("restartPolicy", "Never");
            (
                vec![format!(
                    "{} nodes, one pod each, all at once; the node rank is the pod's completion index.",
                    plan.nodes
                )],
                object(names, "batch/v1", "Job")
                    .set("spec", indexed_job(plan.nodes, pod_template(pod, names)))
                    .into(),
            )
        }
        Workload::LeaderWorkerSet => {
            let pod = pod_template(pod_spec(plan, &facts[0], &Rank::Worker), names);
            (
                vec![format!(
                    "{} nodes as one group; the leader (worker 0) is the master.",
                    plan.nodes
                )],
                leader_worker_set(names, plan.nodes, pod),
            )
        }
        Workload::JobSet => {
            let rank = Rank::Indexed {
                master: format!("{0}-{1}-0-0.{0}", names.base, job_name(plan)),
            };
            let pods = job.groups.iter().zip(facts).map(|(plan, f)| {
                let pod = pod_spec(plan, f, &rank).set("restartPolicy", "Never");
                (plan, pod_template(pod, names))
            });
            (
                vec![
                    "One replicated job per group; the first group's first pod is the master."
                        .into(),
                ],
                job_set(names, pods),
            )
        }
    }
}

/// An object's `apiVersion`, `kind` and metadata, named by the base name.
fn object(names: &Names, api: &str, kind: &str) -> Map {
    Map::new()
        .set("apiVersion", api)
        .set("kind", kind)
        .set("metadata", names.metadata(&names.base))
}

fn leader_worker_set(names: &Names, nodes: u32, pod: Map) -> Yaml {
    let template = Map::new()
        .set("size", nodes)
        .set("restartPolicy", "RecreateGroupOnPodRestart")
        .set("workerTemplate", pod);
    object(names, "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
        .set(
            "spec",
            Map::new()
                .set("replicas", 1u32)
                .set("leaderWorkerTemplate", template),
        )
        .into()
}

fn job_set<'a>(names: &Names, pods: impl Iterator<Item = (&'a Plan, Map)>) -> Yaml {
    let jobs: Vec<Yaml> = pods
        .map(|(plan, pod)| {
            Map::new()
                .set("name", job_name(plan))
                .set("replicas", 1u32)
                .set(
                    "template",
                    Map::new().set("spec", indexed_job(plan.nodes, pod)),
                )
                .into()
        })
        .collect();
    object(names, "jobset.x-k8s.io/v1alpha2", "JobSet")
        .set(
            "spec",
            Map::new()
                .set("network", Map::new().set("enableDNSHostnames", true))
                .set("replicatedJobs", jobs),
        )
        .into()
}

fn indexed_job(nodes: u32, template: Map) -> Map {
    Map::new()
        .set("completionMode", "Indexed")
        .set("completions", nodes)
        .why(
            "parallelism",
            nodes,
            "Every node's pod runs at once: the ranks meet.",
        )
        .why(
            "backoffLimit",
            0u32,
            "A failed rank fails the job, as under torchrun.",
        )
        .set("template", template)
}
