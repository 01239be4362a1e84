//! `NicKind`: what a NIC is to communication libraries (InfiniBand, RoCE, EFA, Slingshot,
//! plain Ethernet), which decides the variables that steer them to it. A machine's NICs have
//! one (`topology`), and so has each rank's NIC in a plan, which a launcher reads.

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NicKind {
    Infiniband,
    Roce,
    Efa,
    Slingshot,
    Ethernet,
}

impl NicKind {
    pub const ALL: [NicKind; 5] = [
        NicKind::Infiniband,
        NicKind::Roce,
        NicKind::Efa,
        NicKind::Slingshot,
        NicKind::Ethernet,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NicKind::Infiniband => "infiniband",
            NicKind::Roce => "roce",
            NicKind::Efa => "efa",
            NicKind::Slingshot => "slingshot",
            NicKind::Ethernet => "ethernet",
        }
    }

    /// The kind of its name (`infiniband`), as `name` writes it.
    pub fn named(name: &str) -> Option<NicKind> {
        NicKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether it is an RDMA verbs device (InfiniBand, RoCE): what NCCL's `NCCL_IB_HCA` and
    /// UCX's `UCX_NET_DEVICES` name, and vLLM maps a GPU to.
    pub fn is_verbs(self) -> bool {
        matches!(self, NicKind::Infiniband | NicKind::Roce)
    }
}
