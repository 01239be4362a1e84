//! Error codes and their long explanations (`numaplan codes E0301`).
//!
//! E01xx spec, E02xx resolve, E03xx topology, E04xx emit/exec and the environment.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Code(pub &'static str);

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Declares every code once: its constant, its number and its explanation, in order. A code
/// that took over a problem another code covered before says which (`formerly`).
macro_rules! codes {
    ($($name:ident = $code:literal $(formerly $old:literal)?: $text:expr;)*) => {
        $(pub const $name: Code = Code($code);)*

        /// Every code with its explanation, in order.
        pub const ALL: &[(Code, &str)] = &[$(($name, $text)),*];

        /// Codes that took over a problem another code covered before: (new, old).
        pub const FORMERLY: &[(Code, &str)] = &[$($(($name, $old),)?)*];
    };
}

codes! {
    E0100_SPEC_READ = "E0100":
        "The job spec could not be read (missing, unreadable). Exit code 3.";
    E0101_SPEC_SYNTAX = "E0101":
        "The job spec is not well-formed YAML, or it is truncated. The message carries the \
         parser's position.";
    E0102_SPEC_SHAPE = "E0102":
        "The job spec has an unknown key, an unknown value for an enumerated key, or a value of \
         the wrong type. The message lists what is allowed and suggests the closest match; \
         `schemas/job.schema.json` documents every key.";
    E0103_SPEC_INVALID = "E0103":
        "A value of the job spec is well-formed but not acceptable: a zero count, a malformed CPU \
         or node list, `min_cores` above `max_cores`, an invalid environment variable name, or \
         a variable `env:` may not set: numaplan's own (`NUMAPLAN_PLAN`, any `NUMAPLAN_`), the \
         rendezvous (`MASTER_ADDR`, `MASTER_PORT`: say `rendezvous:`) and the launchers' \
         numbering (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `SLURM_PROCID`, \
         `OMPI_COMM_WORLD_LOCAL_RANK`...), of which each rank has its own value. Every such \
         problem is reported before numaplan stops.";
    E0104_SET_ON_PLAN = "E0104":
        "`--set` and `--nproc-per-node` change a job spec before it is compiled; the input is a \
         plan, which numaplan runs as written (it is what was reviewed). Give the job spec the \
         plan was compiled from, or recompile the plan with the change.";
    E0105_NOT_UTF8 = "E0105":
        "A job spec, topology file or plan is not UTF-8 text: the message gives the offset of \
         the first byte that is not part of a UTF-8 character. Save the file as UTF-8. An \
         error in the input: exit code 1.";
    E0106_WRONG_KIND = "E0106" formerly "E0105":
        "A numaplan file of another kind than the command takes: a plan given to `compile` \
         (which takes the job spec a plan is made from; `exec`, `bind`, `verify`, `explain` and \
         `diff` take the plan), a topology (fixture or hwloc XML) given as a job spec or plan \
         (give it with `--topology`), or a plan or job spec given as `--topology`. Every \
         numaplan file but the job spec names its kind on its first key (`numaplan_plan: 1`, \
         `numaplan_topology: 1`).";
    E0201_NOT_ENOUGH_GPUS = "E0201":
        "The ranks need more GPUs than are selected: ranks_per_node x gpus_per_rank exceeds the \
         GPUs that `gpus:` selects on this topology, or `gpus: N` asks for more GPUs than the \
         topology has, or the spec asks for GPUs outright (`gpus: all`, `gpus: visible`, \
         `gpus_per_rank`) and the machine has none: then the note says why discovery found \
         none; `gpus: none` (or no `gpus:` key) plans CPU-only ranks.";
    E0202_UNKNOWN_GPU = "E0202":
        "`gpus:` lists a GPU index the topology does not have. `numaplan topo` shows the GPUs.";
    E0203_NODE_WITHOUT_CPUS = "E0203":
        "A compatibility policy (`node`, `socket`, `core-complex`) needs CPUs on the GPU's NUMA \
         node, but it has none allowed (a CPU-less node, or a cgroup or `cpu.allowed` that \
         excludes it). PyTorch crashes here; `policy: auto` falls back to the nearest node.";
    E0204_EXCLUSIVE_TOO_FEW = "E0204":
        "`policy: exclusive` splits a node's cores among the GPUs on it, and there are fewer \
         cores than GPUs.";
    E0205_MIN_CORES = "E0205":
        "A rank would get fewer cores than `cpu.min_cores` (default 1): too many ranks for the \
         node's usable cores after reserved cores and the allowed set are taken out.";
    E0206_NO_UNIQUE_CORE = "E0206":
        "`single-unique` gives each GPU a core no earlier GPU took, and a GPU's node ran out.";
    E0207_OVERLAPPING_NODE_SETS = "E0207":
        "The gpu_affinity policies need the NUMA node CPU sets of any two GPUs, and their socket \
         CPU sets, to be identical or disjoint (an empty set is disjoint from every set); this \
         topology has two that partly overlap, typically because one GPU has unknown locality \
         (its sets are the whole machine). gpu_affinity fails here too.";
    E0208_NOTHING_ALLOWED = "E0208":
        "The allowed CPUs (the topology's, narrowed by `cpu.allowed`) leave the job or a rank \
         without any CPU.";
    E0209_UNKNOWN_MEMORY_NODE = "E0209":
        "`memory.nodes` lists a NUMA node the topology does not have.";
    E0210_PREFERRED_MANY_NODES = "E0210":
        "`memory.policy: preferred` (MPOL_PREFERRED) takes a single node; use `interleave` to \
         spread pages over several.";
    E0211_UNPLACED_GPU = "E0211":
        "A GPU has unknown NUMA locality, so `auto` places its rank like a CPU-only rank on a \
         node no other rank uses, and none is left.";
    E0212_VISIBLE_DEVICES = "E0212":
        "`gpus: visible` takes the GPUs that CUDA_VISIBLE_DEVICES (NVIDIA) or \
         ROCR_VISIBLE_DEVICES (AMD) names in numaplan's environment, and an entry names no GPU \
         of the topology: an index it does not have, a UUID prefix that matches none or several, \
         an entry given twice, or an empty list.";
    E0213_UNKNOWN_LOCALITY = "E0213":
        "A GPU has unknown NUMA locality (sysfs `numa_node` -1); the PyTorch-compatible \
         policies read it as node 0, as PyTorch does, and the machine has no node 0 or node 0 \
         has no allowed CPU, where PyTorch raises. `policy: auto` places such a rank like a \
         CPU-only rank instead.";
    E0214_WARNINGS_DENIED = "E0214":
        "`--deny-warnings` turns the plan's warnings (shown above it as W02xx) into an error, for \
         CI: nothing was written or started. Fix what the warnings say, accept a kind that was \
         reviewed with `--allow W02xx` (or the spec's `allow_warnings:`), or drop the flag.";
    E0215_TOO_MANY_RANKS = "E0215":
        "The job has more ranks (`nodes` x the ranks per node) than `WORLD_SIZE` and `RANK` can \
         number (4,294,967,295). When `ranks_per_node` is not given, a node runs one rank per \
         selected GPU (or per NUMA node with `gpus: none`).";
    E0216_HELPERS_TAKE_ALL = "E0216":
        "`cpu.helpers: N` sets aside N cores of every rank for helper threads, and a rank has N \
         cores or fewer: none would be left for its compute threads. Lower `cpu.helpers`, or \
         give the ranks more cores (fewer ranks per node).";
    E0217_VARIABLE_TOO_LONG = "E0217":
        "A variable `openmp:` computes (OMP_PLACES, or KMP_AFFINITY with one place per thread) \
         would be longer than the kernel passes to a program (128 KiB). Use `places: cores`, \
         `kmp_affinity: false`, or fewer CPUs per rank.";
    E0218_MPIBIND_SMT = "E0218":
        "`policy: mpibind`: `cpu.smt` asks for more hardware threads per core than the \
         machine's first core has (mpibind checks it against the whole machine, before any \
         restriction). `all` is the machine's own; leave `smt` out for mpibind's choice.";
    E0219_MPIBIND_RESTRICTION = "E0219":
        "`policy: mpibind`: the restriction (`cpu.allowed`, `cpu.allowed_nodes`, or the CPUs \
         this process may use) names no CPU or NUMA node of the machine, or leaves no NUMA \
         node with CPUs. mpibind itself prints a warning and maps the whole machine; numaplan \
         refuses, because the plan would not be what was asked. The notes list the machine's \
         nodes and CPUs.";
    E0220_MPIBIND_SLOT = "E0220":
        "`policy: mpibind`: the mapping would take more PUs of a core (or other slot) than it \
         has: `cpu.smt` above the PUs of some core, cores left uneven by a restriction, or \
         hybrid cores. mpibind adds CPU -1 to such a task (a corrupt CPU set); numaplan \
         refuses and names the slot (the core of its first CPU, where it is a core). Ask for \
         fewer threads per core, or restrict to whole cores.";
    E0221_GROUPS_NOT_ONE_NODE = "E0221":
        "A job spec with `groups:` (nodes of different shapes) was given where only a job of \
         one group can go: `--emit bash`, which starts one node's ranks with numactl. Nothing \
         starts rather than a job that leaves groups out. Emit `sbatch`, `sbatch-exec`, `torchrun` or \
         `mpirun`, or run `numaplan exec` on each node (it finds the node's group, or takes \
         `--group NAME`).";
    E0300_TOPOLOGY_READ = "E0300":
        "The topology file could not be read (missing, unreadable). Check the path given to \
         `--topology` or the spec's `topology:` key. Exit code 3.";
    E0301_YAML_SYNTAX = "E0301":
        "The file is not well-formed YAML, or it is truncated. The message carries the parser's \
         position; fix the text there. A fixture written by `numaplan topo --format yaml` is \
         always well-formed.";
    E0302_FIXTURE_INVALID = "E0302":
        "The YAML is well-formed but is not a valid numaplan topology fixture: an unknown key, a \
         missing required key, a value of the wrong type, a malformed CPU list or PCI address, or \
         facts that contradict each other (a node's `cpus` that differ from its L3 groups, a CPU \
         in two cores). `schemas/topology.schema.json` documents the format.";
    E0303_XML_NOT_HWLOC = "E0303":
        "The XML file is not an hwloc topology export. NCCL's topology files (root element \
         `<system>`, as shipped for AWS and Azure instances) and other XML describe only part of \
         a machine. Produce an hwloc export on the machine with `lstopo --of xml machine.xml`, \
         or write a numaplan fixture.";
    E0304_XML_VERSION = "E0304":
        "The hwloc XML was written in a format newer than numaplan reads: hwloc 1.x, 2.x and \
         3.x exports are imported (3.x translated into the 2.x format of the linked library). \
         Re-export it with hwloc 2.x or 3.x (`lstopo --of xml`), or with \
         `--export-xml-flags v2` where the newer lstopo offers it.";
    E0305_XML_REJECTED = "E0305":
        "hwloc refused to import the XML: it is malformed or truncated. Re-export it with \
         `lstopo --of xml`.";
    E0306_TOPOLOGY_INCONSISTENT = "E0306":
        "The topology source loaded but describes an impossible machine: no CPUs, a CPU in two \
         cores, a device on a NUMA node that does not exist. The message names the part.";
    E0307_DISCOVER = "E0307":
        "hwloc could not read the machine numaplan runs on (no /sys, a restricted container). \
         Use a fixture with `--topology FILE` instead, made where discovery works with \
         `numaplan topo --format yaml -o node.yaml`. Exit code 3.";
    E0400_OUTPUT_WRITE = "E0400":
        "The output file could not be written. numaplan writes to a temporary file beside the \
         target and renames it, so a failure leaves neither a partial nor a stale file. Exit \
         code 3.";
    E0401_UNKNOWN_CODE = "E0401":
        "`numaplan codes CODE` was given a code that does not exist; `numaplan codes` lists all.";
    E0402_MISSING_COMMAND = "E0402":
        "A launch script (`--emit`) runs the spec's `command` in every rank; the spec has none. \
         Plans (`compile` without `--emit`) do not need it.";
    E0403_INTERNAL = "E0403":
        "numaplan broke a rule of its own: an embedded template failed to render, or a machine \
         read without hwloc's object tree reached `policy: mpibind`. This is a bug in numaplan: \
         please report it with the job spec and topology.";
    E0404_STALE = "E0404":
        "`compile --check` found that the file on disk is not what the spec and topology compile \
         to now (or that it does not exist). The unified diff on standard output shows the \
         difference; run the command in the help line to regenerate the file, review the diff \
         and commit it.";
    E0405_PLAN_SYNTAX = "E0405":
        "A plan file given to `diff` or `explain` is not well-formed YAML or JSON, or is \
         truncated. Regenerate it with the command in its header.";
    E0406_PLAN_INVALID = "E0406":
        "A plan file is well-formed but is not a valid plan: an unknown key, a missing key, a \
         malformed CPU list, an unknown policy, ranks that break the plan's own rules (two ranks \
         of an exclusive policy on one CPU). `schemas/plan.schema.json` documents the format; \
         regenerate the file rather than editing it.";
    E0407_INPUT_READ = "E0407":
        "An input of `exec`, `bind`, `verify`, `diff` or `explain` (a plan or a job spec, from \
         a file, `git:REV:PATH` or `env:VAR`) could not be read. Exit code 3.";
    E0408_GIT = "E0408":
        "`git:REV:PATH` names a file in git history, read with `git show REV:PATH`; git could not \
         show it (an unknown revision, a path not in that revision, not a git repository). PATH \
         is taken from the repository root, or from the current directory when it starts with \
         `./`.";
    E0409_NEEDS_TOPOLOGY = "E0409":
        "`explain` draws the plan on its machine. A plan file names the topology file it was \
         compiled from (relative to the plan) and its fingerprint; when that file is not there, \
         or the plan came from a discovered machine, pass the topology with `--topology FILE`, \
         or explain the job spec, which names its topology.";
    E0410_NODE_PLACE = "E0410":
        "`numaplan exec` of a multi-node plan needs this node's index and the rendezvous host: \
         from `--node-rank` and `--master-addr`, or from Slurm (`SLURM_NODEID`, the first host \
         of `SLURM_JOB_NODELIST`), and neither says them.";
    E0411_NOT_THIS_NODE = "E0411":
        "The plan uses CPUs this process may not run on (another machine's plan, or a cgroup, \
         taskset or Slurm step that allows fewer CPUs), binds memory to a NUMA node this \
         machine does not have, or places a rank next to a GPU at a PCI address this machine \
         has no GPU at (a machine of the same counts whose GPUs sit elsewhere; `--force` \
         starts anyway). Nothing was started.";
    E0412_BIND = "E0412":
        "Setting a rank's CPU affinity (`sched_setaffinity`) or memory policy \
         (`set_mempolicy`, `migrate_pages`) failed: in exec's child before it started (the \
         ranks already started were stopped), in `numaplan bind` before it ran the command, or \
         in `numaplan.bind()`; the errno says why. Exit code 3.";
    E0413_SPAWN = "E0413":
        "A rank's program could not be started (by `exec`, or by `numaplan bind` in its own \
         place). The ranks already started were stopped. Exit code 127 when the program is not \
         found, 126 when it cannot be run, as a shell exits.";
    E0414_RANK_FAILED = "E0414":
        "A rank exited with a non-zero status or was killed by a signal; numaplan stopped the \
         other ranks (TERM, then KILL after `--grace` seconds) and exits with that rank's \
         status (128 + the signal for a signal death), as torchrun does. `numaplan.spawn` \
         raises it (`ProcessRaisedException`, `ProcessExitedException`) when a rank raises, \
         exits non-zero or is killed, after stopping the others.";
    E0415_INTERRUPTED = "E0415":
        "numaplan received SIGINT, SIGTERM or SIGHUP, forwarded it to every rank's process \
         group, waited for them, and exits with 128 + the signal.";
    E0416_VERIFY = "E0416":
        "`--verify` or `numaplan verify` found live ranks whose real CPUs (of any thread) or \
         memory policy, read from /proc, differ from the plan, or whose memory is less than \
         `--min-local` on its planned nodes (90% under `memory.policy: bind`). A thread may \
         narrow its CPUs within the rank's set (NCCL and OpenMP runtimes do); CPUs outside the \
         set are a mismatch. With `--watch`, a rank counts if it was off its plan at any \
         reading, except for threads `--repin` put back. A rank that already exited \
         successfully is reported, not counted.";
    E0417_NO_PROCESSES = "E0417":
        "`numaplan verify --match NAME` found no rank of the plan among the running processes \
         whose command line contains NAME (numaplan itself excluded): none, or only processes \
         that say no rank of this plan (a launcher, another plan's ranks, another user's \
         processes it may not read), each listed with why. `--pids` names the ranks directly.";
    E0418_TOPOLOGY_MISMATCH = "E0418":
        "`explain` draws a plan on its machine, and the topology given (or named in the plan's \
         `topology.file`) has another fingerprint than the one the plan was compiled for: the \
         machine, or its fixture, changed since. Pass the right topology, recompile the plan, or \
         use `--force` to draw it anyway under a banner. `diff` only notes such a difference.";
    E0419_LOCAL_RANK = "E0419":
        "`numaplan bind` could not tell which local rank it is: no launcher variable is set \
         (`LOCAL_RANK` from torchrun, `SLURM_LOCALID` from srun, `OMPI_COMM_WORLD_LOCAL_RANK` \
         from Open MPI, `MPI_LOCALRANKID` from MPICH, `PALS_LOCAL_RANKID`, \
         `FLUX_TASK_LOCAL_ID`). Run it under a launcher, or pass `--local-rank N` to say it. \
         Before, E0419 also stood for E0428 to E0433 (`numaplan codes E0428`...).";
    E0420_LOCAL_SIZE = "E0420":
        "The launcher runs another number of local ranks (`LOCAL_WORLD_SIZE`, \
         `SLURM_STEP_TASKS_PER_NODE`, `OMPI_COMM_WORLD_LOCAL_SIZE`, `MPI_LOCALNRANKS`) than the \
         plan has per node: some GPUs or cores would go unused, or ranks would lack a binding. \
         Start the launcher with the plan's count, or recompile the plan for the launcher's.";
    E0421_PYTHON_BINARY = "E0421":
        "The Python package (`numaplan.bind`, `numaplan.spawn`) could not run the numaplan \
         executable: `NUMAPLAN_BIN` names nothing executable, no `numaplan` is installed beside \
         the package (the wheel's script) or on PATH, or what it printed is not its JSON. \
         Reinstall the wheel (`pip install numaplan`), or point `NUMAPLAN_BIN` at the binary. \
         Raised by the Python package only.";
    E0422_VISIBLE_GPUS = "E0422":
        "`numaplan bind --local-rank gpu` (`numaplan.bind(local_rank=\"gpu\")`, \
         `NUMAPLAN_LOCAL_RANK=gpu`) finds its rank by the GPUs the process sees, as the worker's \
         own launcher (Ray, an inference server) made them visible: `CUDA_VISIBLE_DEVICES` by \
         the machine's index or UUID, `ROCR_VISIBLE_DEVICES` and then `HIP_VISIBLE_DEVICES` \
         for ROCm, `ZE_AFFINITY_MASK` for Level Zero; here no such variable is set, or it is \
         set to nothing, or it hides every GPU (`-1`, Slurm's `NoDevFiles`). \
         `numaplan.bind_worker()` leaves such a worker unbound, with a warning. Start the \
         worker with its GPU visible, or pass `--local-rank N`. \
         Before, E0422 also stood for E0435 to E0437.";
    E0423_USAGE = "E0423":
        "The command line is not one numaplan takes: an unknown flag or subcommand, a missing, \
         malformed or conflicting argument, or a flag the subcommand does not take (`-q`, \
         `--deny-warnings` and `--allow` only mean something to `compile`, `exec` and `bind`). \
         Shown as clap's message, or under `--message-format json` as this diagnostic. Exit \
         code 2.";
    E0424_NODE_COUNT = "E0424" formerly "E0410":
        "`numaplan exec` runs in a job of another number of nodes (`--nodes`, Slurm's \
         `SLURM_NNODES`) than the plan's `nodes`: ranks would be numbered for a world of \
         another size. Run the plan on as many nodes as it was made for, or recompile it with \
         `--set nodes=N`.";
    E0425_NODE_RANK = "E0425" formerly "E0410":
        "This node's rank (`--node-rank`, `SLURM_NODEID`) is not below the node count: no node \
         of the plan is that one. Number the nodes from 0 to the node count less one.";
    E0426_LOG_DIR = "E0426" formerly "E0413":
        "`numaplan exec --log-dir DIR` could not create DIR or a rank's log file in it \
         (`rank-3.out`, `rank-3.err`). Nothing was started, or the ranks already started were \
         stopped. Exit code 3.";
    E0427_SYSCALL = "E0427" formerly "E0413":
        "A system call `exec` needs to run ranks failed (opening `/dev/null`, installing its \
         signal handlers, forking the guard of the ranks' process groups, creating a pipe): the \
         message names it and the errno. Nothing was left running. Exit code 3.";
    E0428_LOCAL_RANKS_DISAGREE = "E0428" formerly "E0419":
        "Two variables that say the local rank disagree: two launchers' (`LOCAL_RANK=1, \
         OMPI_COMM_WORLD_LOCAL_RANK=0`), or `NUMAPLAN_LOCAL_RANK` and a launcher's (an exported \
         `NUMAPLAN_LOCAL_RANK` that a launch nested inside a rank inherited). A launcher that \
         runs one task per node around another (`srun --ntasks-per-node=1 torchrun ...`) yields \
         to the inner one; any other disagreement is this error, never two ranks bound as one. \
         Unset the variable that is wrong, or pass `--local-rank N`.";
    E0429_TORCHRUN_VARIABLES = "E0429" formerly "E0419":
        "torchrun's `LOCAL_RANK` is not what its `RANK`, `GROUP_RANK` and `LOCAL_WORLD_SIZE` \
         give, and nothing says which is right (under `torchrun --virtual-local-rank` every \
         worker has `LOCAL_RANK=0` and sees one GPU, which tells numaplan to take the rank \
         `RANK` gives). A wrapper changed one of them: run under torchrun as it sets them, or \
         pass `--local-rank N`.";
    E0430_NOT_A_COUNT = "E0430" formerly "E0419":
        "A launcher's rank or size variable (`LOCAL_RANK=x`, `WORLD_SIZE=`) is not a whole \
         number. Unset or fix the variable, or pass `--local-rank N`.";
    E0431_LOCAL_RANK_PAST_SIZE = "E0431" formerly "E0419":
        "A launcher's local rank is at or past its own local size (`LOCAL_RANK=3` with \
         `LOCAL_WORLD_SIZE=2`): launchers number local ranks from 0 to the size less one, so a \
         wrapper set them by hand. Fix the variables, or pass `--local-rank N`.";
    E0432_LOCAL_RANK_VALUE = "E0432" formerly "E0419":
        "`NUMAPLAN_LOCAL_RANK` (or `--local-rank`) is neither a local rank (0, 1, ...) nor \
         `gpu` (the rank whose GPUs this process sees).";
    E0433_LOCAL_RANK_PAST_PLAN = "E0433" formerly "E0419":
        "The local rank is past the plan's ranks per node: the launcher starts more ranks on \
         this node than the plan has. Start as many as the plan has, or recompile it for more.";
    E0434_WORLD_SIZE = "E0434" formerly "E0420":
        "The launcher runs another number of ranks in all (`WORLD_SIZE`, `OMPI_COMM_WORLD_SIZE`, \
         `PMI_SIZE`, `FLUX_JOB_SIZE`, `SLURM_NTASKS`) than the plan's nodes x ranks per node. \
         Start the plan's count, or recompile the plan for the launcher's (the help names the \
         `--set` that gives it).";
    E0435_VISIBLE_GPU_UNKNOWN = "E0435" formerly "E0422":
        "An entry of a GPU-visibility variable names no GPU of the plan: an index past the \
         machine's GPUs or past what an outer variable left visible, or a UUID no GPU of the \
         plan has (a plan whose topology has no UUIDs knows its GPUs by index only; a MIG \
         instance's own UUID does not name its GPU). The message lists the plan's ranks with \
         their GPUs.";
    E0436_NO_RANK_FOR_GPUS = "E0436" formerly "E0422":
        "No rank of the plan has exactly the GPUs this process sees (a worker that sees two GPUs \
         where ranks have one, or a GPU no rank has). Make each worker see exactly one rank's \
         GPUs, or pass `--local-rank N`.";
    E0437_RANKS_SHARE_GPUS = "E0437" formerly "E0422":
        "Several ranks of the plan have exactly the GPUs this process sees (a plan that gives \
         two ranks the same GPU), so the GPUs do not say which rank it is. Give each rank its \
         own GPUs in the job spec, or pass `--local-rank N`.";
    E0438_READ_BACK = "E0438":
        "`exec --verify`: a rank read its binding back before its program started, and it was \
         not what exec applied (the kernel narrows an affinity to the CPUs a cpuset allows, and \
         a memory policy's nodes to the cpuset's memory nodes, without an error). The rank was \
         not started and nothing was left running. Exit code 3.";
    E0439_STOPPED_ON_DRIFT = "E0439":
        "`exec --watch --stop-on-drift`: the watch saw a change that stayed a problem (a thread \
         outside its rank's CPUs that `--repin` did not put back, a rank's memory under \
         `--min-local` on its planned nodes), and every rank was stopped, as the flag asks. \
         Without it, such a change is a line of the watch and the job runs on with its own \
         exit status.";
    E0440_NO_SUCH_PROCESS = "E0440":
        "`numaplan verify --pids` or `--process` names a process that does not exist (a \
         mistyped pid, or a rank that has ended), or a kernel thread. Nothing was checked. `pgrep -f NAME` lists the ranks' pids, \
         and `--match NAME` finds them by their command line.";
    E0441_TOO_LARGE = "E0441":
        "An input (job spec, plan, topology, standard input) is larger than 128 MiB, more than \
         any of numaplan's files (a plan of 4,096 ranks is some 3 MiB, the largest hwloc export \
         of a real machine some 20 MiB): a device such as `/dev/zero`, or the wrong file. \
         numaplan stops reading there instead of filling memory. A YAML file whose aliases \
         would expand it past 4 nodes a byte of it (an alias bomb) is refused the same way, \
         where they cross that bound, before anything expands them.";
    E0442_GROUP_UNKNOWN = "E0442":
        "`--group NAME` or `NUMAPLAN_GROUP` names no group of the plan (a job spec with \
         `groups:`): nothing started. The error lists the plan's groups; name one of them.";
    E0443_GROUP_NOT_FOUND = "E0443":
        "`exec`, `bind` or `verify` of a plan of several groups could not tell which group \
         this node runs: no `--group`, no `NUMAPLAN_GROUP`, no heterogeneous Slurm component \
         holding this host, and none or several of the groups' machines have this node's shape \
         (CPUs, NUMA nodes, GPUs). The error lists the groups and their shapes; pass \
         `--group NAME` (or set NUMAPLAN_GROUP).";
    E0444_GROUP_COMPONENTS = "E0444":
        "The plan of several groups runs in a heterogeneous Slurm job of another number of \
         components (`SLURM_HET_SIZE`): the job was not submitted from this plan's batch file \
         (`numaplan compile --emit sbatch`), whose components are the plan's groups in order. \
         Submit the plan's own batch file, or pass `--group NAME`.";
    E0445_ENGINE_RANK_GPUS = "E0445":
        "`--emit vllm`, `--emit sglang`: a worker of vLLM and of SGLang drives one GPU and binds itself to the \
         entry of that GPU, and a rank of the plan has no GPU or several, which no worker can \
         be. Plan one rank per GPU (`gpus_per_rank: 1`, the default), or launch the ranks \
         with `numaplan exec` or `--emit torchrun`.";
    E0446_OTHER_ENGINE = "E0446":
        "`--emit vllm` or `--emit sglang` of a spec whose `engine:` names another engine: the \
         script would start one engine where the spec says the ranks run another. Change \
         `engine:`, or emit the launch of the spec's engine.";
    E0447_ENGINE_LAUNCH_REFUSED = "E0447":
        "The `--emit vllm` or `--emit sglang` script refused to start the engine, because \
         what it was given would undo the plan: the engine's own binding flags (vLLM's \
         `--numa-bind*`, SGLang's `--numa-node`); for vLLM, an executor that does not start \
         its workers through numactl (`--distributed-executor-backend ray`, `uni`, \
         `external_launcher`, `--data-parallel-backend ray`) or `--device-ids`, which drives \
         other GPUs than the entries it binds; for SGLang, \
         `SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS`, which gives every worker entry 0; and a \
         visibility variable in the environment (`CUDA_VISIBLE_DEVICES`, \
         `HIP_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES`, `ZE_AFFINITY_MASK`) that names other \
         GPUs than the plan's, as a scheduler or container that chose the job's GPUs sets it, \
         which the script would otherwise overwrite. Exit code 2; nothing started. The line \
         says what to remove or unset (docs/engines.md).";
    E0448_SERVER_PER_RANK = "E0448":
        "`exec` or `bind` of a plan with `engine: vllm` or `engine: sglang` and several ranks a \
         node, whose command starts the engine's server (`vllm serve`, `python -m \
         sglang.launch_server`): every rank would start a whole server (eight on a DGX, each \
         asking for every GPU), where the engine runs one server whose workers each drive one \
         GPU. Nothing was started. The engine's launch is its script: `numaplan compile \
         job.yaml --emit vllm` (or `sglang`) starts one server, whose workers the engine binds \
         to their ranks (docs/engines.md).";
    E0449_RANK_UNKNOWN = "E0449":
        "`numaplan verify --process PID` (what `numaplan.check_binding()` runs) could not tell \
         which local rank of a plan of several ranks the process is: it carries no mark of \
         the plan (`exec`, `bind`, `numaplan.bind()`), no serving engine's worker title \
         (`VLLM::Worker_TP1`, `sglang::scheduler_TP1`) and no launcher's local rank variable, \
         or its environment cannot be read. Nothing was checked: taken for rank 0, a process \
         bound as another rank would read as a mismatch. Say which rank it is with \
         `--local-rank N`, or `--local-rank gpu` (the rank of the GPUs it sees).";
    E0450_VERIFY_UNKNOWN = "E0450":
        "`numaplan verify` could not read part of a rank's binding (`/proc/PID/numa_maps` of \
         another user's process, or of one the kernel's ptrace check keeps from this user: \
         another user namespace, a container without CAP_SYS_PTRACE, Yama's ptrace_scope) \
         and found nothing else wrong: the rank is neither bound as planned nor a mismatch. \
         Exit code 3 (E0416, a mismatch, is 1). Run verify as the ranks' user or root.";
    E0451_KUBERNETES_KEY_MISSING = "E0451":
        "`--emit k8s` of a spec without a key a manifest cannot guess: `kubernetes.image` (the \
         container image, with numaplan on its PATH), `kubernetes.memory` (the pod's memory, \
         its request and limit alike, as a Guaranteed pod needs) or, for a serving engine, \
         `kubernetes.args` (the model and the engine's arguments, which its script passes on). \
         Set it in the spec, or with `--set kubernetes.memory=1800Gi`.";
    E0452_KUBERNETES_NO_SYSTEM_CPUS = "E0452":
        "`--emit k8s` or `--emit kubelet` of a plan that leaves no CPU to the system: the \
         kubelet's static CPU Manager (and the CPU DRA driver) needs CPUs reserved for the \
         system and the kubelet (`reservedSystemCPUs`), and a pod cannot take a whole node. \
         Reserve some in the spec: `cpu: {reserve_cores: 2}` keeps two cores of each node for \
         the system, and `reservedSystemCPUs` is then those CPUs.";
    E0453_KUBERNETES_TOO_MANY_CPUS = "E0453":
        "`--emit k8s` under `kubernetes: {devices: dra, cpus: individual}`: the CPU DRA \
         driver's individual mode publishes one device per CPU, the pod's CPUs are one claim \
         (the driver takes one per container), and Kubernetes allocates at most 32 devices to \
         a claim (`AllocationResultsMaxSize`). A node's plan of more CPUs cannot be claimed \
         CPU by CPU: use `kubernetes.cpus: grouped` (the plan's CPU count on each NUMA node; \
         the driver chooses which CPUs of it), or plan fewer CPUs.";
    E0454_KUBERNETES_SHAPE = "E0454":
        "`--emit k8s` cannot write the job as asked: `kubernetes.workload` names a workload that \
         cannot run its shape (a Pod runs one node; an Indexed Job and a LeaderWorkerSet have \
         one pod template, a job of groups one per group: a JobSet), a group sets the \
         namespace, name, workload or launch otherwise than the job (its objects share them), \
         a group's name is no DNS label (it is part of its objects' names), or the plan is \
         larger than the 1 MiB a ConfigMap holds. Change the key or the group's name as the \
         message says; a plan that large wants fewer ranks a node in one job.";
    E0455_KUBERNETES_NAME = "E0455":
        "`--emit k8s`: the objects' base name (`kubernetes.name`, else the job's `name`, else \
         `numaplan`) is no DNS label, or too long once the manifests add their endings to it \
         (`-devices`, a group's name, a pod's index: Kubernetes takes at most 63 characters). \
         Set `kubernetes.name` to a shorter lowercase name.";
    E0456_KUBERNETES_MEMORY_POLICY = "E0456":
        "`--emit k8s` with `kubernetes.pod_security: baseline` or `restricted`, which refuse \
         the `SYS_NICE` capability, of a plan whose memory policy is `required`: without \
         `SYS_NICE` the container runtime's seccomp profile refuses `set_mempolicy`, and no \
         rank could start. Use a namespace whose Pod Security allows it (`privileged`), or \
         let the policy yield (`memory: {required: false}`: the ranks then run without it, \
         warning W0226).";
    E0457_POD_CPUS = "E0457":
        "`numaplan exec --pod` (the command of `--emit k8s`'s container): the pod was not \
         given the CPUs the plan needs, and no rank was started. Under `--pod exact` (DRA with \
         the CPU driver's `individual` mode) its CPUs must be the plan's, as its CPU claim \
         names them; under `--pod given` (the CPU driver's `grouped` mode, or the device \
         plugins and the kubelet's static CPU Manager) it must have at least the plan's CPU \
         count on each of the plan's NUMA nodes. A cpuset other than the CPU driver's \
         `DRA_CPUSET_*` means the kubelet's CPU Manager placed the container too. The help \
         names the claim or kubelet setting at fault.";
    E0458_POD_GPUS = "E0458":
        "`numaplan exec --pod`: a GPU of the plan (by PCI address) is not among the GPUs the \
         pod was given (its device nodes), and no rank was started: the devices claim \
         selected another GPU, or the device plugin chose others by count.";
    E0459_POD_CANNOT_RENAME = "E0459":
        "`numaplan exec --pod given`: the pod was given other CPUs than the plan's, and a rank \
         has a helper pool (`cpu.helpers`) or OpenMP places, whose CPU lists in its \
         environment numaplan does not rename to the given CPUs; no rank was started. Claim \
         the plan's exact CPUs (`kubernetes: {devices: dra, cpus: individual}`), or plan \
         without them.";
    W0200_PLAN_WARNING = "W0200":
        "A warning without a code of its own, read from a plan that an earlier numaplan wrote. \
         Today every warning has a code (`numaplan codes` lists them): `compile`, `exec` and `bind` print them on \
         standard error and every generated launcher lists them at its top; `--quiet` hides \
         them, `--deny-warnings` makes them an error (E0214), and `--allow CODE` (or the spec's \
         `allow_warnings:`) accepts one kind after review. Recompile the plan to give its \
         warnings their codes.";
    W0201_TOPOLOGY_NOTE = "W0201":
        "The topology's source noted something while reading the machine: hwloc warned while \
         importing an XML, skipped its consistency check, NVML disagreed with hwloc about a \
         GPU, or a display chip was not counted as a GPU. The plan is made from what was read; \
         check the note against the machine (`numaplan topo`).";
    W0202_DEPRECATED_KEY = "W0202":
        "The job spec uses a deprecated spelling (`cpu.reserve`, which names CPUs, not a \
         count). It still works; the warning gives the spelling to use.";
    W0203_CPUS_RESTRICTED = "W0203":
        "Some CPUs of a NUMA node are not allowed (\"node 0 has 10 of 20 CPUs allowed\"): the \
         spec's `cpu.allowed`, the process's affinity (taskset) or its cgroup cut them, and no \
         rank uses them. Inside a container, the CPUs it was discovered with are the machine: \
         its cpuset is no restriction. A deliberate restriction (as examples/dgx-spark.yaml's) \
         is accepted with `allow_warnings: [W0203]` in the spec or `--allow W0203`.";
    W0204_OPTION_IGNORED = "W0204":
        "The spec sets a `cpu:` option that its policy does not use (docs/policies.md, \"Options a \
         policy ignores\"): the plan is what the policy computes without it. Remove the \
         option, or use `policy: auto`, which honours every option.";
    W0205_GPUS_FROM_VARIABLE = "W0205":
        "`gpus: visible` chose the GPUs from a visibility variable (`CUDA_VISIBLE_DEVICES` and \
         its ROCm and Level Zero kin) of the environment `compile` ran in: the plan depends on \
         that environment, which the warning names.";
    W0206_GPUS_UNUSED = "W0206":
        "`gpus:` selects more GPUs than the ranks use: some selected GPUs have no rank. Set \
         `ranks_per_node` to use them all, or select only the GPUs the ranks use.";
    W0207_GPU_LOCALITY_UNKNOWN = "W0207":
        "A GPU has unknown NUMA locality (sysfs `numa_node` -1, or none in the topology): under \
         `policy: auto` its rank is placed as a CPU-only rank. Fix the firmware's locality or \
         give the topology file the GPU's node.";
    W0208_GPU_NODE_FALLBACK = "W0208":
        "A GPU's NUMA node has no CPUs (a CPU-less memory node, as on Grace Hopper) or no \
         allowed CPUs: its rank runs on the nearest node with allowed CPUs, named with its \
         distance.";
    W0209_PREFERRED_SPAN = "W0209":
        "CPU-only ranks span several NUMA nodes and `memory.policy: preferred` names one node: \
         each prefers its first node. Use `interleave` or `bind` to cover them all.";
    W0210_MEMORY_REMOTE = "W0210":
        "`memory.nodes` sends ranks' memory to nodes remote from their home node: memory access \
         there is slower. Deliberate for a memory-only (HBM, CXL) node; otherwise remove \
         `memory.nodes`.";
    W0211_MEMORY_NOT_ALLOWED = "W0211":
        "A rank's memory node is not in the memory nodes the job may use (its cpuset's mems): \
         its memory comes from the nearest allowed node instead, which the warning names.";
    W0212_SHARED_CPUS = "W0212":
        "The policy gives several ranks the same CPUs (`node`, `socket`, `all`, `single` and \
         their kin): `OMP_NUM_THREADS` is each rank's fair share of the cores (cores / ranks \
         sharing them, at least 1), not one thread per core. Set `env: {OMP_NUM_THREADS: N}` \
         to choose; `--allow W0212` when the sharing is what the job wants.";
    W0213_MIXED_CPU_KINDS = "W0213":
        "A rank's CPUs are of more than one kind (hybrid machines: performance and efficiency \
         cores, Arm big and little cores): its threads run at different speeds. Restrict the \
         ranks to one kind with `cpu.allowed` (`numaplan topo` lists the kinds).";
    W0214_GPUS_RENUMBERED = "W0214":
        "At launch (`exec`, `bind`): a GPU-visibility variable in the environment renumbers the \
         GPUs the ranks see, and the plan does not set it: a rank may run on another GPU than \
         the one it was placed next to. Unset the variable, compile where it is set with `gpus: \
         visible`, or give each rank its GPUs with `gpu: {visible: own}`.";
    W0215_LAUNCHER_BOUND = "W0215":
        "`bind`: the launcher had already bound this process (Open MPI's default core binding, \
         srun's `--cpu-bind`), to CPUs other than the plan's, and numaplan replaced that \
         binding with the plan's. Turn the launcher's binding off (`mpirun --bind-to none`, \
         `srun --cpu-bind=none`) so that one tool binds; `--allow W0215` to accept it.";
    W0216_NUMBERING_UNKNOWN = "W0216":
        "`bind` of a rank of a multi-node plan that no launcher numbers (a worker started by Ray \
         or a server, bound with `--local-rank gpu`): the plan's `WORLD_SIZE` is set, but \
         nothing says the rank's global `RANK`, its `NODE_RANK` or `MASTER_ADDR`, so \
         `torch.distributed` would wait or fail. Set them in the worker's environment, or start \
         it under a launcher (torchrun, srun, mpirun) that does.";
    W0217_MEMORY_POLICY_REFUSED = "W0217":
        "`exec`, `bind`, `numaplan.bind()` and the generated scripts: this node refused the \
         ranks' memory policy (a container's seccomp profile without CAP_SYS_NICE: Docker's \
         default and containerd's RuntimeDefault allow `set_mempolicy` only with it), and the \
         plan does not require it (the family's default policy, or `memory.required: false`), \
         so the ranks run with their CPUs bound and no memory policy. Add CAP_SYS_NICE \
         (`docker run --cap-add SYS_NICE`; Kubernetes: `securityContext.capabilities.add: \
         [SYS_NICE]`), or say `memory: {policy: none}`; `--allow W0217` accepts it.";
    W0218_MPIBIND_SHARED = "W0218":
        "`policy: mpibind`: there are more tasks than mpibind has CPUs (or GPUs) to give them, \
         so tasks share them as mpibind shares them; or `cpu.threads` asks for more threads \
         than a NUMA domain has CPUs, which mpibind reports as asked. Run fewer tasks or \
         threads, or `--allow W0218` where the sharing is meant.";
    W0219_MEMORY_ONLY_DOMAINS = "W0219":
        "`policy: mpibind`: the machine has NUMA nodes without CPUs (GPU memory on POWER9 and \
         Grace, HBM, CXL). mpibind counts them as domains and gives their tasks their parent's \
         CPUs (or none) or the same CPUs twice; numaplan maps tasks to the nodes with CPUs \
         only. The memory stays reachable with `memory:`.";
    W0220_ENGINE_UNSAID = "W0220":
        "The program is a serving engine that binds its GPU workers itself (`vllm serve`, \
         `python -m sglang.launch_server`, `trtllm-serve`...), and the spec does not say so \
         (no `engine:`, or another engine): the engine would undo the plan or run every worker \
         on one rank's CPUs. Said by `compile` (of the spec's `command`), `exec`, `bind` and \
         `numaplan.bind()` (of the program they start). Add `engine: vllm`, `sglang` or \
         `trtllm` to the spec: each rank's environment then turns the engine's own binding \
         off, and `--emit vllm` or `--emit sglang` writes the engine's launch \
         (docs/engines.md).";
    W0221_ENGINE_CANNOT_SAY = "W0221":
        "`--emit vllm`, `--emit sglang`: the plan says something the engine's own binding \
         cannot: a memory policy other than bound to the rank's node (both bind each worker's \
         memory with `numactl --membind`), helper cores, OpenMP places, a variable whose value \
         differs between ranks (the workers start with the server's environment), or a \
         `command` (the script starts the engine itself); SGLang also gives ranks that share a \
         node all of their CPUs together, and relaxes a `required` memory policy the node \
         refuses. The warning names what the engine does instead; plan what it does \
         (`memory: {policy: bind}`, `cpu: {policy: node}`), or `--allow W0221` after review.";
    W0222_FLUX_GROUP_UNPLACED = "W0222":
        "`--emit flux` of a job of several groups runs one Flux job per group, and a group's \
         `flux:` names neither `requires` nor `queue`: Flux may place its job on any nodes, \
         another group's among them, where `numaplan bind` refuses a node that is not the \
         group's (the first job, the all-or-nothing check, then fails and no rank starts). \
         Name the group's nodes: `flux: {requires: \"host:tioga[10-13]\"}` or a queue of \
         them.";
    W0223_ENGINE_ENVIRONMENT = "W0223":
        "A variable changes what a serving engine does with the plan: in the environment the \
         `--emit vllm` or `--emit sglang` script starts from (a site's `NCCL_IB_HCA` or \
         `UCX_NET_DEVICES`, which vLLM would extend with each worker's NIC and the script \
         clears, or which reaches every worker as it is where the engine cannot be told the \
         plan's NICs; SGLang's `SGLANG_SET_CPU_AFFINITY`, which replaces the plan's CPUs by a \
         share of the machine's cores by GPU index), or in the spec's `env:`, where a value \
         turns back on the binding `engine:` turns off (`SGLANG_AUTO_NUMA_BIND`, \
         `TLLM_NUMA_AWARE_WORKER_AFFINITY`) or sets the GPUs the plan chooses \
         (`CUDA_VISIBLE_DEVICES`). The warning names the variable and what the engine does \
         with it; remove or unset it to keep the plan's binding.";
    W0224_ENGINE_OWN_BINDING = "W0224":
        "The command runs the spec's serving engine with the engine's own binding flags \
         (vLLM's `--numa-bind`, `--numa-bind-nodes`, `--numa-bind-cpus`; SGLang's \
         `--numa-node`, in any spelling the engine's parser takes): the engine binds its \
         workers by them, replacing the plan's binding, and the `--emit vllm` or `--emit \
         sglang` script refuses them (E0447). Said by `compile` (of the spec's `command`), \
         `exec` and `bind`. Remove them: the engine's script passes the plan's own.";
    W0225_FRAMEWORK_BINDS = "W0225":
        "The command runs a training framework that binds its workers itself after numaplan \
         bound them: NeMo-RL (each Ray worker to its GPU's CPUs and memory from the file its \
         `ray.sub` writes; `NRL_DISABLE_NUMA_BINDING=1` in the spec's `env:` turns it off, \
         and silences this warning) or AReaL (each training engine to NVML's CPUs of GPU \
         LOCAL_RANK, `nvmlDeviceSetCpuAffinity`, with no switch). Said by `compile` (of the \
         spec's `command`), `exec` and `bind`. The plan's CPUs are replaced where it runs.";
    W0226_POD_SECURITY_MEMORY = "W0226":
        "`--emit k8s` with `kubernetes.pod_security: baseline` or `restricted`: those levels \
         refuse the `SYS_NICE` capability, which `set_mempolicy` needs under the container \
         runtime's default seccomp profile, so the pod does not ask for it and the ranks run \
         with their CPUs bound and no memory policy (W0217 at run time). Run the pod in a \
         namespace whose Pod Security is `privileged`, or `--allow W0226` after review.";
    W0227_KUBERNETES_UNCLAIMED = "W0227":
        "`--emit k8s`: the pod does not claim the plan's NICs. Under `devices: device-plugin` \
         the device plugins give GPUs and CPUs by count and no NIC; under `devices: dra` a NIC \
         whose PCI address the plan does not record cannot be selected. The ranks still name \
         their NICs (`NCCL_IB_HCA`), which the pod must reach otherwise (the host's network, \
         an RDMA device plugin). Use `devices: dra` with a topology that records the NICs' \
         PCI addresses, or `--allow W0227` after review.";
    W0228_POD_CPUS_CHOSEN = "W0228":
        "`numaplan exec --pod given`: the CPU driver (`grouped`) or the kubelet (device \
         plugins) gave the pod other CPUs than the plan's, as many on each of the plan's NUMA \
         nodes: the ranks run on those, each planned CPU renamed to a given one of the same \
         NUMA node in core order (whole cores stay whole, ranks that shared CPUs still share \
         them). Their NUMA nodes, memory policy and GPUs are the plan's; the exact CPUs are the \
         kubelet's. `kubernetes: {devices: dra, cpus: individual}` claims the plan's own.";
    W0229_KUBERNETES_ENGINE_CPUS = "W0229":
        "`--emit k8s` of vLLM pods (`engine: vllm`) whose CPUs are chosen by the kubelet \
         (`devices: device-plugin`) or the CPU driver (`cpus: grouped`): the vLLM script gives \
         vLLM the plan's own CPUs in its arguments (`--numa-bind-cpus`) and refuses a node \
         whose pod was given others (E0411), where `exec`, `bind` and the torchrun and SGLang \
         scripts run on the CPUs given (`NUMAPLAN_POD=given`, W0228); a vLLM pod starts only \
         where the CPUs it was given are the plan's. Claim them exactly \
         (`kubernetes: {devices: dra, cpus: individual}`, where a node's plan fits 32 CPUs), \
         or `--allow W0229` after review.";
}

