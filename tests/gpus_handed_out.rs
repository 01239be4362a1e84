//! GPUs a container runtime hands out, discovered on a recorded machine: the IBM AC922 sysfs
//! snapshot of tests/data/sysfs (six GPUs on two sockets), its PCI GPUs given NVIDIA's vendor
//! id (or AMD's, an MI250X's device id) so that hwloc sees GPUs, and the `/dev` and
//! `/proc/driver/nvidia` a container would show. NVML is tests/nvml/nvml-standin.c, a stand-in
//! library answering from a JSON description, loaded through LD_LIBRARY_PATH as the real one is:
//! the whole path from `nvml::probe` to the plan runs.

mod common;

use std::path::{Path, PathBuf};

use common::numaplan_env;
use serde_json::Value;

/// The snapshot's six GPUs, in PCI order, and the packages they hang under.
const GPUS: [&str; 6] = [
    "0004:05:00.0",
    "0004:06:00.0",
    "0006:00:00.0",
    "0007:00:00.0",
    "0035:04:00.0",
    "0035:05:00.0",
];

/// The snapshot, its GPUs of `vendor` (`0x10de` NVIDIA, `0x1002` AMD) with the driver's device
/// minors 0-5 in PCI order.
fn machine(vendor: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = common::sysfs_snapshot("nvidiagpunumanodes");
    let device = if vendor == "0x10de" {
        "0x1db1"
    } else {
        "0x740c"
    };
    for (minor, pci) in GPUS.iter().enumerate() {
        let sys = root.join("sys/bus/pci/devices").join(pci);
        std::fs::write(sys.join("vendor"), format!("{vendor}\n")).unwrap();
        std::fs::write(sys.join("device"), format!("{device}\n")).unwrap();
        let info = root
            .join("proc/driver/nvidia/gpus")
            .join(pci)
            .join("information");
        std::fs::write(
            info,
            format!("Model: \t\t Tesla V100-SXM2-16GB\nDevice Minor: \t {minor}\n"),
        )
        .unwrap();
    }
    (dir, root)
}

/// Device nodes `names` under the snapshot's /dev, as a container runtime creates them.
fn dev(root: &Path, names: &[&str]) {
    for name in names {
        let path = root.join("dev").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
    }
}

/// `numaplan ARGS` on the snapshot, with `env`.
fn on(root: &Path, env: &[(&str, &Path)], args: &[&str]) -> common::Run {
    let env: Vec<(&str, &Path)> = [("HWLOC_FSROOT", root)]
        .into_iter()
        .chain(env.iter().copied())
        .collect();
    numaplan_env(root.parent().unwrap(), &env, args)
}

fn topo(root: &Path, env: &[(&str, &Path)]) -> Value {
    serde_json::from_str(&on(root, env, &["topo", "--format", "json"]).ok()).unwrap()
}

