//! The manifests' names: every object's, derived from one base name (`kubernetes.name`, else
//! the job's `name`, else `numaplan`), checked where Kubernetes would refuse them, and the
//! metadata every object carries.

use super::yaml::Map;
use crate::emit::EmitError;
use crate::spec::kubernetes::is_dns_label;

/// Where the ConfigMap is mounted, and its keys: the plan, and the launch script of an engine
/// or torchrun.
pub const PLAN_DIR: &str = "/etc/numaplan";
pub const PLAN_KEY: &str = "plan.yaml";
pub const SCRIPT_KEY: &str = "launch.sh";

/// The objects' names and namespace.
pub struct Names {
    pub base: String,
    pub namespace: Option<String>,
}

impl Names {
    /// The base name, refused where it is no DNS label (a job's `name:` may hold anything)
    /// or leaves no room for the longest name made from it (`longest_suffix`).
    pub fn new(
        name: Option<&str>,
        job_name: Option<&str>,
        namespace: Option<String>,
        longest_suffix: usize,
    ) -> Result<Names, EmitError> {
        let (base, key) = match (name, job_name) {
            (Some(n), _) => (n, "kubernetes.name"),
            (None, Some(n)) => (n, "name"),
            (None, None) => ("numaplan", "kubernetes.name"),
        };
        if !is_dns_label(base, true) || base.len() + longest_suffix > 63 {
            return Err(EmitError::KubernetesName {
                name: base.to_string(),
                key,
                room: 63usize.saturating_sub(longest_suffix),
            });
        }
        Ok(Names {
            base: base.to_string(),
            namespace,
        })
    }

    /// `name`, `namespace` and numaplan's labels.
    pub fn metadata(&self, name: &str) -> Map {
        Map::new()
            .set("name", name)
            .maybe("namespace", self.namespace.as_deref())
            .set(
                "labels",
                Map::new()
                    .set("app.kubernetes.io/name", self.base.as_str())
                    .set("app.kubernetes.io/managed-by", "numaplan"),
            )
    }

    /// A group's claim template (`NAME-devices`, `NAME-GROUP-cpus`).
    pub fn claim(&self, group: &str, what: &str) -> String {
        match group.is_empty() {
            true => format!("{}-{what}", self.base),
            false => format!("{}-{group}-{what}", self.base),
        }
    }

    pub fn config_map(&self) -> String {
        format!("{}-plan", self.base)
    }

    /// How a comment names a group's pods.
    pub fn pod_noun(&self, group: &str) -> String {
        match group.is_empty() {
            true => "pod".into(),
            false => format!("group `{group}`'s pods"),
        }
    }

    /// How a message names a group: "" or "group `x`: ".
    pub fn group_phrase(&self, group: &str) -> String {
        match group.is_empty() {
            true => String::new(),
            false => format!("group `{group}`: "),
        }
    }
}
