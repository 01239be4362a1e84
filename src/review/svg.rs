//! The picture as an SVG file (`explain --format svg`): the same model as the terminal drawing,
//! cores as coloured squares numbered by rank.

use std::fmt::Write as _;

use super::picture::{Mark, NodeBox, PackageBox, Picture, Row, legend, rank_rgb};

const CELL: u32 = 18;
const GAP: u32 = 2;
const GROUP_GAP: u32 = 8;
const LINE: u32 = 16;
const PAD: u32 = 10;

pub fn render(p: &Picture, title: &str) -> String {
    let legend = legend(p);
    let mut c = Canvas {
        body: String::new(),
        y: PAD,
        inner: inner_width(p, &legend),
    };
    let _ = writeln!(
        c.body,
        r#"<text x="{PAD}" y="{}" class="title">{}</text>"#,
        c.y + 14,
        esc(title)
    );
    c.y += 24;
    let _ = writeln!(
        c.body,
        r#"<text x="{PAD}" y="{}" class="small">{}</text>"#,
        c.y + 10,
        esc(&legend)
    );
    c.y += 22;
    for pk in &p.packages {
        c.package(pk);
    }
    for d in &p.unplaced {
        let _ = writeln!(
            c.body,
            r#"<text x="{PAD}" y="{}">no NUMA node: {}</text>"#,
            c.y + 12,
            esc(d)
        );
        c.y += LINE;
    }
    let width = c.inner + 4 * PAD;
    let height = c.y + PAD;
    let body = c.body;
    format!(
        r##"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, monospace" font-size="12">
<style>.title {{ font-size: 15px; font-weight: bold; }} .label {{ font-weight: bold; }} .small {{ font-size: 10px; fill: #555; }} .cell {{ font-size: 10px; text-anchor: middle; }}</style>
<rect width="100%" height="100%" fill="#ffffff"/>
{body}</svg>
"##
    )
}

fn row_width(groups: &[Vec<Mark>]) -> u32 {
    let cells: u32 = groups.iter().map(|g| g.len() as u32).sum();
    44 + cells * (CELL + GAP) + groups.len() as u32 * GROUP_GAP
}

/// The width inside a package box: its widest row of cores or line of text.
fn inner_width(p: &Picture, legend: &str) -> u32 {
    let nodes = p.packages.iter().flat_map(|pk| &pk.nodes);
    nodes
        .clone()
        .flat_map(|n| n.rows.iter().map(|r| row_width(&r.groups)))
        .chain(nodes.flat_map(|n| {
            n.devices
                .iter()
                .chain([&n.label])
                .map(|d| text_width(d) + 16)
        }))
        .chain([text_width(legend)])
        .max()
        .unwrap_or(200)
}

/// The SVG drawn so far and where the next element goes.
struct Canvas {
    body: String,
    y: u32,
    inner: u32,
}

impl Canvas {
    /// A package's box around its nodes.
    fn package(&mut self, pk: &PackageBox) {
        let top = self.y;
        self.y += LINE + 6;
        for n in &pk.nodes {
            self.node(n);
        }
        self.y += 4;
        let _ = writeln!(
            self.body,
            r##"<rect x="{PAD}" y="{top}" width="{}" height="{}" rx="6" fill="none" stroke="#1f2533" stroke-width="1.5"/>"##,
            self.inner + 2 * PAD,
            self.y - top
        );
        let _ = writeln!(
            self.body,
            r#"<text x="{}" y="{}" class="label">{}</text>"#,
            PAD + 6,
            top + 16,
            esc(&pk.label)
        );
        self.y += 10;
    }

    /// A node's box: its rows of cores, then its devices.
    fn node(&mut self, n: &NodeBox) {
        let node_top = self.y;
        self.y += LINE + 4;
        for row in &n.rows {
            self.row(row);
        }
        for d in &n.devices {
            let _ = writeln!(
                self.body,
                r#"<text x="{}" y="{}">{}</text>"#,
                2 * PAD + 8,
                self.y + 12,
                esc(d)
            );
            self.y += LINE;
        }
        self.y += 6;
        let _ = writeln!(
            self.body,
            r##"<rect x="{}" y="{node_top}" width="{}" height="{}" rx="4" fill="none" stroke="#4a5368"/>"##,
            2 * PAD,
            self.inner,
            self.y - node_top
        );
        let _ = writeln!(
            self.body,
            r#"<text x="{}" y="{}" class="label">{}</text>"#,
            2 * PAD + 6,
            node_top + 15,
            esc(&n.label)
        );
        self.y += 6;
    }

    /// A row of cores: its first CPU, then each L3 group's cells on a shaded band.
    fn row(&mut self, row: &Row) {
        let y = self.y;
        let mut x = 2 * PAD + 8;
        let _ = writeln!(
            self.body,
            r#"<text x="{x}" y="{}" class="small">{}</text>"#,
            y + 13,
            row.first_cpu
        );
        x += 36;
        for group in &row.groups {
            let gw = group.len() as u32 * (CELL + GAP) + GAP;
            let _ = writeln!(
                self.body,
                r##"<rect x="{}" y="{}" width="{gw}" height="{}" rx="3" fill="#eef0f4" stroke="#9aa3b5"/>"##,
                x - GAP,
                y - GAP,
                CELL + 2 * GAP
            );
            for mark in group {
                cell(&mut self.body, x, y, *mark);
                x += CELL + GAP;
            }
            x += GROUP_GAP;
        }
        self.y += CELL + 2 * GAP + 2;
    }
}

fn cell(out: &mut String, x: u32, y: u32, mark: Mark) {
    let (fill, text, ink) = match mark {
        Mark::Rank(r) => {
            let rgb = rank_rgb(r);
            let ink = if is_dark(&rgb) { "#ffffff" } else { "#000000" };
            (rgb, r.to_string(), ink)
        }
        Mark::Helper(r) => {
            let rgb = rank_rgb(r);
            let ink = if is_dark(&rgb) { "#ffffff" } else { "#000000" };
            (rgb, "h".into(), ink)
        }
        Mark::Shared => ("#b0b0b0".into(), "*".into(), "#000000"),
        Mark::Reserved => ("#d8d8d8".into(), "r".into(), "#555555"),
        Mark::NotAllowed => ("#404040".into(), "×".into(), "#ffffff"),
        Mark::Idle => ("#ffffff".into(), String::new(), "#000000"),
    };
    let _ = writeln!(
        out,
        r##"<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="{fill}" stroke="#777777"/><text x="{}" y="{}" class="cell" fill="{ink}">{}</text>"##,
        x + CELL / 2,
        y + 13,
        esc(&text)
    );
}

/// Whether black text would be hard to read on `#rrggbb` (perceived luminance below half).
fn is_dark(rgb: &str) -> bool {
    let c = |i: usize| u32::from_str_radix(&rgb[i..i + 2], 16).unwrap_or(255);
    299 * c(1) + 587 * c(3) + 114 * c(5) < 128_000
}

/// Approximate width of monospace text at 12px.
fn text_width(s: &str) -> u32 {
    s.chars().count() as u32 * 7 + 8
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
