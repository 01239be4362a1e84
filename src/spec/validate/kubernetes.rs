//! `kubernetes:` -> `KubernetesSpec`: names that Kubernetes would refuse (a namespace, the
//! objects' name, a DeviceClass), a memory that is not a quantity and an image with blanks are
//! refused here, where the spec can point at them; what only `--emit k8s` needs (the image,
//! the memory) is refused there when missing.

use super::Problems;
use crate::spec::kubernetes::{
    CPU_CLASS, Devices, DraCpus, GPU_CLASS, KubernetesSpec, NIC_CLASS, PodSecurity, Sidecar,
    Workload, is_dns_label,
};
use crate::spec::raw::{
    DevicesName, DraCpusName, JobSpec, KubernetesOptions, LaunchName, PodSecurityName, WorkloadName,
};

pub(super) fn kubernetes(raw: &JobSpec, p: &mut Problems) -> KubernetesSpec {
    let k = raw.kubernetes.clone().unwrap_or_default();
    if let Some(image) = &k.image
        && (image.is_empty() || image.chars().any(char::is_whitespace))
    {
        p.add(
            "kubernetes.image",
            format!("`{image}` is not an image reference"),
            "not an image",
            "name the image as a pod takes it: `registry.example.com/team/train:1.4`",
        );
    }
    if let Some(memory) = &k.memory
        && !is_quantity(memory)
    {
        p.add(
            "kubernetes.memory",
            format!("`{memory}` is not a Kubernetes quantity of memory"),
            "not a quantity",
            "write a positive amount with a binary or decimal suffix: `1800Gi`, `512Mi`, `2T`",
        );
    }
    names(&k, p);
    let sidecars = sidecars(&k, p);
    let torchrun = k.launch == Some(LaunchName::Torchrun);
    if torchrun && raw.engine.is_some() {
        p.add(
            "kubernetes.launch",
            "a serving engine's pods run its own script (`--emit vllm`, `--emit sglang`), not \
             torchrun's"
                .into(),
            "beside `engine:`",
            "remove `kubernetes.launch`",
        );
    }
    KubernetesSpec {
        image: k.image,
        memory: k.memory,
        devices: match k.devices {
            Some(DevicesName::Dra) => Devices::Dra,
            _ => Devices::DevicePlugin,
        },
        cpus: match k.cpus {
            Some(DraCpusName::Grouped) => DraCpus::Grouped,
            _ => DraCpus::Individual,
        },
        workload: k.workload.map(|w| match w {
            WorkloadName::Pod => Workload::Pod,
            WorkloadName::Job => Workload::Job,
            WorkloadName::Leaderworkerset => Workload::LeaderWorkerSet,
            WorkloadName::Jobset => Workload::JobSet,
        }),
        namespace: k.namespace,
        name: k.name,
        torchrun,
        args: k.args,
        sidecars,
        pod_security: match k.pod_security {
            Some(PodSecurityName::Baseline) => PodSecurity::Baseline,
            Some(PodSecurityName::Restricted) => PodSecurity::Restricted,
            _ => PodSecurity::Privileged,
        },
        gpu_class: k.gpu_class.unwrap_or_else(|| GPU_CLASS.into()),
        cpu_class: k.cpu_class.unwrap_or_else(|| CPU_CLASS.into()),
        nic_class: k.nic_class.unwrap_or_else(|| NIC_CLASS.into()),
    }
}

