//! `numaplan diff` and `numaplan explain`: load each input (a plan file, a job spec compiled on
//! the fly, or either from git history) with its topology, then hand them to `review`.

use std::io::{IsTerminal as _, Write};

use super::emit;
use super::input::{PlanMachine, Subject, load_subject};
use super::json;
use crate::cli::{ColourChoice, DiffArgs, ExplainArgs, ExplainFormat, ReportFormat};
use crate::error::Error;
use crate::review::{diff as plan_diff, explain as plan_explain, picture, svg};

pub fn diff(args: &DiffArgs, stdout: &mut dyn Write) -> Result<(), Error> {
    let old_t = args.old_topology.as_ref().or(args.topology.as_ref());
    let new_t = args.new_topology.as_ref().or(args.topology.as_ref());
    let old = load_subject(Some(&args.old), old_t, PlanMachine::Lenient, &[])?;
    let new = load_subject(
        Some(&args.new),
        new_t,
        PlanMachine::Lenient,
        &args.overrides.set,
    )?;
    // The new side's label says what `--set` changed on it.
    let new_label = args
        .overrides
        .set
        .iter()
        .fold(new.label.clone(), |label, o| {
            format!("{label} --set {}", o.text())
        });
    let mut new_side = side(&new);
    new_side.label = &new_label;
    let report = plan_diff::diff(&side(&old), &new_side);
    let text = match args.format {
        ReportFormat::Text => {
            let mut t = String::new();
            for n in old.notes.iter().chain(&new.notes) {
                t.push_str(&format!("note: {n}\n"));
            }
            t + &report.render_text()
        }
        ReportFormat::Json => json(&report),
    };
    emit(stdout, None, &text)?;
    if args.exit_code && !report.is_empty() {
        return Err(Error::Differs);
    }
    Ok(())
}

pub fn explain(args: &ExplainArgs, stdout: &mut dyn Write) -> Result<(), Error> {
    let machine = if args.force {
        PlanMachine::Lenient
    } else {
        PlanMachine::Strict
    };
    let mut s = load_subject(
        Some(&args.input),
        args.topology.as_ref(),
        machine,
        &args.overrides.set,
    )?;
    let Some(topo) = &s.topology else {
        return Err(Error::NeedsTopology {
            input: args.input.clone(),
            notes: s.notes,
        });
    };
    if args.force && !s.notes.is_empty() {
        s.notes.insert(
            0,
            "DRAWN ON ANOTHER MACHINE (--force): cores, L3 groups and reasons below may not be the plan's".into(),
        );
    }
    let text = match args.format {
        ExplainFormat::Text => {
            let colour = match args.color {
                ColourChoice::Always => picture::Colour::Always,
                ColourChoice::Never => picture::Colour::Never,
                ColourChoice::Auto => {
                    let tty = args.output.is_none() && std::io::stdout().is_terminal();
                    if tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) {
                        picture::Colour::Always
                    } else {
                        picture::Colour::Never
                    }
                }
            };
            plan_explain::render_text(&s.plan, topo, &s.notes, colour)
        }
        ExplainFormat::Json => json(&plan_explain::report(&s.plan, topo, &s.notes)),
        ExplainFormat::Mpibind => crate::review::mpibind::render(&s.plan),
        ExplainFormat::Svg => {
            let title = format!(
                "{} on {} (policy {})",
                s.plan.name.as_deref().unwrap_or("plan"),
                s.plan.topology,
                s.plan.policy.name()
            );
            svg::render(&picture::build(&s.plan, topo), &title)
        }
    };
    emit(stdout, args.output.as_deref(), &text)
}

fn side(s: &Subject) -> plan_diff::Side<'_> {
    plan_diff::Side {
        label: &s.label,
        plan: &s.plan,
        fingerprint: &s.fingerprint,
        topology: s.topology.as_ref(),
    }
}
