//! `numaplan topo`: a machine as a user reads it, or as a fixture (YAML, JSON), or its
//! distance matrix.

use std::io::Write;

use super::write::emit;
use crate::cli::{TopoArgs, TopoFormat};
use crate::error::Error;
use crate::topology::{self, Reading, fixture, summary};

pub(super) fn topo(args: &TopoArgs, stdout: &mut dyn Write) -> Result<(), Error> {
    // The tree is none of what `topo` shows.
    let t = args.topology.load_for(Reading::Model)?;
    let text = match args.format {
        _ if args.matrix => topology::matrix::render(&t),
        TopoFormat::Text => summary::render(&t),
        TopoFormat::Yaml => fixture::dump(&t),
        TopoFormat::Json => fixture::dump_json(&t),
    };
    emit(stdout, args.output.as_deref(), &text)
}
