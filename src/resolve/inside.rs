//! Inside a rank (docs/policies.md, "Inside a rank: helper cores and OpenMP places"): once a rank's CPUs are placed, its helper pool
//! (`cpu.helpers`) and where its OpenMP threads run (`openmp:`). One function per step:
//! 1. `helper_pool`: the last N cores of the rank, in one L3 group where possible;
//! 2. `places`: the compute set cut into places, in topology order;
//! 3. `thread_count`: OMP_NUM_THREADS;
//! 4. `assignment`: the place of each thread, by OMP_PROC_BIND's rules as libgomp applies them;
//! 5. `variables`: the environment that tells both OpenMP runtimes the same.

use crate::cpuset::CpuSet;
use crate::plan::OpenMpBinding;
use crate::plan::environment::Visible;
use crate::spec::validate::MAX_ARG_LEN;
use crate::spec::{OpenMpSpec, Places, ProcBind, Spec, Threads};
use crate::topology::Topology;
use crate::variables::{KMP_AFFINITY, OMP_PLACES, OMP_PROC_BIND};

use super::error::{ResolveError, ResolveErrorKind};

/// What a rank runs inside its CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inside {
    pub helpers: CpuSet,
    pub openmp: Option<OpenMpBinding>,
    /// Its OpenMP thread count (OMP_NUM_THREADS): step 3's under `openmp:`, else its fair
    /// share of its compute cores.
    pub threads: u32,
    /// The variables steps 3 and 5 set besides the thread count (the helper and OpenMP ones,
    /// when asked for).
    pub env: Vec<(&'static str, String)>,
    /// The GPUs the rank sees, where its policy says (mpibind's does, for every runtime of the
    /// job's GPUs, none included); `None`: the spec's `visible:` says.
    pub visible: Option<Vec<Visible>>,
}

/// `sharers`: how many ranks (this one included) may run on some of its CPUs, for its fair
/// share of threads.
pub fn inside(
    spec: &Spec,
    topo: &Topology,
    local_rank: u32,
    cpus: &CpuSet,
    sharers: u32,
) -> Result<Inside, ResolveError> {
    let helpers = helper_pool(topo, local_rank, cpus, spec.cpu.helpers)?;
    let compute = cpus.difference(&helpers);
    let compute_cores = cores_of(topo, &compute).len() as u32;
    let mut env = Vec::new();
    if !helpers.is_empty() {
        env.push(("NUMAPLAN_HELPER_CPUS", helpers.to_string()));
        env.push(("NUMAPLAN_COMPUTE_CPUS", compute.to_string()));
    }
    let Some(omp) = spec.openmp else {
        return Ok(Inside {
            helpers,
            openmp: None,
            threads: fair_share(compute_cores, sharers),
            env,
            visible: None,
        });
    };
    let threads = thread_count(omp.threads, compute_cores, compute.len() as u32);
    let places = match omp.bind {
        ProcBind::None => Vec::new(),
        _ => places(topo, &compute, omp.places),
    };
    let binding = OpenMpBinding {
        places,
        bind: omp.bind,
        threads,
    };
    for (name, value) in variables(&binding, &omp) {
        if name.len() + 1 + value.len() > MAX_ARG_LEN {
            return Err(ResolveError::new(
                ResolveErrorKind::VariableTooLong {
                    rank: local_rank,
                    name,
                    len: name.len() + 1 + value.len(),
                },
                "openmp",
                "use `places: cores` (fewer places), `kmp_affinity: false`, or fewer CPUs per rank",
            ));
        }
        env.push((name, value));
    }
    Ok(Inside {
        helpers,
        threads: binding.threads,
        openmp: Some(binding),
        env,
        visible: None,
    })
}

/// The rank's cores (as CPU sets inside `cpus`), in topology order, with their L3 group.
fn cores_of(topo: &Topology, cpus: &CpuSet) -> Vec<(CpuSet, crate::ids::L3Id)> {
    topo.cores_touching(cpus)
        .into_iter()
        .map(|i| &topo.cores()[i])
        .map(|c| (c.cpus.intersection(cpus), c.l3))
        .collect()
}

/// Step 1: the last `k` cores of the rank's share, all from the last L3 group that has `k` of
/// its cores, else simply its last `k` cores. Fails when `k` leaves no compute core.
fn helper_pool(
    topo: &Topology,
    local_rank: u32,
    cpus: &CpuSet,
    k: u32,
) -> Result<CpuSet, ResolveError> {
    if k == 0 {
        return Ok(CpuSet::new());
    }
    let cores = cores_of(topo, cpus);
    if k as usize >= cores.len() {
        return Err(ResolveError::new(
            ResolveErrorKind::HelpersTakeAllCores {
                rank: local_rank,
                cores: cores.len() as u32,
                helpers: k,
            },
            "cpu.helpers",
            format!(
                "lower `cpu.helpers` below {}, or give the ranks more cores (fewer ranks per node)",
                cores.len()
            ),
        ));
    }
    let in_one_group = cores.iter().rev().map(|c| c.1).find_map(|l3| {
        let group: Vec<&CpuSet> = cores.iter().filter(|c| c.1 == l3).map(|c| &c.0).collect();
        (group.len() >= k as usize).then(|| group[group.len() - k as usize..].to_vec())
    });
    let chosen = in_one_group.unwrap_or_else(|| {
        cores[cores.len() - k as usize..]
            .iter()
            .map(|c| &c.0)
            .collect()
    });
    Ok(chosen.into_iter().fold(CpuSet::new(), |a, c| a.union(c)))
}