/// Each sidecar: a DNS label name other than the ranks' container's and the others', an
/// image, a memory quantity.
fn sidecars(k: &KubernetesOptions, p: &mut Problems) -> Vec<Sidecar> {
    for (i, s) in k.sidecars.iter().enumerate() {
        let at = |key: &str| format!("kubernetes.sidecars[{i}].{key}");
        let taken = s.name == "ranks" || k.sidecars[..i].iter().any(|o| o.name == s.name);
        if !is_dns_label(&s.name, false) || taken {
            p.add(
                &at("name"),
                format!("`{}` cannot name a sidecar container", s.name),
                if taken { "taken" } else { "not a DNS label" },
                "name it with lowercase letters, digits and `-`, other than `ranks` (the ranks' \
                 container) and the other sidecars",
            );
        }
        if s.image.is_empty() || s.image.chars().any(char::is_whitespace) {
            p.add(
                &at("image"),
                format!("`{}` is not an image reference", s.image),
                "not an image",
                "name the image as a pod takes it: `fluent/fluent-bit:3.2`",
            );
        }
        if s.cpus == 0 {
            p.add(
                &at("cpus"),
                "a sidecar of a Guaranteed pod needs whole CPUs, at least one".into(),
                "zero",
                "give it one CPU or more: `cpus: 1`",
            );
        }
        if !is_quantity(&s.memory) {
            p.add(
                &at("memory"),
                format!("`{}` is not a Kubernetes quantity of memory", s.memory),
                "not a quantity",
                "write a positive amount with a binary or decimal suffix: `256Mi`",
            );
        }
    }
    k.sidecars
        .iter()
        .map(|s| Sidecar {
            name: s.name.clone(),
            image: s.image.clone(),
            command: s.command.clone(),
            cpus: s.cpus,
            memory: s.memory.clone(),
        })
        .collect()
}

/// The names Kubernetes checks: the namespace and the objects' name are DNS labels
/// (RFC 1123; a Service's, which the objects' name also is, must start with a letter), a
/// DeviceClass a DNS subdomain.
fn names(k: &KubernetesOptions, p: &mut Problems) {
    let labels = [
        ("kubernetes.namespace", &k.namespace, false),
        ("kubernetes.name", &k.name, true),
    ];
    for (key, value, letter_first) in labels {
        if let Some(v) = value
            && !is_dns_label(v, letter_first)
        {
            p.add(
                key,
                format!("`{v}` is not a name Kubernetes takes here"),
                "not a DNS label",
                "use at most 63 lowercase letters, digits and `-`, starting with a letter and \
                 ending with a letter or digit",
            );
        }
    }
    let classes = [
        ("kubernetes.gpu_class", &k.gpu_class),
        ("kubernetes.cpu_class", &k.cpu_class),
        ("kubernetes.nic_class", &k.nic_class),
    ];
    for (key, value) in classes {
        if let Some(v) = value
            && !(v.len() <= 253 && v.split('.').all(|l| is_dns_label(l, false)))
        {
            p.add(
                key,
                format!("`{v}` is not a DeviceClass name"),
                "not a DNS subdomain",
                "name the DeviceClass the driver installs (`kubectl get deviceclasses`): \
                 `gpu.nvidia.com`, `dra.cpu`",
            );
        }
    }
}

/// A positive Kubernetes quantity: a decimal number, then a binary (`Ki`..`Ei`) or decimal
/// (`k`, `M`..`E`) suffix or an exponent (`e9`), or nothing.
fn is_quantity(s: &str) -> bool {
    let digits_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(digits_end);
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && number != "."
        && number.bytes().any(|b| (b'1'..=b'9').contains(&b));
    let suffix_ok = matches!(
        suffix,
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "k" | "M" | "G" | "T" | "P" | "E"
    ) || suffix
        .strip_prefix(['e', 'E'])
        .is_some_and(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()));
    number_ok && suffix_ok
}

#[cfg(test)]
mod tests {
    use super::{is_dns_label, is_quantity};

    #[test]
    fn quantities_as_kubernetes_reads_them() {
        for ok in ["1800Gi", "512Mi", "2T", "1e9", "1.5Gi", "1000000"] {
            assert!(is_quantity(ok), "{ok}");
        }
        for bad in [
            "", "Gi", "1.2.3Gi", "1 Gi", "-1Gi", "0", "0Gi", "1gb", "1GB", "1e",
        ] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }

    #[test]
    fn dns_labels() {
        assert!(is_dns_label("llama-serve", true));
        assert!(is_dns_label("0ns", false));
        assert!(!is_dns_label("0ns", true));
        assert!(!is_dns_label("Llama", true));
        assert!(!is_dns_label("a_b", true));
        assert!(!is_dns_label("a-", true));
        assert!(!is_dns_label(&"a".repeat(64), true));
    }
}
