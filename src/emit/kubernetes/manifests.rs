//! `--emit k8s`: a job as the objects `kubectl apply -f` takes, in one stream: the plan (and an
//! engine's script) in a ConfigMap, a headless Service where an Indexed Job's pods must find
//! their master, each group's claim templates under `devices: dra`, and the workload: a Pod
//! (one node), an Indexed Job, a LeaderWorkerSet (a serving engine on several nodes) or a
//! JobSet (a job of groups, one replicated job each).

use super::claims;
use super::names::{Names, PLAN_KEY, SCRIPT_KEY};
use super::node::NodeFacts;
use super::pod::{self, Launch, Rank};
use super::yaml::{Map, Yaml, stream};
use crate::diag::{Warning, codes};
use crate::emit::{EmitError, Origin};
use crate::plan::Plan;
use crate::plan::job::{JobPlan, Shape};
use crate::provenance;
use crate::spec::kubernetes::{Devices, KubernetesSpec, Workload, is_dns_label};
use crate::topology::Topology;

type Document = (Vec<String>, Yaml);

/// The job's manifests, and what they cannot give as the plan says (W0226, W0227).
pub fn manifests(
    job: &JobPlan,
    machines: &[Topology],
    origin: &Origin,
    engine_script: Option<&str>,
) -> Result<(String, Vec<Warning>), EmitError> {
    let k8s = &job.groups[0].kubernetes;
    one_setting(job)?;
    for plan in &job.groups {
        required(plan, engine_script.is_some())?;
    }
    let workload = workload(job, k8s)?;
    group_names(job)?;
    let names = Names::new(
        k8s.name.as_deref(),
        job.name.as_deref(),
        k8s.namespace.clone(),
        longest_suffix(job, workload),
    )?;
    let mut warnings = Vec::new();
    let mut facts = Vec::new();
    for (plan, machine) in job.groups.iter().zip(machines) {
        let f = NodeFacts::of(plan, machine);
        if f.system_cpus.is_empty() {
            return Err(EmitError::KubernetesNoSystemCpus {
                group: plan.group().map(|g| g.name.clone()),
            });
        }
        warnings.extend(lost(plan, &f, &names)?);
        facts.push(f);
    }
    let mut docs = vec![config_map(&names, origin.plan_file, engine_script)];
    if workload == Workload::Job {
        docs.push(service(&names));
    }
    for (plan, f) in job.groups.iter().zip(&facts) {
        if plan.kubernetes.devices == Devices::Dra {
            docs.extend(claims::templates(
                f,
                &plan.kubernetes,
                &names,
                group_name(plan),
            )?);
        }
    }
    docs.push(workload_document(
        job,
        &facts,
        workload,
        &names,
        engine_script.is_some(),
    ));
    let mut header = origin.header.lines(provenance::File::Script);
    header.extend(
        job.groups
            .iter()
            .flat_map(Plan::listed_warnings)
            .map(|w| format!("warning: {w}")),
    );
    let allowed = job.allowed_warnings();
    header.extend(
        warnings
            .iter()
            .map(|w| format!("warning: {}", w.listed(&allowed))),
    );
    Ok((stream(&header, &docs), warnings))
}

fn group_name(plan: &Plan) -> &str {
    plan.group().map(|g| g.name.as_str()).unwrap_or("")
}

/// The settings every object shares are one: a group may not name another namespace, name or
/// workload than the job's.
fn one_setting(job: &JobPlan) -> Result<(), EmitError> {
    let first = &job.groups[0].kubernetes;
    for plan in &job.groups[1..] {
        let k = &plan.kubernetes;
        let differs = [
            ("kubernetes.namespace", k.namespace != first.namespace),
            ("kubernetes.name", k.name != first.name),
            ("kubernetes.workload", k.workload != first.workload),
        ];
        if let Some((key, _)) = differs.iter().find(|(_, d)| *d) {
            return Err(EmitError::KubernetesShape {
                why: format!(
                    "group `{}` sets `{key}` otherwise than the job: the job's objects share one",
                    group_name(plan)
                ),
            });
        }
    }
    Ok(())
}

/// What a manifest cannot guess: the image and the pod's memory, and an engine's arguments
/// (the model).
fn required(plan: &Plan, engine: bool) -> Result<(), EmitError> {
    let k = &plan.kubernetes;
    let missing = if k.image.is_none() {
        Some("kubernetes.image")
    } else if k.memory.is_none() {
        Some("kubernetes.memory")
    } else if engine && k.args.is_empty() {
        Some("kubernetes.args")
    } else {
        None
    };
    match (
        missing,
        engine || !plan.command.is_empty() || !k.args.is_empty(),
    ) {
        (Some(key), _) => Err(EmitError::KubernetesMissing {
            key,
            group: plan.group().map(|g| g.name.clone()),
        }),
        (None, false) => Err(EmitError::MissingCommand),
        (None, true) => Ok(()),
    }
}

/// The workload the spec names, where it can run the job's shape, else the shape's own.
fn workload(job: &JobPlan, k8s: &KubernetesSpec) -> Result<Workload, EmitError> {
    let plan = &job.groups[0];
    let grouped = job.shape == Shape::Groups;
    let chosen = k8s
        .workload
        .unwrap_or(match (grouped, plan.nodes, plan.engine.is_some()) {
            (true, _, _) => Workload::JobSet,
            (false, 1, _) => Workload::Pod,
            (false, _, true) => Workload::LeaderWorkerSet,
            (false, _, false) => Workload::Job,
        });
    let refused = match chosen {
        Workload::Pod if grouped || plan.nodes > 1 => Some("a Pod runs on one node"),
        Workload::Job | Workload::LeaderWorkerSet if grouped => {
            Some("its pods all share one template, and a job of groups has one per group")
        }
        _ => None,
    };
    match refused {
        Some(why) => Err(EmitError::KubernetesShape {
            why: format!(
                "`kubernetes.workload: {}` cannot run this job: {why}",
                chosen.name()
            ),
        }),
        None => Ok(chosen),
    }
}

