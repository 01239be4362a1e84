//! A group's pod: its one container running the plan's own launch (`numaplan exec` of the
//! plan, or the engine's script) with the node rank from the workload's index, Guaranteed
//! (integer CPUs, requests equal to limits), `SYS_NICE` where the plan sets a memory policy,
//! and its devices as the spec asks: DRA claims or the device plugins' counts.

use super::claims::{CPUS_CLAIM, DEVICES_CLAIM};
use super::names::{Names, PLAN_DIR, PLAN_KEY, SCRIPT_KEY};
use super::node::NodeFacts;
use super::yaml::{Map, Yaml};
use crate::spec::kubernetes::{Devices, KubernetesSpec, PodSecurity, Sidecar};
use crate::topology::devices::Vendor;

/// Where a pod's node rank comes from, and how it reaches the master.
pub enum Rank {
    /// A pod of one node.
    Alone,
    /// An Indexed Job's pod (also a JobSet's): the completion index, the master's name.
    Indexed { master: String },
    /// A LeaderWorkerSet's pod: its worker index; the leader is the master.
    Worker,
}

use crate::variables::{NUMAPLAN_NODE_RANK as NODE_RANK, NUMAPLAN_POD as POD};

/// What the container runs: the launch and the words after it.
pub struct Launch<'a> {
    /// The launch script in the ConfigMap (an engine's or torchrun's), or `numaplan exec` of
    /// the plan.
    pub script: bool,
    /// The group a node of a job of groups runs.
    pub group: Option<&'a str>,
    /// How `exec` and `bind` check what the pod was given (`NUMAPLAN_POD`): `exact` where the
    /// claims name the plan's CPUs, else `given`; `None` for a launch that cannot run on
    /// other CPUs than the plan's (vLLM's, whose CPU lists are in its script: W0229).
    pub pod: Option<&'static str>,
    pub args: &'a [String],
}

/// The pod template's `spec`.
pub fn spec(
    facts: &NodeFacts,
    k8s: &KubernetesSpec,
    names: &Names,
    group: &str,
    launch: &Launch,
    rank: &Rank,
) -> Map {
    let claims = k8s.devices == Devices::Dra;
    let mut spec = Map::new();
    if let Rank::Indexed { .. } = rank {
        spec = spec.why(
            "subdomain",
            names.base.as_str(),
            "The headless Service: each pod is <pod hostname>.<subdomain>, the master too.",
        );
    }
    if !k8s.sidecars.is_empty() {
        spec = spec.why(
            "initContainers",
            k8s.sidecars.iter().map(sidecar).collect::<Vec<Yaml>>(),
            "Sidecars (restartable init containers), Guaranteed too: their whole CPUs are their \
             own, outside the plan's.",
        );
    }
    spec = spec.set(
        "containers",
        vec![container(facts, k8s, launch, rank, claims)],
    );
    if claims {
        let mut list = Vec::new();
        if !facts.gpus.is_empty() || !facts.nics.is_empty() {
            list.push(pod_claim(DEVICES_CLAIM, &names.claim(group, DEVICES_CLAIM)));
        }
        list.push(pod_claim(CPUS_CLAIM, &names.claim(group, CPUS_CLAIM)));
        spec = spec.set("resourceClaims", list);
    }
    spec.set(
        "volumes",
        vec![Yaml::from(Map::new().set("name", "plan").set(
            "configMap",
            Map::new().set("name", names.config_map()),
        ))],
    )
}

fn sidecar(s: &Sidecar) -> Yaml {
    let amounts = || {
        Map::new()
            .set("cpu", s.cpus.to_string())
            .set("memory", s.memory.as_str())
    };
    let c = Map::new()
        .set("name", s.name.as_str())
        .set("image", s.image.as_str());
    let c = match s.command.is_empty() {
        true => c,
        false => c.set("command", s.command.clone()),
    };
    c.set("restartPolicy", "Always")
        .set(
            "resources",
            Map::new()
                .set("requests", amounts())
                .set("limits", amounts()),
        )
        .into()
}

fn pod_claim(name: &str, template: &str) -> Yaml {
    Map::new()
        .set("name", name)
        .set("resourceClaimTemplateName", template)
        .into()
}

fn container(
    facts: &NodeFacts,
    k8s: &KubernetesSpec,
    launch: &Launch,
    rank: &Rank,
    claims: bool,
) -> Yaml {
    let mut c = Map::new()
        .set("name", "ranks")
        .set("image", k8s.image.clone().unwrap_or_default())
        .why(
            "command",
            command(launch, rank),
            "The plan's own launch, which checks this node and binds every rank before it starts.",
        );
    let (mut env, mut why) = (Vec::new(), Vec::new());
    if let Some(mode) = launch.pod {
        env.push(Yaml::from(Map::new().set("name", POD).set("value", mode)));
        why.push(format!(
            "{POD}: how `exec` and `bind` check what the pod was given against the plan \
             (docs/kubernetes.md)"
        ));
    }
    if !matches!(rank, Rank::Alone) {
        env.push(node_rank(rank));
        why.push(format!("{NODE_RANK}: this pod's node of the job"));
    }
    if !env.is_empty() {
        c = c.why("env", env, format!("{}.", why.join("; ")));
    }
    c = c.why(
        "resources",
        resources(facts, k8s, claims),
        guaranteed_why(facts, k8s, claims),
    );
    if let Some(security) = security(facts, k8s) {
        c = c.set("securityContext", security);
    }
    c.set(
        "volumeMounts",
        vec![Yaml::from(
            Map::new()
                .set("name", "plan")
                .set("mountPath", PLAN_DIR)
                .set("readOnly", true),
        )],
    )
    .into()
}

