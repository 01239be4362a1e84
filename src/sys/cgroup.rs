//! The CPUs this process's cgroup lets it use: what a launcher's binding narrows, and what
//! `bind` may bind within when it replaces that binding (W0215).
//!
//! The cpuset is found where the kernel says it is, not where it usually is: each hierarchy
//! that holds the cpuset controller (cgroup v1 `cpuset`, or the unified v2 one) is looked up in
//! `/proc/self/mountinfo`, and this process's group (`/proc/self/cgroup`) is read under that
//! mount. A container that mounts only its own subtree (mount root `/docker/abc`) is read at the
//! mount point. From the group up to the mount point, the nearest group with a cpuset says:
//! a v2 group without the controller enabled takes its parent's.

use std::path::{Path, PathBuf};

use crate::cpuset::CpuSet;

/// The CPUs this process's cgroup allows, within `online`; `online` where no cpuset says.
pub fn cgroup_cpus(online: &CpuSet) -> CpuSet {
    let cgroup = read_small(Path::new("/proc/self/cgroup")).unwrap_or_default();
    let dirs = match read_small(Path::new("/proc/self/mountinfo")) {
        Some(mountinfo) => cpuset_dirs(&cgroup, &mountinfo),
        // No mount table (a /proc without it): where systemd and Docker mount them.
        None => cpuset_dirs(&cgroup, CONVENTIONAL_MOUNTS),
    };
    match effective_cpus(&dirs, read_small) {
        Some(cpus) => cpus.intersection(online),
        None => online.clone(),
    }
}

/// A cgroup file (mountinfo runs to kilobytes in a container), in one or two reads.
fn read_small(path: &Path) -> Option<String> {
    super::proc::read_expecting(path, 16 * 1024)
}

/// The usual mounts, in mountinfo's form: v1 cpuset, v2 alone, v2 beside v1 (hybrid).
const CONVENTIONAL_MOUNTS: &str = "\
1 0 0:1 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset
2 0 0:2 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw
3 0 0:3 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
";

/// Where one hierarchy keeps this process's cpuset.
#[derive(Debug, PartialEq, Eq)]
struct CpusetDir {
    /// The hierarchy's mount point: the walk up stops there.
    mount: PathBuf,
    /// This process's group under it.
    group: PathBuf,
    /// The file of the group's effective CPUs.
    file: &'static str,
}

/// A cgroup mount: its kind, the group it shows (`root`) and where.
struct Mount {
    v2: bool,
    /// v1: the controllers it holds (its super options).
    options: String,
    root: String,
    point: PathBuf,
}

/// For each hierarchy of `/proc/self/cgroup` that holds the cpuset controller (a v1 line that
/// names `cpuset`, or the v2 line `0::`), this process's group under each of its mounts.
fn cpuset_dirs(cgroup: &str, mountinfo: &str) -> Vec<CpusetDir> {
    let mounts: Vec<Mount> = mountinfo.lines().filter_map(cgroup_mount).collect();
    let mut dirs = Vec::new();
    for line in cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (v2, file) = match (id, controllers) {
            ("0", "") => (true, "cpuset.cpus.effective"),
            _ if controllers.split(',').any(|c| c == "cpuset") => (false, "cpuset.effective_cpus"),
            _ => continue,
        };
        let holds_cpuset = |m: &&Mount| m.v2 == v2 && (v2 || has_cpuset(&m.options));
        for m in mounts.iter().filter(holds_cpuset) {
            dirs.push(CpusetDir {
                mount: m.point.clone(),
                group: group_under(m, path),
                file,
            });
        }
    }
    dirs
}

/// One line of mountinfo, when it is a cgroup mount: `ID PARENT MAJ:MIN ROOT POINT OPTIONS
/// [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS`.
fn cgroup_mount(line: &str) -> Option<Mount> {
    let fields: Vec<&str> = line.split(' ').collect();
    let dash = fields.iter().position(|f| *f == "-")?;
    let v2 = match *fields.get(dash + 1)? {
        "cgroup2" => true,
        "cgroup" => false,
        _ => return None,
    };
    Some(Mount {
        v2,
        options: fields
            .get(dash + 3)
            .copied()
            .unwrap_or_default()
            .to_string(),
        root: unescape(fields.get(3)?),
        point: PathBuf::from(unescape(fields.get(4)?)),
    })
}

fn has_cpuset(options: &str) -> bool {
    options.split(',').any(|o| o == "cpuset")
}

/// The group at `path` (as /proc/self/cgroup names it) under the mount `m`: below the mount
/// point by its path from the mount's root; the mount point itself when the mount does not show
/// it (a container's own subtree, the process moved out of it).
fn group_under(m: &Mount, path: &str) -> PathBuf {
    match Path::new(path).strip_prefix(&m.root) {
        Ok(below) if !below.as_os_str().is_empty() => m.point.join(below),
        _ => m.point.clone(),
    }
}

/// mountinfo's octal escapes (`\040` a space, `\011` a tab, `\012` a newline, `\134` a backslash).
fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4);
        match code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The first hierarchy's effective CPUs, from its group up to its mount point: the nearest
