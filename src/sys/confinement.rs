//! What confines this process, as far as binding goes: a seccomp filter and whether it holds
//! `CAP_SYS_NICE` (Docker's default profile and containerd's `RuntimeDefault` allow the
//! memory-policy calls only with it, and `migrate_pages` never), and whether it runs in a
//! container. Read from `/proc/self/status` and the marks container runtimes leave.

/// `CAP_SYS_NICE`'s bit in `CapEff`.
const CAP_SYS_NICE: u32 = 23;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Confinement {
    /// `Seccomp:` of `/proc/self/status`: 0 none, 1 strict, 2 a filter; `None` if unread.
    pub seccomp: Option<u8>,
    /// Whether `CAP_SYS_NICE` is in the effective set.
    pub sys_nice: bool,
    /// The container runtime this runs under, where one says so.
    pub container: Option<&'static str>,
}

impl Confinement {
    /// This process's.
    pub fn of_self() -> Confinement {
        let status = super::proc::self_status();
        let field = |name: &str| super::proc::field(&status, name);
        let seccomp = field("Seccomp").and_then(|v| v.parse().ok());
        let sys_nice = field("CapEff")
            .and_then(|v| u64::from_str_radix(v, 16).ok())
            .is_some_and(|caps| caps & (1 << CAP_SYS_NICE) != 0);
        Confinement {
            seccomp,
            sys_nice,
            container: container(),
        }
    }

    /// Whether a seccomp filter is in place.
    pub fn filtered(&self) -> bool {
        self.seccomp == Some(2)
    }
}

/// The container runtime that started this process, by the marks runtimes leave: Kubernetes'
/// service variables, podman's `/run/.containerenv` and `container=` variable, Docker's
/// `/.dockerenv`.
pub fn container() -> Option<&'static str> {
    let exists = |p: &str| std::path::Path::new(p).exists();
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        Some("a Kubernetes pod")
    } else if exists("/run/.containerenv")
        || std::env::var("container").is_ok_and(|v| v == "podman")
    {
        Some("a podman container")
    } else if exists("/.dockerenv") {
        Some("a Docker container")
    } else if std::env::var_os("container").is_some() {
        Some("a container")
    } else {
        None
    }
}