/// Step 2: one place per compute core (its CPUs in the compute set) or per compute CPU, in
/// topology order; none for `places: none`.
fn places(topo: &Topology, compute: &CpuSet, kind: Places) -> Vec<CpuSet> {
    let cores = cores_of(topo, compute).into_iter().map(|c| c.0);
    match kind {
        Places::Cores => cores.collect(),
        Places::Threads => cores
            .flat_map(|c| {
                c.iter()
                    .map(|cpu| std::iter::once(cpu).collect())
                    .collect::<Vec<_>>()
            })
            .collect(),
        Places::None => Vec::new(),
    }
}

/// Step 3 without `openmp:`: one thread per compute core, divided among the ranks that share
/// the cores (at least 1), as torchrun sets 1 when it oversubscribes the machine.
pub fn fair_share(compute_cores: u32, sharers: u32) -> u32 {
    (compute_cores / sharers.max(1)).max(1)
}

/// Step 3: the number of OpenMP threads.
fn thread_count(threads: Threads, compute_cores: u32, compute_cpus: u32) -> u32 {
    match threads {
        Threads::Count(n) | Threads::FromEnv(n) => n,
        Threads::Cores => compute_cores,
        Threads::Cpus => compute_cpus,
    }
}

/// Step 4: the place (index) each of `threads` threads is bound to, as libgomp assigns them
/// (OpenMP 5.2, 10.1.3): `master` puts every thread on the first place; with at most as many
/// threads as places, `close` takes consecutive places and `spread` the first place of each of
/// `threads` consecutive subpartitions (the earlier ones one place larger when the places do
/// not divide evenly); with more threads than places both fill consecutive places with
/// `threads / places` threads, the earlier places one more.
pub fn assignment(places: usize, threads: u32, bind: ProcBind) -> Vec<usize> {
    let t = threads as usize;
    if places == 0 || bind == ProcBind::None {
        return Vec::new();
    }
    if bind == ProcBind::Master {
        return vec![0; t];
    }
    if t > places {
        let (s, rest) = (t / places, t % places);
        return (0..places)
            .flat_map(|p| std::iter::repeat_n(p, if p < rest { s + 1 } else { s }))
            .collect();
    }
    match bind {
        ProcBind::Spread => {
            let (s, rest) = (places / t, places % t);
            (0..t).map(|i| i * s + i.min(rest)).collect()
        }
        _ => (0..t).collect(),
    }
}

/// `{48,176},{49,177}`: places as OpenMP writes them.
fn place_list<'a>(places: impl IntoIterator<Item = &'a CpuSet>) -> String {
    places
        .into_iter()
        .map(|p| {
            let cpus: Vec<String> = p.iter().map(|c| c.to_string()).collect();
            format!("{{{}}}", cpus.join(","))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Step 5: OMP_PLACES and OMP_PROC_BIND (GNU libgomp, LLVM libomp and Intel's runtime read
/// them; OMP_NUM_THREADS is the thread count, set with the rank's numbering) and KMP_AFFINITY
/// (which the LLVM and Intel runtimes read instead): an explicit list of each thread's place,
/// so both kinds of runtime bind thread i alike.
fn variables(b: &OpenMpBinding, omp: &OpenMpSpec) -> Vec<(&'static str, String)> {
    let mut env = Vec::new();
    if !b.places.is_empty() {
        env.push((OMP_PLACES, place_list(&b.places)));
    }
    env.push((OMP_PROC_BIND, b.bind.name().to_string()));
    if !omp.kmp_affinity {
        return env;
    }
    let kmp = match b.bind {
        ProcBind::None => Some("none".to_string()),
        _ if b.places.is_empty() => None,
        ProcBind::Master => Some(format!(
            "granularity=fine,proclist=[{}],explicit",
            place_list(&b.places[..1])
        )),
        _ => {
            let order = assignment(b.places.len(), b.threads, b.bind);
            Some(format!(
                "granularity=fine,proclist=[{}],explicit",
                place_list(order.iter().map(|&i| &b.places[i]))
            ))
        }
    };
    env.extend(kmp.map(|k| (KMP_AFFINITY, k)));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignment_follows_libgomp() {
        use ProcBind::*;
        assert_eq!(assignment(8, 4, Close), [0, 1, 2, 3]);
        assert_eq!(assignment(8, 4, Spread), [0, 2, 4, 6]);
        // 7 places in 3 subpartitions of 3, 2, 2 places.
        assert_eq!(assignment(7, 3, Spread), [0, 3, 5]);
        assert_eq!(assignment(4, 4, Spread), [0, 1, 2, 3]);
        // 5 threads on 2 places: 3 on the first, 2 on the second.
        assert_eq!(assignment(2, 5, Close), [0, 0, 0, 1, 1]);
        assert_eq!(assignment(2, 5, Spread), [0, 0, 0, 1, 1]);
        assert_eq!(assignment(4, 3, Master), [0, 0, 0]);
        assert!(assignment(4, 3, None).is_empty());
        assert!(assignment(0, 3, Close).is_empty());
    }

    #[test]
    fn places_are_written_as_openmp_reads_them() {
        let places: Vec<CpuSet> = ["48,176", "49,177", "5"]
            .iter()
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(place_list(&places), "{48,176},{49,177},{5}");
    }
}