/// A group's name is part of its objects' names (its claims, its JobSet job), which are DNS
/// labels.
fn group_names(job: &JobPlan) -> Result<(), EmitError> {
    match job
        .groups
        .iter()
        .map(group_name)
        .find(|g| !g.is_empty() && !is_dns_label(g, true))
    {
        Some(g) => Err(EmitError::KubernetesShape {
            why: format!(
                "group `{g}`'s name is part of its objects' names, which Kubernetes takes only \
                 as DNS labels (lowercase letters, digits and `-`, starting with a letter)"
            ),
        }),
        None => Ok(()),
    }
}

/// The most characters a name made from the base adds to it: the claim templates' and the
/// ConfigMap's endings, a pod's hostname (an Indexed Job's `NAME-INDEX`, a JobSet's
/// `NAME-JOB-0-INDEX`).
fn longest_suffix(job: &JobPlan, workload: Workload) -> usize {
    let digits = |n: u32| n.saturating_sub(1).to_string().len();
    job.groups
        .iter()
        .map(|plan| {
            let group = group_name(plan);
            let group_part = if group.is_empty() { 0 } else { group.len() + 1 };
            let claim = group_part + "-devices".len();
            let host = match workload {
                Workload::Job => 1 + digits(plan.nodes),
                Workload::JobSet => 1 + job_name(plan).len() + 3 + digits(plan.nodes),
                Workload::LeaderWorkerSet => 3 + digits(plan.nodes),
                Workload::Pod => 0,
            };
            claim.max(host)
        })
        .max()
        .unwrap_or(0)
}

/// A JobSet's replicated job of a group: the group's name, or `ranks`.
fn job_name(plan: &Plan) -> &str {
    match group_name(plan) {
        "" => "ranks",
        g => g,
    }
}

/// What the pod cannot be given as the plan says: a memory policy where the namespace refuses
/// `SYS_NICE` (an error where the policy is required), NICs no claim names.
fn lost(plan: &Plan, f: &NodeFacts, names: &Names) -> Result<Vec<Warning>, EmitError> {
    let k = &plan.kubernetes;
    let g = names.group_phrase(group_name(plan));
    let mut out = Vec::new();
    if f.memory_policy && !k.pod_security.allows_sys_nice() {
        if f.memory_required {
            return Err(EmitError::KubernetesMemoryPolicy {
                group: g,
                level: k.pod_security.name(),
            });
        }
        out.push(Warning::new(
            codes::W0226_POD_SECURITY_MEMORY,
            format!(
                "{g}Pod Security `{}` refuses SYS_NICE, so the ranks run without their memory \
                 policy (the runtime's seccomp profile refuses set_mempolicy without it)",
                k.pod_security.name()
            ),
        ));
    }
    if let Some(engine) = plan.engine.filter(|_| !exact_cpus(k)) {
        out.push(Warning::new(
            codes::W0229_KUBERNETES_ENGINE_CPUS,
            format!(
                "{g}the {} script binds the plan's own CPUs and refuses a pod given others \
                 (E0411), and under `devices: {}` the {} chooses the pod's CPUs: a pod starts \
                 only where they are the plan's",
                engine.word(),
                match k.devices {
                    Devices::Dra => "dra` with `cpus: grouped",
                    Devices::DevicePlugin => "device-plugin",
                },
                match k.devices {
                    Devices::Dra => "CPU driver",
                    Devices::DevicePlugin => "kubelet",
                }
            ),
        ));
    }
    let unclaimed: Vec<String> = match k.devices {
        Devices::DevicePlugin => f
            .nics
            .iter()
            .map(|d| d.label.clone())
            .chain(f.nics_unnamed.clone())
            .collect(),
        Devices::Dra => f.nics_unnamed.clone(),
    };
    if !unclaimed.is_empty() {
        let why = match k.devices {
            Devices::DevicePlugin => "the device plugins give GPUs and CPUs by count, not NICs",
            Devices::Dra => "the plan records no PCI address for them, which a claim selects by",
        };
        out.push(Warning::new(
            codes::W0227_KUBERNETES_UNCLAIMED,
            format!(
                "{g}the pod does not claim the plan's NICs {}: {why}; the ranks name them \
                 (NCCL_IB_HCA), so the pod must reach them otherwise (host network, an RDMA \
                 device plugin)",
                unclaimed.join(", ")
            ),
        ));
    }
    Ok(out)
}

/// Whether the pod's claims name the plan's own CPUs (DRA, the CPU driver's `individual` mode).
fn exact_cpus(k: &KubernetesSpec) -> bool {
    k.devices == Devices::Dra && k.cpus == crate::spec::kubernetes::DraCpus::Individual
}

fn config_map(names: &Names, plan: &str, script: Option<&str>) -> Document {
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
fn service(names: &Names) -> Document {
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

fn workload_document(
    job: &JobPlan,
    facts: &[NodeFacts],
    workload: Workload,
    names: &Names,
    engine: bool,
) -> Document {
    let pod_spec = |plan: &Plan, f: &NodeFacts, rank: &Rank| {
        let group = group_name(plan);
        let launch = Launch {
            engine,
            group: (!group.is_empty()).then_some(group),
            pod: match exact_cpus(&plan.kubernetes) {
                true => "exact",
                false => "given",
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