fn guaranteed_why(facts: &NodeFacts, k8s: &KubernetesSpec, claims: bool) -> String {
    let cpus = facts.cpus.len();
    let how = match (claims, k8s.cpus) {
        (true, crate::spec::kubernetes::DraCpus::Individual) => {
            "the CPU claim names which: the plan's".to_string()
        }
        (true, _) => "the CPU claim takes them from the plan's NUMA nodes".to_string(),
        (false, _) => "the static CPU Manager chooses which (docs/kubernetes.md)".to_string(),
    };
    format!(
        "Guaranteed QoS (requests equal limits, whole CPUs): the plan's {cpus} CPUs on a node; {how}."
    )
}

/// The container's command: the launch script or `numaplan exec`, with the node's rank and
/// the master where the job has several nodes.
fn command(launch: &Launch, rank: &Rank) -> Vec<String> {
    let mut words: Vec<String> = match launch.script {
        true => vec!["bash".into(), format!("{PLAN_DIR}/{SCRIPT_KEY}")],
        false => vec!["numaplan".into(), "exec".into()],
    };
    if let Some(g) = launch.group {
        words.extend(["--group".into(), g.into()]);
    }
    let master = match rank {
        Rank::Alone => None,
        Rank::Indexed { master } => Some(master.clone()),
        Rank::Worker => Some("$(LWS_LEADER_ADDRESS)".into()),
    };
    if let Some(master) = master {
        words.extend([
            "--node-rank".into(),
            format!("$({NODE_RANK})"),
            "--master-addr".into(),
            master,
        ]);
    }
    if !launch.script {
        words.push(format!("{PLAN_DIR}/{PLAN_KEY}"));
    }
    if !launch.args.is_empty() {
        words.push("--".into());
        words.extend(launch.args.iter().cloned());
    }
    words
}

/// `NUMAPLAN_NODE_RANK` from the pod's own index, by the downward API.
fn node_rank(rank: &Rank) -> Yaml {
    let field = match rank {
        Rank::Worker => "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']",
        _ => "metadata.annotations['batch.kubernetes.io/job-completion-index']",
    };
    Map::new()
        .set("name", NODE_RANK)
        .set(
            "valueFrom",
            Map::new().set("fieldRef", Map::new().set("fieldPath", field)),
        )
        .into()
}

/// Requests equal to limits: CPUs, memory, and under the device plugins the GPUs' count.
fn resources(facts: &NodeFacts, k8s: &KubernetesSpec, claims: bool) -> Map {
    let amounts = || {
        let m = Map::new()
            .set("cpu", facts.cpus.len().to_string())
            .set("memory", k8s.memory.clone().unwrap_or_default());
        match (claims, facts.gpus.len(), facts.gpu_vendor) {
            (false, n, Some(vendor)) if n > 0 => {
                m.set(device_plugin_resource(vendor), n.to_string())
            }
            _ => m,
        }
    };
    let r = Map::new()
        .set("requests", amounts())
        .set("limits", amounts());
    match claims {
        true => {
            let mut list = Vec::new();
            if !facts.gpus.is_empty() || !facts.nics.is_empty() {
                list.push(Yaml::from(Map::new().set("name", DEVICES_CLAIM)));
            }
            list.push(Map::new().set("name", CPUS_CLAIM).into());
            r.set("claims", list)
        }
        false => r,
    }
}

/// The extended resource a vendor's device plugin advertises its GPUs as.
fn device_plugin_resource(vendor: Vendor) -> &'static str {
    match vendor {
        Vendor::Nvidia => "nvidia.com/gpu",
        Vendor::Amd => "amd.com/gpu",
        Vendor::Intel => "gpu.intel.com/i915",
    }
}

/// `SYS_NICE` where a rank has a memory policy and the namespace's Pod Security lets the pod
/// add it; under `restricted`, what that level demands of every container.
fn security(facts: &NodeFacts, k8s: &KubernetesSpec) -> Option<Map> {
    match k8s.pod_security {
        PodSecurity::Privileged if facts.memory_policy => Some(Map::new().why(
            "capabilities",
            Map::new().set("add", vec!["SYS_NICE"]),
            "set_mempolicy and mbind, which the ranks' memory policy needs: the runtime's \
             default seccomp profile allows them only with CAP_SYS_NICE.",
        )),
        PodSecurity::Privileged | PodSecurity::Baseline => None,
        PodSecurity::Restricted => Some(
            Map::new()
                .set("allowPrivilegeEscalation", false)
                .set("runAsNonRoot", true)
                .set("capabilities", Map::new().set("drop", vec!["ALL"]))
                .set("seccompProfile", Map::new().set("type", "RuntimeDefault")),
        ),
    }
}
