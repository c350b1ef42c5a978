//! `--report DIR`: a self-contained `index.html` with inline SVG plots.
//!
//! Per workload: its description, then per case a row of plots: throughput versus threads (log
//! scales where the values span more than a factor of 30), CPU time per operation and p99
//! acquisition latency; cases measured at a single thread count (`uncontended`) get a bar chart
//! of ns per operation instead. Each line plot carries its own legend (inside the SVG, so a
//! copied plot keeps it). Below the plots, a table of the numbers (medians of the runs) with the
//! ratio of the workload's own series to the best other and its spread; an undecided ratio
//! (spread across 1.0 or wider than ±5%) is marked. Plots are drawn by plotters' SVG
//! backend, which writes text as SVG `<text>` (no fonts are needed to produce the file).

use super::group::{groups, is_own, Group};
use super::locks;
use super::output::{own_series_of, verdict, Run, WorkloadInfo};
use super::stats::{duration_ns, si, Record};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;
use std::path::Path;

/// Line colours, assigned to series in order of appearance (colour-blind friendly, Okabe-Ito
/// plus a few).
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(120, 120, 120),
    RGBColor(240, 200, 0),
    RGBColor(100, 60, 160),
    RGBColor(0, 0, 0),
];

/// Our own series (the workload's `ours` and its family, e.g. `scalelock-biased`) are drawn in
/// these colours (red first), thicker.
const OURS: [RGBColor; 3] = [
    RGBColor(200, 0, 30),
    RGBColor(130, 0, 110),
    RGBColor(255, 90, 90),
];

const PLOT_W: u32 = 430;
const PLOT_H: u32 = 300;

/// Writes `dir/index.html`; returns its path.
pub fn write(run: &Run, dir: &Path) -> Result<std::path::PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("index.html");
    let html = html(run)?;
    std::fs::write(&path, html).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn color_of(series: &[&str], s: &str, ours: &str) -> RGBColor {
    let own = |x: &&&str| is_own(ours, x);
    if is_own(ours, s) {
        let i = series.iter().filter(own).take_while(|x| **x != s).count();
        return OURS[i % OURS.len()];
    }
    let others = series.iter().filter(|x| !is_own(ours, x));
    let i = others.take_while(|x| **x != s).count();
    PALETTE[i % PALETTE.len()]
}

/// The whole page.
pub fn html(run: &Run) -> Result<String, String> {
    let m = &run.machine;
    let mut h = String::new();
    let _ = write!(
        h,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>scalelock bench</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; max-width: 1400px; }}
