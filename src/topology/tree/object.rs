//! The tree's objects and their text form.

use crate::cpuset::CpuSet;
use crate::ids::NodeId;
use crate::pci_addr::PciAddr;

/// What an object is, as far as the structure rule ranks it (`structure.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Machine,
    Package,
    Die,
    Group,
    /// A data or unified cache of this level.
    DataCache(u8),
    /// An instruction cache of this level.
    InstructionCache(u8),
    Core,
    Pu,
}

impl Kind {
    fn code(self) -> String {
        match self {
            Kind::Machine => "M".into(),
            Kind::Package => "P".into(),
            Kind::Die => "D".into(),
            Kind::Group => "G".into(),
            Kind::DataCache(l) => format!("L{l}"),
            Kind::InstructionCache(l) => format!("I{l}"),
            Kind::Core => "C".into(),
            Kind::Pu => "U".into(),
        }
    }

    fn from_code(s: &str) -> Option<Kind> {
        let level = || s.get(1..)?.parse::<u8>().ok();
        Some(match s.get(..1)? {
            "M" => Kind::Machine,
            "P" => Kind::Package,
            "D" => Kind::Die,
            "G" => Kind::Group,
            "L" => Kind::DataCache(level()?),
            "I" => Kind::InstructionCache(level()?),
            "C" => Kind::Core,
            "U" => Kind::Pu,
            _ => return None,
        })
    }
}

/// One CPU-side object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeObject {
    pub kind: Kind,
    /// hwloc's depth of the object: the level it is on (one number per level).
    pub depth: u32,
    pub cpus: CpuSet,
    /// The NUMA nodes attached to it, in hwloc's order.
    pub nodes: Vec<NodeId>,
    /// The GPUs whose first non-I/O ancestor it is, by PCI address, in hwloc's device order.
    pub gpus: Vec<PciAddr>,
    /// Its normal children, in hwloc's order (by lowest PU).
    pub children: Vec<TreeObject>,
}

/// A machine's object tree; the root is the Machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuTree {
    pub root: TreeObject,
}

impl CpuTree {
    /// The tree as text, one object per line in depth-first order (the XML import's child
    /// sends it back so). An object whose children are plain PUs, one per CPU, says `U<depth>`
    /// in place of their count and their lines are left out: they are half of a machine's
    /// objects.
    pub fn encode(&self) -> String {
        fn line(o: &TreeObject, out: &mut String) {
            let pus = o.pu_children();
            let list = |v: Vec<String>| v.join(",");
            out.push_str(&format!(
                "{} {} {} [{}] [{}] {}\n",
                o.depth,
                o.kind.code(),
                if o.cpus.is_empty() {
                    "-".to_string()
                } else {
                    o.cpus.to_string()
                },
                list(o.nodes.iter().map(|n| n.0.to_string()).collect()),
                list(o.gpus.iter().map(|g| g.to_string()).collect()),
                match pus {
                    Some(depth) => format!("U{depth}"),
                    None => o.children.len().to_string(),
                }
            ));
            if pus.is_none() {
                for c in &o.children {
                    line(c, out);
                }
            }
        }
        let mut out = String::new();
        line(&self.root, &mut out);
        out
    }

    /// Reads back [`CpuTree::encode`]'s text.
    pub fn decode(text: &str) -> Option<CpuTree> {
        fn object<'a>(lines: &mut impl Iterator<Item = &'a str>) -> Option<TreeObject> {
            let words: Vec<&str> = lines.next()?.split(' ').collect();
            let [depth, kind, cpus, nodes, gpus, children] = words.as_slice() else {
                return None;
            };
            let inner = |s: &'a str| s.strip_prefix('[')?.strip_suffix(']');
            let items = |s: &'a str| inner(s).map(|s| s.split(',').filter(|w| !w.is_empty()));
            let mut o = TreeObject {
                kind: Kind::from_code(kind)?,
                depth: depth.parse().ok()?,
                cpus: match *cpus {
                    "-" => CpuSet::new(),
                    list => list.parse().ok()?,
                },
                nodes: items(nodes)?
                    .map(|n| n.parse().ok().map(NodeId))
                    .collect::<Option<_>>()?,
                gpus: items(gpus)?
                    .map(|g| g.parse().ok())
                    .collect::<Option<_>>()?,
                children: Vec::new(),
            };
            match children.strip_prefix('U') {
                Some(depth) => {
                    let depth = depth.parse().ok()?;
                    o.children = o.cpus.iter().map(|c| TreeObject::pu(c, depth)).collect();
                }
                None => {
                    let n: usize = children.parse().ok()?;
                    for _ in 0..n {
                        o.children.push(object(lines)?);
                    }
                }
            }
            Some(o)
        }
        let mut lines = text.lines();
        let root = object(&mut lines)?;
        lines.next().is_none().then_some(CpuTree { root })
    }
}

impl TreeObject {
    /// The depth of this object's children when they are plain PUs, one per CPU of it, in
    /// order (what [`CpuTree::encode`] need not list).
    fn pu_children(&self) -> Option<u32> {
        let depth = self.children.first()?.depth;
        let plain = |c: &TreeObject| {
            c.kind == Kind::Pu
                && c.depth == depth
                && c.nodes.is_empty()
                && c.gpus.is_empty()
                && c.children.is_empty()
                && c.cpus.len() == 1
        };
        let in_order = self
            .children
            .iter()
            .map(|c| c.cpus.first())
            .eq(self.cpus.iter().map(Some));
        (self.children.iter().all(plain) && in_order).then_some(depth)
    }

    /// A PU at `depth`.
    pub fn pu(cpu: u32, depth: u32) -> TreeObject {
        TreeObject {
            kind: Kind::Pu,
            depth,
            cpus: CpuSet::range(cpu, cpu),
            nodes: Vec::new(),
            gpus: Vec::new(),
            children: Vec::new(),
        }
    }

    /// An object over `children` (sorted by their lowest CPU), with their CPUs.
    pub fn over(kind: Kind, depth: u32, children: impl Iterator<Item = TreeObject>) -> TreeObject {
        let mut children: Vec<TreeObject> = children.collect();
        children.sort_by_key(|c| c.cpus.first().unwrap_or(u32::MAX));
        TreeObject {
            kind,
            depth,
            cpus: children.iter().map(|c| &c.cpus).collect(),
            nodes: Vec::new(),
            gpus: Vec::new(),
            children,
        }
    }
}
