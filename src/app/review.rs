//! `numaplan diff` and `numaplan explain`: load each input (a plan file, a job spec compiled on
//! the fly, or either from git history) with its topology, then hand them to `review`.

use std::io::{IsTerminal as _, Write};

use super::input::{PlanMachine, Request, Subject, every_group, group_shapes};
use super::write::emit;
use super::write::json;
use crate::cli::{ColourChoice, DiffArgs, ExplainArgs, ExplainFormat, ReportFormat};
use crate::error::Error;
use crate::rank::RankError;
use crate::review::{diff as plan_diff, explain as plan_explain, picture, svg};
use crate::topology::Topology;

pub fn diff(args: &DiffArgs, stdout: &mut dyn Write) -> Result<(), Error> {
    let old_t = args.old_topology.as_ref().or(args.topology.as_ref());
    let new_t = args.new_topology.as_ref().or(args.topology.as_ref());
    let old = every_group(&Request {
        arg: Some(&args.old),
        topology: old_t,
        machine: PlanMachine::Lenient,
        overrides: &[],
        needs_command: false,
    })?;
    let mut new = every_group(&Request {
        arg: Some(&args.new),
        topology: new_t,
        machine: PlanMachine::Lenient,
        overrides: &args.overrides.set,
        needs_command: false,
    })?;
    // The new side's label says what `--set` changed on it.
    for subject in &mut new {
        for o in &args.overrides.set {
            subject.label = format!("{} --set {}", subject.label, o.text());
        }
    }
    let notes: String = old
        .iter()
        .chain(&new)
        .flat_map(|s| &s.notes)
        .map(|n| format!("note: {n}\n"))
        .collect();
    let olds: Vec<_> = old.iter().map(side).collect();
    let news: Vec<_> = new.iter().map(side).collect();
    let report = plan_diff::diff_job(&olds, &news);
    let text = match args.format {
        ReportFormat::Text => notes + &report.render_text(),
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
    let mut subjects = every_group(&Request {
        arg: Some(&args.input),
        topology: args.topology.as_ref(),
        machine,
        overrides: &args.overrides.set,
        needs_command: false,
    })?;
    if let Some(name) = &args.group {
        let groups = group_shapes(&subjects);
        subjects.retain(|s| s.plan.is_group(name));
        if subjects.is_empty() {
            return Err(RankError::GroupUnknown {
                name: name.clone(),
                via: "--group".into(),
                groups,
            }
            .into());
        }
    }
    if subjects.len() > 1 && args.format == ExplainFormat::Svg {
        let names: Vec<String> = group_shapes(&subjects)
            .into_iter()
            .map(|g| g.name)
            .collect();
        return Err(Error::Usage {
            message: format!(
                "an SVG picture shows one group, and the plan has {}",
                names.len()
            ),
            help: format!("pass `--group NAME`: one of {}", names.join(", ")),
        });
    }
    let layout = match args.format {
        ExplainFormat::Svg => plan_explain::Layout::One,
        ExplainFormat::Mpibind => plan_explain::Layout::CommentedHeadings,
        _ => plan_explain::Layout::Headings,
    };
    let mut parts = Vec::new();
    for mut s in subjects {
        forced_banner(args, &mut s);
        let drawn = explain_one(args, &s)?;
        parts.push((s.plan, drawn));
    }
    let text = plan_explain::job(parts, layout);
    emit(stdout, args.output.as_deref(), &text)
}

/// `--force` on another machine's topology: the notes start with a banner saying so.
fn forced_banner(args: &ExplainArgs, s: &mut Subject) {
    if args.force && !s.notes.is_empty() {
        s.notes.insert(
            0,
            "DRAWN ON ANOTHER MACHINE (--force): cores, L3 groups and reasons below may not be the plan's".into(),
        );
    }
}

/// The topology a plan is drawn on: `explain` needs one.
fn plan_topology<'s>(args: &ExplainArgs, s: &'s Subject) -> Result<&'s Topology, Error> {
    s.topology.as_ref().ok_or_else(|| Error::NeedsTopology {
        input: args.input.clone(),
        notes: s.notes.clone(),
    })
}

/// `explain` of one plan (of one group), its notes already bannered (`forced_banner`).
fn explain_one(args: &ExplainArgs, s: &Subject) -> Result<plan_explain::Drawn, Error> {
    let topo = plan_topology(args, s)?;
    if args.format == ExplainFormat::Json {
        return Ok(plan_explain::Drawn::Report(plan_explain::report(
            &s.plan, topo, &s.notes,
        )));
    }
    Ok(plan_explain::Drawn::Text(match args.format {
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
        ExplainFormat::Json => unreachable!("a report, above"),
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
    }))
}

fn side(s: &Subject) -> plan_diff::Side<'_> {
    plan_diff::Side {
        label: &s.label,
        plan: &s.plan,
        fingerprint: &s.fingerprint,
        topology: s.topology.as_ref(),
    }
}