/// The code that covered `code`'s problem before it had a code of its own (`E0419` for
/// `E0428`).
pub fn formerly(code: Code) -> Option<&'static str> {
    FORMERLY
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, old)| *old)
}

/// The code `code` names (in any case), with its explanation.
pub fn find(code: &str) -> Option<(Code, &'static str)> {
    ALL.iter()
        .find(|(c, _)| c.0.eq_ignore_ascii_case(code))
        .copied()
}

/// The codes a warning can have, in words: `W0201 to W0215` (W0200, which only plans of an
/// earlier numaplan hold, left out).
pub fn warning_range() -> String {
    let mut warnings = ALL
        .iter()
        .map(|(c, _)| c.0)
        .filter(|c| c.starts_with('W') && *c != W0200_PLAN_WARNING.0);
    let first = warnings.next().unwrap_or_default();
    let last = warnings.next_back().unwrap_or(first);
    format!("{first} to {last}")
}

/// The warning code `text` names (`W0203`, any case), or why it names none: the message
/// suggests the closest code, for `--allow` and the spec's `allow_warnings:`.
pub fn warning_code(text: &str) -> Result<Code, String> {
    match find(text) {
        Some((code, _)) if code.0.starts_with('W') => Ok(code),
        Some((code, _)) => Err(format!(
            "`{code}` is an error, not a warning: only warnings ({}) can be allowed",
            warning_range()
        )),
        None => Err(format!(
            "`{text}` is no warning code ({}; `numaplan codes` lists them)",
            warning_range()
        )),
    }
}