/// group whose file holds a non-empty list.
fn effective_cpus(dirs: &[CpusetDir], read: impl Fn(&Path) -> Option<String>) -> Option<CpuSet> {
    dirs.iter().find_map(|d| {
        d.group
            .ancestors()
            .take_while(|dir| dir.starts_with(&d.mount))
            .find_map(|dir| {
                let cpus = read(&dir.join(d.file))?.trim().parse::<CpuSet>().ok()?;
                (!cpus.is_empty()).then_some(cpus)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(cgroup: &str, mountinfo: &str) -> Vec<(String, String, &'static str)> {
        cpuset_dirs(cgroup, mountinfo)
            .into_iter()
            .map(|d| {
                (
                    d.mount.display().to_string(),
                    d.group.display().to_string(),
                    d.file,
                )
            })
            .collect()
    }

    /// This machine's kind: cgroup v1 with v2 beside it (hybrid), as systemd mounts them.
    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn each_hierarchy_with_a_cpuset_is_read_under_its_own_mount() {
        let cgroup = "9:name=systemd:/user.slice\n3:cpuset:/slurm/uid_0/job_7/step_0\n1:cpu:/\n0::/user.slice\n";
        assert_eq!(
            dirs(cgroup, HYBRID),
            [
                (
                    "/sys/fs/cgroup/cpuset".into(),
                    "/sys/fs/cgroup/cpuset/slurm/uid_0/job_7/step_0".into(),
                    "cpuset.effective_cpus"
                ),
                (
                    "/sys/fs/cgroup/unified".into(),
                    "/sys/fs/cgroup/unified/user.slice".into(),
                    "cpuset.cpus.effective"
                ),
            ]
        );
    }

    /// Mount points the conventional paths miss: cpuset co-mounted with cpu at `cpu,cpuset`, or
    /// a v2 tree at `/run/cgroup2` with a space escaped in it.
    #[test]
    fn unusual_mount_points_are_found() {
        let mountinfo = "\
25 20 0:22 / /sys/fs/cgroup/cpu,cpuset rw - cgroup cgroup rw,cpu,cpuset
26 20 0:23 / /run/cgroup\\0402 rw - cgroup2 none rw,nsdelegate
";
        assert_eq!(
            dirs("4:cpu,cpuset:/batch\n0::/job\n", mountinfo),
            [
                (
                    "/sys/fs/cgroup/cpu,cpuset".into(),
                    "/sys/fs/cgroup/cpu,cpuset/batch".into(),
                    "cpuset.effective_cpus"
                ),
                (
                    "/run/cgroup 2".into(),
                    "/run/cgroup 2/job".into(),
                    "cpuset.cpus.effective"
                ),
            ]
        );
        // A v1 hierarchy without the cpuset controller is not read.
        let cpu_only = "25 20 0:22 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        assert!(dirs("4:cpu:/batch\n", cpu_only).is_empty());
    }

    /// A container that mounts only its own subtree: the group is the mount point.
    #[test]
    fn a_container_subtree_is_read_at_its_mount_point() {
        let mountinfo = "\
700 690 0:30 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw
";
        assert_eq!(
            dirs("0::/docker/abc\n", mountinfo),
            [(
                "/sys/fs/cgroup".into(),
                "/sys/fs/cgroup".into(),
                "cpuset.cpus.effective"
            )]
        );
        assert_eq!(
            dirs("0::/docker/abc/inner\n", mountinfo)[0].1,
            "/sys/fs/cgroup/inner"
        );
        // Moved out of the subtree the mount shows: the mount point is the best it can read.
        assert_eq!(dirs("0::/elsewhere\n", mountinfo)[0].1, "/sys/fs/cgroup");
    }

    /// A fake cgroup tree: the nearest group with a list says, the walk never leaves the mount,
    /// and an empty list (a v2 group whose cpuset is not set) is no answer.
    #[test]
    fn the_nearest_group_with_a_list_says() {
        let tmp = tempfile::tempdir().unwrap();
        let mount = tmp.path().join("cg");
        let group = mount.join("job/step");
        std::fs::create_dir_all(&group).unwrap();
        let file = "cpuset.cpus.effective";
        std::fs::write(tmp.path().join(file), "0-63\n").unwrap(); // above the mount
        let dir = CpusetDir {
            mount: mount.clone(),
            group: group.clone(),
            file,
        };
        let read = |p: &Path| std::fs::read_to_string(p).ok();
        let found = |dirs: &[CpusetDir]| effective_cpus(dirs, read).map(|c| c.to_string());
        assert_eq!(
            found(std::slice::from_ref(&dir)),
            None,
            "not above the mount"
        );
        std::fs::write(mount.join(file), "0-31\n").unwrap();
        assert_eq!(found(std::slice::from_ref(&dir)).as_deref(), Some("0-31"));
        std::fs::write(mount.join("job").join(file), "8-15\n").unwrap();
        std::fs::write(group.join(file), "\n").unwrap();
        assert_eq!(found(std::slice::from_ref(&dir)).as_deref(), Some("8-15"));
        std::fs::write(group.join(file), "12-13\n").unwrap();
        assert_eq!(found(&[dir]).as_deref(), Some("12-13"));
    }

    /// Without a mount table, the conventional mounts are tried.
    #[test]
    fn the_conventional_mounts_cover_v1_v2_and_hybrid() {
        let found = dirs("3:cpuset:/a\n0::/b\n", CONVENTIONAL_MOUNTS);
        let groups: Vec<&str> = found.iter().map(|d| d.1.as_str()).collect();
        assert_eq!(
            groups,
            [
                "/sys/fs/cgroup/cpuset/a",
                "/sys/fs/cgroup/b",
                "/sys/fs/cgroup/unified/b"
            ]
        );
    }

    #[test]
    fn escapes_are_decoded_and_stray_backslashes_kept() {
        assert_eq!(unescape("a\\040b\\134c\\011"), "a b\\c\t");
        assert_eq!(unescape("end\\"), "end\\");
        assert_eq!(unescape("x\\9zz"), "x\\9zz");
    }
}