h1 {{ margin-bottom: 4px; }} h2 {{ margin-top: 40px; border-bottom: 2px solid #ccc; }}
h3 {{ margin: 18px 0 6px; color: #444; }}
.about {{ max-width: 1000px; line-height: 1.4; }}
.plots {{ display: flex; flex-wrap: wrap; gap: 12px; }}
.plots svg {{ border: 1px solid #ddd; background: #fff; }}
table {{ border-collapse: collapse; font-size: 13px; margin: 8px 0; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
tr.ratio td {{ font-weight: bold; background: #f4f4f4; }}
td.good {{ color: #070; }} td.bad {{ color: #a00; }} td.undecided {{ color: #777; font-style: italic; }}
.machine td {{ text-align: left; }}
</style></head><body>
<h1>scalelock bench</h1>
<p>Each point ran {repeat} time{s} for {round} ms, each after {warm} ms of warm-up with its threads
started together (each woken by the harness); the runs of the locks compared in one cell were interleaved round by round,
in an order shuffled per round, so that a change in the machine's speed hits every lock alike.
Figures are medians of the runs. Ratios divide the medians and show the range of the per-round
ratios; a ratio marked <b>?</b> is undecided: that range crosses 1.0 or is wider than ±5%.
Throughput counts operations of all threads together unless the workload says otherwise; CPU per operation is the process's user +
system time over the measured window divided by the operations; latency is the time to acquire
the lock, sampled (each sample includes about {clock} ns of reading the clock). Ratios compare against the other locks of this same run: absolute numbers
from a shared or noisy machine are not comparable across runs.</p>
<table class="machine">
<tr><td>CPUs</td><td>{cpus} online, {usable} usable by this process</td></tr>
<tr><td>CPU model</td><td>{model}</td></tr>
<tr><td>Kernel</td><td>{kernel}</td></tr>
<tr><td>Commit</td><td>{commit}</td></tr>
<tr><td>Date</td><td>{date}</td></tr>
<tr><td>Command</td><td><code>{command}</code></td></tr>
<tr><td>Thread sweep</td><td>{threads}{quick}</td></tr>
<tr><td>Spin policy</td><td>{policy} (outside adaptive-grid)</td></tr>
<tr><td>Load average (1 min)</td><td>{load}</td></tr>
</table>
"#,
        repeat = run.config.repeat,
        s = if run.config.repeat == 1 { "" } else { "s" },
        round = run.config.duration_ms,
        warm = run.config.warmup_ms,
        cpus = m.cpus,
        usable = m.usable_cpus,
        model = esc(&m.model),
        kernel = esc(&m.kernel),
        threads = run
            .config
            .threads
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        quick = if run.config.quick { " (--quick)" } else { "" },
        policy = esc(&run.config.spin_policy),
        clock = run.config.clock_overhead_ns,
        load = load_text(run),
        commit = esc(&run.config.commit),
        date = esc(&run.config.date),
        command = esc(&run.config.command),
    );

    let all = groups(&run.results);
    let mut names: Vec<&str> = Vec::new();
    for g in &all {
        if !names.contains(&g.workload) {
            names.push(g.workload);
        }
    }
    h.push_str(
        "<h2>Summary</h2>\n<table><tr><th>workload</th><th>compared</th>\
         <th>verdict (by the median ratio to the best other)</th><th>undecided cells</th>\
         <th>worst ratio</th><th>geometric mean ratio</th></tr>\n",
    );
    for n in &names {
        let ours = run
            .workloads
            .iter()
            .find(|w| w.name == *n)
            .map_or("scalelock", |i| i.ours.as_str());
        for own in own_series_of(&run.results, n, ours) {
            summary_row(&mut h, run, n, ours, own);
        }
    }
    h.push_str("</table>\n");

    for name in names {
        let info = run.workloads.iter().find(|w| w.name == name);
        let ours = info.map_or("scalelock", |i| i.ours.as_str());
        let _ = writeln!(h, "<h2 id=\"{0}\">{0}</h2>", esc(name));
        if let Some(info) = info {
            let _ = writeln!(h, "<p class=\"about\">{}</p>", esc(&info.about));
        }
        for g in all.iter().filter(|g| g.workload == name) {
            if let Some(c) = g.case {
                let _ = writeln!(h, "<h3>{}</h3>", esc(c));
            }
            section(&mut h, g, ours, info)?;
        }
    }
    h.push_str("<h2>Locks</h2>\n<table>\n");
    for l in locks::MUTEXES
        .iter()
        .chain(locks::RWLOCKS)
        .chain([&locks::FLOOR])
        .filter(|l| run.results.iter().any(|r| &r.lock == *l))
    {
        if !h.contains(&format!("<tr><td>{l}</td>")) {
            let _ = writeln!(
                h,
                "<tr><td>{l}</td><td style=\"text-align:left\">{}</td></tr>",
                esc(locks::describe(l))
            );
        }
    }
    h.push_str("</table>\n</body></html>\n");
    Ok(h)
}

/// The load averages, with a warning when other work competed with the run.
fn load_text(run: &Run) -> String {
    let show = |l: Option<f64>| l.map_or("?".to_string(), |l| format!("{l:.1}"));
    let [start, end] = run.config.load_average;
    let mut t = format!("{} at the start, {} at the end", show(start), show(end));
    if start.is_some_and(|l| l > run.machine.usable_cpus as f64) {
        t.push_str(
            " <b style=\"color:#a00\">(more runnable work than CPUs before the bench started: \
             other programs competed with it, so these numbers are noisy)</b>",
        );
    }
    t
}

/// One row of the summary table: how `own` fared in workload `n`.
fn summary_row(h: &mut String, run: &Run, n: &str, ours: &str, own: &str) {
    let _ = write!(
        h,
        "<tr><td><a href=\"#{0}\">{0}</a></td><td>{1}</td>",
        esc(n),
        esc(own)
    );
    let class = |r: f64| if r >= 0.95 { "good" } else { "bad" };
    match verdict(&run.results, n, ours, own) {
        Some(v) => {
            let _ = writeln!(
                h,
                "<td>{}: ahead at {}, within 5% at {}, behind at {} of {} cells</td>\
                 <td>{}</td><td class=\"{}\">{:.2}</td><td class=\"{}\">{:.2}</td></tr>",
                v.standing().word(),
                v.ahead,
                v.within,
                v.behind,
                v.cells,
                v.undecided,
                class(v.worst),
                v.worst,
                class(v.geomean),
                v.geomean
            );
        }
        None => {
            let _ = writeln!(
                h,
                "<td colspan=\"4\">{} not measured in this workload yet</td></tr>",
                esc(own)
            );
        }
    }
}

/// Plots, legend and numbers of one (workload, case).
fn section(
    h: &mut String,
    g: &Group<'_>,
    ours: &str,
    info: Option<&WorkloadInfo>,
) -> Result<(), String> {
    let series = g.series();
    let threads = g.threads();
    let latency_title = format!(
        "{} p99 (lower is better)",
        capitalise(info.map_or("acquisition latency", |i| i.latency.as_str()))
    );
    let throughput_unit = info.map_or("ops/s, all threads", |i| i.throughput.as_str());
    h.push_str("<div class=\"plots\">\n");
    if g.is_single_thread() {
        h.push_str(&bar_plot(g, &series, ours)?);
    } else {
        type Metric = fn(&Record) -> Option<f64>;
        type Format = fn(f64) -> String;
        let mut plots: Vec<(&str, &str, Metric, Format)> = vec![
            (
                "Throughput (higher is better)",
                throughput_unit,
                |r| Some(r.ops_per_sec),
                si,
            ),
            (
                "CPU time per operation (lower is better)",
                "ns / op",
                |r| (r.total_ops > 0).then_some(r.cpu_ns_per_op),
                duration_ns,
            ),
            (
                &latency_title,
                "ns",
                |r| (r.latency_samples > 0).then_some(r.latency_ns.p99 as f64),
                duration_ns,
            ),
        ];
        // Where they were measured (not for a workload whose operations run in another
        // process, as the MariaDB one).
        if series.iter().any(|s| {
            threads.iter().any(|&t| {
                g.get(s, t)
                    .is_some_and(|r| r.context_switches_per_op.is_some())
            })
        }) {
            plots.push((
                "Context switches per 1000 operations (lower is better)",
                "per 1000 ops",
                |r| r.context_switches_per_op.map(|v| v * 1000.0),
                super::output::per_thousand,
            ));
        }
        for (title, unit, metric, fmt) in plots {
            h.push_str(&line_plot(
                g, &series, &threads, ours, title, unit, metric, fmt,
            )?);
        }
        if super::memory::has_memory(g) {
            for (title, metric) in super::memory::PLOTS {
                let mib = super::memory::mib;
                h.push_str(&line_plot(
                    g, &series, &threads, ours, title, "MiB", metric, mib,
                )?);
            }
        }
    }
    h.push_str("</div>\n");
    numbers_table(h, g, &series, &threads, ours);
    Ok(())
}

/// `s` with its first letter in upper case.
fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

fn numbers_table(h: &mut String, g: &Group<'_>, series: &[&str], threads: &[usize], ours: &str) {
    h.push_str(
        "<table><tr><th>median ops/s &nbsp;(cpu/op, p99, p99.9, max; context switches per \
         1000 ops)</th>",
    );
    for t in threads {
        let _ = write!(h, "<th>{t} thread{}</th>", if *t == 1 { "" } else { "s" });
    }
    h.push_str("</tr>\n");
    for s in series {
        let _ = write!(h, "<tr><td>{}</td>", esc(s));
        for &t in threads {
            match g.get(s, t) {
                Some(r) => {
                    let _ = write!(
                        h,
                        "<td>{} <small>[{}–{}] ({}, {}, {}, {}; {})</small></td>",
                        si(r.ops_per_sec),
                        si(r.ops_per_sec_spread.min),
                        si(r.ops_per_sec_spread.max),
                        duration_ns(r.cpu_ns_per_op),
                        duration_ns(r.latency_ns.p99 as f64),
                        duration_ns(r.latency_ns.p999 as f64),
                        duration_ns(r.latency_ns.max as f64),
                        r.context_switches_per_op
                            .map_or("-".to_string(), |v| super::output::per_thousand(v * 1000.0))
                    );
                }
                None => h.push_str("<td>-</td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    for own in g.own_series(ours) {
        if series.iter().all(|s| is_own(ours, s)) {
            break;
        }
        let _ = write!(h, "<tr class=\"ratio\"><td>{} ÷ best other</td>", esc(own));
        for &t in threads {
            match g.ratio(ours, own, t) {
                Some(r) => {
                    let class = if r.undecided() {
                        "undecided"
                    } else if r.median >= 0.95 {
                        "good"
                    } else {
                        "bad"
                    };
                    let title = if r.undecided() {
                        "undecided: the per-round ratios cross 1.0 or spread wider than ±5%"
                    } else {
                        "decided"
                    };
                    let _ = write!(
                        h,
                        "<td class=\"{class}\" title=\"{title}\">{} <small>({})</small></td>",
                        r.cell(),
                        r.range()
                    );
                }
                None => h.push_str("<td>-</td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

fn plot_err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing a plot failed: {e:?}")
}

/// One line per series of `metric` versus threads.
#[allow(clippy::too_many_arguments)]
fn line_plot(
    g: &Group<'_>,
    series: &[&str],
    threads: &[usize],
    ours: &str,
    title: &str,
    unit: &str,
    metric: fn(&Record) -> Option<f64>,
    fmt: fn(f64) -> String,
) -> Result<String, String> {
    let lines: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| {
            let pts = threads
                .iter()
                .filter_map(|&t| g.get(s, t).and_then(metric).map(|v| (t as f64, v)))
                .filter(|(_, v)| *v > 0.0 && v.is_finite())
                .collect();
            (*s, pts)
        })
        .collect();
    let values: Vec<f64> = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .collect();
    let mut svg = String::new();
    {
        let rows = series.len().div_ceil(legend_columns(series)) as u32;
        let full = SVGBackend::with_string(&mut svg, (PLOT_W, PLOT_H + LEGEND_ROW * rows + 6))
            .into_drawing_area();
        full.fill(&WHITE).map_err(plot_err)?;
        let (root, legend_area) = full.split_vertically(PLOT_H);
        legend(&legend_area, series, ours)?;
        let (mut tmin, mut tmax) = (
            threads[0] as f64,
            *threads.last().expect("non-empty") as f64,
        );
        if tmin == tmax {
            // A single thread count: give the lone points some room.
            (tmin, tmax) = (tmin / 2.0, tmax * 2.0);
        }
        let x_range = (tmin..tmax)
            .log_scale()
            .with_key_points(threads.iter().map(|&t| t as f64).collect());
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 17))
            .margin(8)
            .margin_right(18)
            .x_label_area_size(42)
            .y_label_area_size(70);
        if values.is_empty() {
            let mut chart = builder
                .build_cartesian_2d(x_range, 0f64..1f64)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc("threads")
                .y_desc(unit)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .draw()
                .map_err(plot_err)?;
            root.draw(&Text::new("no samples", (180, 150), ("sans-serif", 14)))
                .map_err(plot_err)?;
            full.present().map_err(plot_err)?;
        } else {
            draw_lines(
                &root, builder, x_range, &lines, series, ours, unit, &values, fmt,
            )?;
        }
    }
    Ok(svg)
}

/// Series per row of a plot's legend: as many as fit the longest name (about 7 px per character
/// at 12 px, after a 26 px line sample).
fn legend_columns(series: &[&str]) -> usize {
    let longest = series.iter().map(|s| s.chars().count()).max().unwrap_or(1) as u32;
    ((PLOT_W - 20) / (26 + 7 * longest + 10)).clamp(1, 4) as usize
}

/// Height of a legend row, pixels.
const LEGEND_ROW: u32 = 18;

/// The colour key of a line plot, drawn below it inside the same SVG: a copied plot keeps it.
fn legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    series: &[&str],
    ours: &str,
) -> Result<(), String> {
    let columns = legend_columns(series);
    let col_w = (PLOT_W as i32 - 20) / columns as i32;
    for (i, s) in series.iter().enumerate() {
        let x = 10 + (i % columns) as i32 * col_w;
        let y = 4 + (i / columns) as i32 * LEGEND_ROW as i32 + LEGEND_ROW as i32 / 2;
        let c = color_of(series, s, ours);
        let width = if is_own(ours, s) { 4 } else { 2 };
        area.draw(&PathElement::new(
            vec![(x, y), (x + 20, y)],
            c.stroke_width(width),
        ))
        .map_err(plot_err)?;
        area.draw(&Text::new(
            s.to_string(),
            (x + 26, y),
            TextStyle::from(("sans-serif", 12)).pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(plot_err)?;
    }
    Ok(())
}

/// Draws the axes and one line per series (the non-empty case of [`line_plot`]).
#[allow(clippy::too_many_arguments)]
fn draw_lines<'a, 'b>(
    root: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    mut builder: ChartBuilder<'b, 'b, SVGBackend<'a>>,
    x_range: plotters::coord::combinators::WithKeyPoints<LogCoord<f64>>,
    lines: &[(&str, Vec<(f64, f64)>)],
    series: &[&str],
    ours: &str,
    unit: &str,
    values: &[f64],
    fmt: fn(f64) -> String,
) -> Result<(), String> {
    {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(0f64, f64::max);
        let yfmt = move |y: &f64| fmt(*y);
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc("threads")
                    .y_desc(unit)
                    .x_label_formatter(&|x| format!("{x:.0}"))
                    .y_label_formatter(&yfmt)
                    .label_style(("sans-serif", 14))
                    .axis_desc_style(("sans-serif", 14))
                    .light_line_style(RGBColor(246, 246, 246))
                    .bold_line_style(RGBColor(215, 215, 215))
                    .draw()
                    .map_err(plot_err)?;
                // Ours last, so it is drawn on top.
                let mut order: Vec<&(&str, Vec<(f64, f64)>)> =
                    lines.iter().filter(|l| !is_own(ours, l.0)).collect();
                order.extend(lines.iter().filter(|l| is_own(ours, l.0)));
                for (s, pts) in order {
                    let c = color_of(series, s, ours);
                    let width = if is_own(ours, s) { 3 } else { 2 };
                    chart
                        .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(width)))
                        .map_err(plot_err)?;
                    chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                        .map_err(plot_err)?;
                }
            }};
        }
        if hi / lo > 30.0 {
            // Whole decades, so both ends carry a labelled tick.
            let y = (10f64.powf(lo.log10().floor())..10f64.powf(hi.log10().ceil())).log_scale();
            draw!(builder.build_cartesian_2d(x_range, y).map_err(plot_err)?);
        } else {
            draw!(builder
                .build_cartesian_2d(x_range, 0f64..hi * 1.12)
                .map_err(plot_err)?);
        }
    }
    root.present().map_err(plot_err)
}

/// Horizontal bars of ns per operation, one per series (single-thread cases).
fn bar_plot(g: &Group<'_>, series: &[&str], ours: &str) -> Result<String, String> {
    let t = g.threads()[0];
    let bars: Vec<(&str, f64)> = series
        .iter()
        .filter_map(|s| {
            g.get(s, t)
                .filter(|r| r.total_ops > 0)
                .map(|r| (*s, r.cpu_ns_per_op))
        })
        .collect();
    let n = bars.len().max(1);
    let hi = bars.iter().map(|b| b.1).fold(0f64, f64::max).max(1e-3);
    let height = (70 + 34 * n as u32).max(200);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (PLOT_W + 240, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let names: Vec<String> = bars.iter().map(|b| b.0.to_string()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Lock + unlock on one thread: CPU ns per pair (lower is better)",
                ("sans-serif", 17),
            )
            .margin(8)
            .margin_right(24)
            .x_label_area_size(38)
            .y_label_area_size(140)
            .build_cartesian_2d(0f64..hi * 1.3, (0..n as i32).into_segmented())
            .map_err(plot_err)?;
        // Segment i holds the i-th bar from the bottom; the first series is drawn at the top.
        let name_at = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) => (n - 1)
                .checked_sub(*i as usize)
                .and_then(|k| names.get(k))
                .cloned()
                .unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("CPU ns per lock + unlock")
            .y_label_formatter(&name_at)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 14))
            .light_line_style(RGBColor(246, 246, 246))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(plot_err)?;
        if bars.is_empty() {
            root.draw(&Text::new(
                "no operation completed",
                (PLOT_W as i32 / 2, height as i32 / 2),
                ("sans-serif", 14),
            ))
            .map_err(plot_err)?;
        }
        for (i, (s, v)) in bars.iter().enumerate() {
            let y = (n - 1 - i) as i32;
            let c = color_of(series, s, ours);
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(y)),
                    (*v, SegmentValue::Exact(y + 1)),
                ],
                c.filled(),
            );
            bar.set_margin(5, 5, 0, 0);
            chart.draw_series(std::iter::once(bar)).map_err(plot_err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!(" {}", duration_ns(*v)),
                    (*v, SegmentValue::CenterOf(y)),
                    TextStyle::from(("sans-serif", 14)).pos(Pos::new(HPos::Left, VPos::Center)),
                )))
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::output::tests::{record, run};

    #[test]
    fn page_has_one_svg_row_per_case_and_the_machine() {
        let mut rs = vec![
            record("w", None, "scalelock", 1, 100.0),
            record("w", None, "std", 1, 50.0),
            record("w", None, "scalelock", 8, 900.0),
            record("w", None, "std", 8, 100.0),
            record("u", Some("mutex"), "tas", 1, 1e8),
            record("u", Some("mutex"), "std", 1, 5e7),
        ];
        rs[1].lock = "std".into();
        let r = run(rs);
        let page = html(&r).unwrap();
        // Three plots for the sweep, one bar chart for the single-thread case.
        assert_eq!(page.matches("<svg").count(), 4, "{page}");
        assert!(page.contains(&esc(&r.machine.model)));
        assert!(page.contains("id=\"w\"") && page.contains("id=\"u\""));
        assert!(
            page.contains("<text"),
            "SVG text must be plain <text> elements"
        );
        assert!(page.contains("scalelock ÷ best other"));
        assert!(page.contains("threads"));
    }

    #[test]
    fn context_switches_are_plotted_and_tabled_where_measured() {
        let mut rs = vec![
            record("w", None, "scalelock", 2, 100.0),
            record("w", None, "std", 2, 50.0),
            record("w", None, "scalelock", 8, 900.0),
            record("w", None, "std", 8, 100.0),
        ];
        rs[2].context_switches_per_op = Some(0.0025);
        let page = html(&run(rs)).unwrap();
        assert_eq!(page.matches("<svg").count(), 4, "{page}");
        assert!(page.contains("Context switches per 1000 operations"));
        // The table: 2.50 for the measured point, `-` for the others.
        assert!(page.contains("; 2.50)</small>"), "{page}");
        assert!(page.contains("; -)</small>"), "{page}");
    }

    #[test]
    fn points_without_operations_still_draw() {
        let mut rs = vec![
            record("u", Some("mutex"), "std", 1, 0.0),
            record("w", None, "std", 1, 0.0),
            record("w", None, "std", 4, 0.0),
        ];
        for r in &mut rs {
            r.total_ops = 0;
        }
        let page = html(&run(rs)).unwrap();
        assert_eq!(page.matches("<svg").count(), 4);
        assert!(page.contains("no operation completed"));
    }

    #[test]
    fn a_sweep_of_one_thread_count_above_one_still_plots_lines() {
        let rs = vec![
            record("w", None, "scalelock", 8, 100.0),
            record("w", None, "std", 8, 50.0),
        ];
        let page = html(&run(rs)).unwrap();
        assert_eq!(page.matches("<svg").count(), 3);
        assert!(page.contains("Throughput"));
    }

    #[test]
    fn legends_fit_their_longest_name() {
        assert_eq!(legend_columns(&["std", "spin", "pthread"]), 4);
        assert_eq!(legend_columns(&["std", "crossbeam-sharded"]), 2);
        assert_eq!(
            legend_columns(&["a-very-long-series-name-indeed-and-more-of-it"]),
            1
        );
    }

    #[test]
    fn colours_are_stable_and_ours_is_red() {
        let s = ["std", "scalelock", "spin"];
        assert_eq!(color_of(&s, "scalelock", "scalelock"), OURS[0]);
        let f = ["std", "scalelock", "scalelock-biased"];
        assert_eq!(color_of(&f, "scalelock-biased", "scalelock"), OURS[1]);
        assert_eq!(color_of(&s, "std", "scalelock"), PALETTE[0]);
        assert_eq!(color_of(&s, "spin", "scalelock"), PALETTE[1]);
    }
}
