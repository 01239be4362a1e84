//! `gpus:` and `gpu:` as written.

use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::diag::suggest::did_you_mean;

/// `gpus:`: `all`, `none`, `visible` (the GPUs CUDA_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES
/// names where numaplan runs; all when neither is set), a count, or a list of GPU indices.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum GpuSelection {
    /// `all`, `none` or `visible`.
    Keyword(GpuKeyword),
    /// The first N GPUs.
    Count(u32),
    /// These GPU indices, in this order.
    List(Vec<u32>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GpuKeyword {
    /// Every GPU of the machine.
    All,
    /// No GPU: CPU-only ranks.
    None,
    /// The GPUs CUDA_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES names where numaplan runs; each
    /// rank's environment sets the variable to the same value (with `gpu.visible: all`).
    Visible,
}

const KEYWORDS: &[&str] = &["all", "none", "visible"];

/// What `gpus:` takes, in words.
struct ExpectedGpus;

impl fmt::Display for ExpectedGpus {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`all`, `none`, `visible`, a GPU count or a list of GPU indices")
    }
}

impl<'de> Deserialize<'de> for GpuSelection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = GpuSelection;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{ExpectedGpus}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<GpuSelection, E> {
                match v {
                    "all" => Ok(GpuSelection::Keyword(GpuKeyword::All)),
                    "none" => Ok(GpuSelection::Keyword(GpuKeyword::None)),
                    "visible" => Ok(GpuSelection::Keyword(GpuKeyword::Visible)),
                    // A typo of a keyword gets "did you mean"; anything else is told all the
                    // forms, since "expected one of the keywords" would hide counts and lists.
                    other if did_you_mean(other, KEYWORDS.iter().copied()).is_some() => {
                        Err(E::unknown_variant(other, KEYWORDS))
                    }
                    other => Err(E::custom(format!("`{other}` is not {}", ExpectedGpus))),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<GpuSelection, E> {
                u32::try_from(v)
                    .map(GpuSelection::Count)
                    .map_err(|_| E::custom(format!("{v} GPUs is out of range")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<GpuSelection, E> {
                Err(E::custom(format!("a GPU count cannot be negative ({v})")))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<GpuSelection, A::Error> {
                let mut list = Vec::new();
                while let Some(i) = seq.next_element::<u32>()? {
                    list.push(i);
                }
                Ok(GpuSelection::List(list))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuOptions {
    /// Which GPUs each rank sees: `all` (default, like torchrun) or `own` (sets
    /// CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES / ZE_AFFINITY_MASK to the rank's GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "all"))]
    pub visible: Option<VisibleName>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VisibleName {
    /// Every rank sees every GPU (like torchrun).
    All,
    /// Each rank sees only its own GPUs (CUDA_VISIBLE_DEVICES and the like).
    Own,
}
