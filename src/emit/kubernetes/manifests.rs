//! `--emit k8s`: a job as the objects `kubectl apply -f` takes, in one stream: the plan (and an
//! engine's or torchrun's launch script) in a ConfigMap, a headless Service where an Indexed
//! Job's pods must find their master, each group's claim templates under `devices: dra`, and
//! the workload: a Pod (one node), an Indexed Job, a LeaderWorkerSet (a serving engine on
//! several nodes) or a JobSet (a job of groups, one replicated job each).

use super::claims;
use super::names::Names;
use super::node::NodeFacts;
use super::workloads::{config_map, exact_cpus, group_name, job_name, service, workload_document};
use super::yaml::stream;
use crate::diag::{Warning, codes};
use crate::emit::{EmitError, Origin};
use crate::plan::Plan;
use crate::plan::job::{JobPlan, Shape};
use crate::provenance;
use crate::spec::kubernetes::{Devices, KubernetesSpec, Workload, is_dns_label};
use crate::topology::Topology;

/// The most data a ConfigMap holds (the API server's limit on an object in etcd).
const CONFIG_MAP_BYTES: usize = 1024 * 1024;

/// A launch script the pods run, which the ConfigMap carries: an engine's or torchrun's.
#[derive(Clone, Copy)]
pub struct Script<'a> {
    pub text: &'a str,
    /// Its `--emit` name (`vllm`, `torchrun`).
    pub name: &'static str,
    /// Whether it starts a serving engine (which takes its model in `kubernetes.args`).
    pub engine: bool,
}

/// The job's manifests, and what they cannot give as the plan says (W0226, W0227).
pub fn manifests(
    job: &JobPlan,
    machines: &[Topology],
    origin: &Origin,
    script: Option<Script>,
) -> Result<(String, Vec<Warning>), EmitError> {
    let k8s = &job.groups[0].kubernetes;
    one_setting(job)?;
    for plan in &job.groups {
        required(plan, script.is_some_and(|s| s.engine))?;
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
        warnings.extend(lost(plan, &f, &names, script)?);
        facts.push(f);
    }
    let carried = origin.plan_file.len() + script.map_or(0, |s| s.text.len());
    if carried > CONFIG_MAP_BYTES {
        return Err(EmitError::KubernetesShape {
            why: format!(
                "the plan and its launch script are {carried} bytes, and a ConfigMap holds at \
                 most {CONFIG_MAP_BYTES} (1 MiB)"
            ),
            help: "plan fewer ranks a node, or fewer groups, in one job",
        });
    }
    let mut docs = vec![config_map(&names, origin.plan_file, script.map(|s| s.text))];
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
        script.is_some(),
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
            ("kubernetes.launch", k.torchrun != first.torchrun),
        ];
        if let Some((key, _)) = differs.iter().find(|(_, d)| *d) {
            return Err(EmitError::KubernetesShape {
                why: format!(
                    "group `{}` sets `{key}` otherwise than the job: the job's objects share one",
                    group_name(plan)
                ),
                help: "set it at the top level only, for every group",
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
            help: "leave `kubernetes.workload` to numaplan (a Pod for one node, an Indexed Job, \
                   a LeaderWorkerSet for a serving engine, a JobSet for groups), or name one \
                   that runs the job's shape",
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
            help: "rename the group with lowercase letters, digits and `-`, starting with a letter",
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

/// What the pod cannot be given as the plan says: a memory policy where the namespace refuses
/// `SYS_NICE` (an error where the policy is required), NICs no claim names.
fn lost(
    plan: &Plan,
    f: &NodeFacts,
    names: &Names,
    script: Option<Script>,
) -> Result<Vec<Warning>, EmitError> {
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
    // vLLM's CPU lists are in its script: a pod given other CPUs cannot run it. The other
    // launches rename the plan's CPUs to the pod's (`NUMAPLAN_POD=given`).
    if let Some(script) = script.filter(|s| s.name == "vllm" && !exact_cpus(k)) {
        out.push(Warning::new(
            codes::W0229_KUBERNETES_ENGINE_CPUS,
            format!(
                "{g}the {} script binds the plan's own CPUs and refuses a pod given others \
                 (E0411), and under `devices: {}` the {} chooses the pod's CPUs: a pod starts \
                 only where they are the plan's",
                script.name,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_past_what_a_config_map_holds_is_refused() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/topologies/nvidia-dgx-h100.yaml"
        );
        let machine = crate::topology::load_file(std::path::Path::new(fixture))
            .unwrap_or_else(|_| panic!("the fixture loads"));
        let rank = "{rank: 0, local_rank: 0, gpus: [], numa_node: 0, cpus: '1', cores: 1, \
                    memory: {policy: none, nodes: ''}, nics: [], env: {}}";
        let mut plan =
            crate::plan_file::test_plan("cpus: 224, numa_nodes: 2, gpus: 8", &[rank.to_string()]);
        plan.reserved = [0].into_iter().collect();
        plan.command = vec!["true".into()];
        plan.kubernetes.image = Some("img:1".into());
        plan.kubernetes.memory = Some("1Gi".into());
        let job = JobPlan::of_one_group(plan);
        let emit = |plan_file: &str| {
            let origin = Origin {
                header: provenance::Header {
                    regenerate: &[],
                    spec_file: "job.yaml",
                    topology: "t",
                    fingerprint: "f",
                },
                plan_file,
                script: None,
                plan_ids: &[],
            };
            manifests(&job, std::slice::from_ref(&machine), &origin, None)
        };
        assert!(emit(&"x".repeat(CONFIG_MAP_BYTES)).is_ok());
        let refused = emit(&"x".repeat(CONFIG_MAP_BYTES + 1));
        assert!(
            matches!(&refused, Err(EmitError::KubernetesShape { why, .. }) if why.contains("1 MiB")),
            "{:?}",
            refused.err()
        );
    }
}