/// `(index, pci)` of the GPUs a topology plans.
fn gpus(t: &Value) -> Vec<(u64, String)> {
    t["gpus"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            (
                g["index"].as_u64().unwrap(),
                g["pci"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn left_out(t: &Value) -> Vec<(String, String)> {
    t["left_out_gpus"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            (
                g["pci"].as_str().unwrap().to_string(),
                g["why"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pair(index: u64, pci: &str) -> (u64, String) {
    (index, pci.to_string())
}

/// The stand-in NVML, built into `dir`, answering from `description`: the library's folder and
/// the description's file.
fn stand_in(dir: &Path, description: &str) -> (PathBuf, PathBuf) {
    let lib = dir.join("nvml");
    std::fs::create_dir_all(&lib).unwrap();
    common::cc(
        &["-shared", "-fPIC", "-Wall", "-Werror"],
        "tests/nvml/nvml-standin.c",
        &lib.join("libnvidia-ml.so.1"),
    );
    let json = dir.join("nvml.json");
    std::fs::write(&json, description).unwrap();
    (lib, json)
}

/// What makes discovery load the stand-in for the snapshot: its folder on LD_LIBRARY_PATH, its
/// description, and the opt-in to ask NVML for a snapshot. The first two alone: no opt-in.
fn nvml_env<'a>(lib: &'a Path, json: &'a Path) -> [(&'static str, &'a Path); 3] {
    [
        ("LD_LIBRARY_PATH", lib),
        ("NVML_STANDIN", json),
        ("NUMAPLAN_NVML_WITH_FSROOT", Path::new("1")),
    ]
}

/// The container's two GPUs as its NVML lists them (indices 0 and 1).
const TWO: &str = r#"{"init": 0, "driver": "550.54.15", "gpus": [
  {"uuid": "GPU-11111111-0000-0000-0000-000000000001", "pci": "00000004:06:00.0",
   "name": "Tesla V100-SXM2-16GB", "cpus": "0-15"},
  {"uuid": "GPU-11111111-0000-0000-0000-000000000004", "pci": "00000035:04:00.0",
   "name": "Tesla V100-SXM2-16GB", "cpus": "88-103"}]}"#;

#[test]
fn the_device_nodes_of_a_container_choose_its_gpus() {
    let (_dir, root) = machine("0x10de");
    // The bare machine: every GPU.
    let all = topo(&root, &[]);
    assert_eq!(gpus(&all).len(), 6, "{all}");
    assert!(left_out(&all).is_empty());
    // A container given /dev/nvidia1 and /dev/nvidia4: those two, numbered 0 and 1 as CUDA
    // inside numbers them; the others left out, each with its reason.
    dev(&root, &["nvidiactl", "nvidia-uvm", "nvidia1", "nvidia4"]);
    let t = topo(&root, &[]);
    assert_eq!(gpus(&t), [pair(0, GPUS[1]), pair(1, GPUS[4])], "{t}");
    let left = left_out(&t);
    assert_eq!(left.len(), 4, "{t}");
    assert_eq!(
        left[0],
        (
            GPUS[0].to_string(),
            "/dev/nvidia0 is not in this process's /dev".to_string()
        )
    );
    let text = on(&root, &[], &["topo"]).ok();
    assert!(
        text.contains("2 GPUs")
            && text.contains(
                "left out: nvidia GPU 0004:05:00.0: /dev/nvidia0 is not in this process's /dev"
            ),
        "{text}"
    );
    // Captured as a fixture (`topo --format yaml`), the machine keeps what was left out.
    let saved = root.parent().unwrap().join("node.yaml");
    on(
        &root,
        &[],
        &["topo", "--format", "yaml", "-o", saved.to_str().unwrap()],
    )
    .ok();
    let reread = numaplan_env(
        root.parent().unwrap(),
        &[],
        &[
            "topo",
            "--topology",
            saved.to_str().unwrap(),
            "--format",
            "json",
        ],
    )
    .ok();
    let reread: Value = serde_json::from_str(&reread).unwrap();
    assert_eq!((gpus(&reread), left_out(&reread)), (gpus(&t), left_out(&t)));
    // The plan: one rank per GPU the container has; the machine's shape still counts all six
    // (the node check counts PCI GPUs).
    let job = root.parent().unwrap().join("job.yaml");
    std::fs::write(&job, "command: [true]\n").unwrap();
    let plan: Value = serde_json::from_str(
        &on(
            &root,
            &[],
            &["compile", job.to_str().unwrap(), "--format", "json"],
        )
        .ok(),
    )
    .unwrap();
    let planned: Vec<&str> = plan["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["gpu_pci"][0].as_str().unwrap())
        .collect();
    assert_eq!(planned, [GPUS[1], GPUS[4]], "{plan}");
    assert_eq!(plan["topology"]["gpus"], 6, "{plan}");
}

#[test]
fn without_device_nodes_nvidia_visible_devices_chooses_by_index() {
    let (_dir, root) = machine("0x10de");
    let visible = |value: &str| topo(&root, &[("NVIDIA_VISIBLE_DEVICES", Path::new(value))]);
    let t = visible("2,5");
    assert_eq!(gpus(&t), [pair(0, GPUS[2]), pair(1, GPUS[5])], "{t}");
    assert_eq!(
        left_out(&t)[0].1,
        "NVIDIA_VISIBLE_DEVICES=2,5 does not name GPU 0"
    );
    assert_eq!(gpus(&visible("all")).len(), 6);
    assert_eq!(gpus(&visible("none")).len(), 0);
    // UUIDs need NVML: every GPU stays, and the plans say why.
    let t = visible("GPU-11111111-0000-0000-0000-000000000001");
    assert_eq!(gpus(&t).len(), 6);
    let notes = t["notes"].to_string();
    assert!(notes.contains("only NVML maps to PCI addresses"), "{t}");
}

#[test]
fn nvml_lists_the_containers_gpus_through_the_stand_in() {
    let (dir, root) = machine("0x10de");
    let (lib, json) = stand_in(dir.path(), TWO);
    let env = nvml_env(&lib, &json);
    let t = topo(&root, &env);
    assert_eq!(gpus(&t), [pair(0, GPUS[1]), pair(1, GPUS[4])], "{t}");
    assert_eq!(
        t["gpus"][0]["uuid"],
        "GPU-11111111-0000-0000-0000-000000000001"
    );
    assert_eq!(t["gpus"][1]["model"], "Tesla V100-SXM2-16GB");
    let left = left_out(&t);
    assert_eq!(left.len(), 4, "{t}");
    assert!(
        left.iter()
            .all(|(_, why)| why.starts_with("NVML does not list it")),
        "{t}"
    );
    // `--version --verbose` reports the stand-in's driver.
    let version = on(&root, &env, &["--version", "--verbose"]).ok();
    assert!(
        version.contains("NVML: found (driver 550.54.15, 2 GPUs)"),
        "{version}"
    );
    // Without the opt-in, a snapshot's GPUs are not asked of this machine's NVML.
    let t = topo(&root, &env[..2]);
    assert_eq!(gpus(&t).len(), 6, "{t}");
}

#[test]
fn an_nvml_that_fails_falls_back_to_the_device_nodes() {
    let (dir, root) = machine("0x10de");
    dev(&root, &["nvidiactl", "nvidia1", "nvidia4"]);
    // nvmlInit_v2 says the driver is not loaded (NVML_ERROR_DRIVER_NOT_LOADED).
    let (lib, json) = stand_in(dir.path(), r#"{"init": 9, "gpus": []}"#);
    let env = nvml_env(&lib, &json);
    let t = topo(&root, &env);
    assert_eq!(gpus(&t), [pair(0, GPUS[1]), pair(1, GPUS[4])], "{t}");
    assert!(
        t["notes"].to_string().contains("NVML is not available"),
        "{t}"
    );
    // One call failing for one GPU (its CPU affinity): NVML's whole answer is set aside, said
    // with the GPU and the call, and the device nodes decide.
    let failing = TWO.replace(
        r#""cpus": "88-103""#,
        r#""cpus": "88-103", "fail": "affinity=999""#,
    );
    std::fs::write(&json, failing).unwrap();
    let t = topo(&root, &env);
    assert_eq!(gpus(&t), [pair(0, GPUS[1]), pair(1, GPUS[4])], "{t}");
    assert!(
        t["notes"].to_string().contains("GPU 1: CPU affinity"),
        "{t}"
    );
}

#[test]
fn rocm_render_nodes_choose_a_containers_amd_gpus() {
    let (_dir, root) = machine("0x1002");
    let all = topo(&root, &[]);
    assert_eq!(gpus(&all).len(), 6, "{all}");
    // Render nodes without /dev/kfd say nothing about compute: every GPU stays.
    let drm = root.join("sys/class/drm");
    std::fs::create_dir_all(&drm).unwrap();
    for (node, pci) in [("renderD129", GPUS[2]), ("renderD132", GPUS[5])] {
        std::fs::create_dir_all(drm.join(node)).unwrap();
        let target = format!("../../../bus/pci/devices/{pci}");
        std::os::unix::fs::symlink(target, drm.join(node).join("device")).unwrap();
        dev(&root, &[&format!("dri/{node}")]);
    }
    assert_eq!(gpus(&topo(&root, &[])).len(), 6);
    dev(&root, &["kfd"]);
    let t = topo(&root, &[]);
    assert_eq!(gpus(&t), [pair(0, GPUS[2]), pair(1, GPUS[5])], "{t}");
    assert!(
        left_out(&t)[0]
            .1
            .starts_with("its render node is not in this process's /dev/dri")
    );
}
