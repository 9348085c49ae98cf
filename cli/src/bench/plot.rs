//! `xbar bench --plot FILE.svg`: the measured rows as grouped bars, one panel per benchmark,
//! one group per configuration, one bar per implementation (xb and each baseline), with
//! the value on top. A panel whose values span more than [`LOG_SPAN`]x uses a log axis.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use xbarrier_bench::{Benchmark, Report, Unit};

use super::cells::{device_line, value};

/// Values spanning more than this factor get a log axis (the host round trip's baselines
/// are 10-100x xb's time; the GPU bandwidths differ by a few percent).
const LOG_SPAN: f64 = 30.0;
/// Pixels: the figure's width, each panel's height, the legend column's width.
const WIDTH: u32 = 1100;
const PANEL_HEIGHT: u32 = 420;
const LEGEND_WIDTH: u32 = 270;
/// Integer axis units per configuration group (x) and per unit of value or of log10 (y).
const SCALE: f64 = 1000.0;

/// The bars' base: the axis bottom (0 on a linear axis).
fn y_bottom(lo: f64) -> i64 {
    (lo * SCALE).round() as i64
}

/// Tableau 10: one color per implementation, the same in every panel.
const COLORS: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

/// One benchmark's measured values: configurations (x groups), implementations (bars).
struct Panel {
    benchmark: Benchmark,
    unit: Unit,
    configs: Vec<String>,
    implementations: Vec<&'static str>,
    /// (config index, implementation index, value)
    bars: Vec<(usize, usize, f64)>,
}

fn index_of<T: PartialEq + Clone>(list: &mut Vec<T>, item: &T) -> usize {
    list.iter().position(|x| x == item).unwrap_or_else(|| {
        list.push(item.clone());
        list.len() - 1
    })
}

/// The panels of `report`, in run order; benchmarks with nothing measured have none.
fn panels(report: &Report) -> Vec<Panel> {
    let mut panels: Vec<Panel> = Vec::new();
    for row in &report.rows {
        let Some(v) = row.value() else { continue };
        let at = match panels.iter().position(|p| p.benchmark == row.benchmark) {
            Some(at) => at,
            None => {
                panels.push(Panel {
                    benchmark: row.benchmark,
                    unit: row.unit,
                    configs: Vec::new(),
                    implementations: Vec::new(),
                    bars: Vec::new(),
                });
                panels.len() - 1
            }
        };
        let panel = &mut panels[at];
        let c = index_of(&mut panel.configs, &row.config);
        let i = index_of(&mut panel.implementations, &row.implementation);
        panel.bars.push((c, i, v));
    }
    panels
}

/// What a panel's y axis measures.
fn axis_name(benchmark: Benchmark, unit: Unit) -> String {
    let per = match benchmark {
        Benchmark::RoundTrip | Benchmark::MultiGpu => " per phase",
        Benchmark::GridBarrier => " per barrier",
        Benchmark::MessagePassing => " per message",
        Benchmark::HostRoundTrip => " per round trip",
        Benchmark::Reduction | Benchmark::Copy => "",
    };
    let better = if unit.lower_is_better() { "lower is better" } else { "higher is better" };
    format!("{unit}{per} ({better})")
}

/// About `n` round tick values from 0 to `max`, and the axis top.
fn linear_ticks(max: f64, n: f64) -> (Vec<f64>, f64) {
    let raw = (max / n).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(10.0 * magnitude);
    let top = (max * 1.12 / step).ceil() * step;
    let ticks = (0..).map(|k| f64::from(k) * step).take_while(|t| *t <= top + step / 2.0).collect();
    (ticks, top)
}

/// Log-axis ticks (in log10 units) at 1, 2 and 5 times each power of ten in the range.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = lo.floor();
    while decade <= hi {
        for m in [1.0f64, 2.0, 5.0] {
            let t = decade + m.log10();
            if t >= lo - 1e-9 && t <= hi + 1e-9 {
                ticks.push(t);
            }
        }
        decade += 1.0;
    }
    ticks
}

/// A tick label, to three significant digits: `1`, `20`, `2.5`, `5k`, `2M`.
fn tick_label(v: f64) -> String {
    let short = |x: f64| {
        let text = format!("{x:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    if v == 0.0 || !v.is_finite() {
        return short(v);
    }
    let magnitude = 10f64.powf(v.abs().log10().floor() - 2.0);
    let v = (v / magnitude).round() * magnitude;
    match v.abs() {
        a if a >= 1e6 => format!("{}M", short(v / 1e6)),
        a if a >= 1e4 => format!("{}k", short(v / 1e3)),
        _ => short(v),
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_panel(area: &Area<'_>, panel: &Panel, colors: &[&'static str]) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let (plot_area, legend_area) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
    let values = panel.bars.iter().map(|b| b.2);
    let max = values.clone().fold(f64::MIN_POSITIVE, f64::max);
    let min = values.fold(f64::INFINITY, f64::min).max(f64::MIN_POSITIVE);
    let log = max / min > LOG_SPAN;
    // plotters formats tick labels of integer axes only, so both axes are integers: SCALE
    // units per configuration group on x; y in units of 1/SCALE of the value, or on a log
    // axis of log10(value), whose bars start a decade or so below the least value.
    let (lo, hi, ticks) = if log {
        let (lo, hi) = (min.log10().floor(), max.log10() + 0.2);
        (lo, hi, log_ticks(lo, hi))
    } else {
        let (ticks, top) = linear_ticks(max, 6.0);
        (0.0, top, ticks)
    };
    let y = |v: f64| ((if log { v.log10() } else { v }) * SCALE).round() as i64;
    let unscale = |y: i64| y as f64 / SCALE;
    let groups = panel.configs.len() as i64;
    let g = SCALE as i64;
    let centers: Vec<i64> = (0..groups).map(|c| c * g + g / 2).collect();
    let y_ticks: Vec<i64> = ticks.iter().map(|t| (t * SCALE).round() as i64).collect();
    let title = format!("{}{}", panel.benchmark, if log { " (log scale)" } else { "" });
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (0..groups * g).with_key_points(centers),
            ((lo * SCALE).round() as i64..(hi * SCALE).round() as i64).with_key_points(y_ticks),
        )
        .map_err(err)?;
    let configs = panel.configs.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("configuration")
        .y_desc(axis_name(panel.benchmark, panel.unit))
        .x_label_formatter(&|x| configs.get((x / g) as usize).cloned().unwrap_or_default())
        .y_label_formatter(&|t| tick_label(if log { 10f64.powf(unscale(*t)) } else { unscale(*t) }))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;

    let bar = 0.84 * SCALE / panel.implementations.len() as f64;
    let label_style = TextStyle::from(("sans-serif", 11).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    for &(c, i, v) in &panel.bars {
        let x0 = c as f64 * SCALE + 0.08 * SCALE + i as f64 * bar;
        let x = |f: f64| (x0 + f * bar).round() as i64;
        let color = color_of(colors, panel.implementations[i]);
        chart.draw_series([Rectangle::new([(x(0.0), y_bottom(lo)), (x(0.92), y(v))], color.filled())]).map_err(err)?;
        chart.draw_series([Text::new(value(panel.unit, v), (x(0.46), y(v)), label_style.clone())]).map_err(err)?;
    }

    // The legend: a swatch and the name of each implementation, beside the chart.
    let legend = legend_area.margin(50, 10, 6, 6);
    for (k, name) in panel.implementations.iter().enumerate() {
        let y = 22 * k as i32;
        let color = color_of(colors, name);
        legend.draw(&Rectangle::new([(0, y), (14, y + 14)], color.filled())).map_err(err)?;
        legend.draw(&Text::new(name.to_string(), (22, y + 1), ("sans-serif", 13))).map_err(err)?;
    }
    Ok(())
}

fn color_of(colors: &[&'static str], name: &str) -> RGBColor {
    COLORS[colors.iter().position(|c| *c == name).unwrap_or(0) % COLORS.len()]
}

/// Draws every benchmark of `report` that measured something into the SVG file `path`.
pub fn write(report: &Report, path: &Path) -> Result<(), String> {
    let panels = panels(report);
    if panels.is_empty() {
        return Err("nothing was measured, so there is nothing to plot".into());
    }
    // One color per implementation over the whole figure, in order of first appearance.
    let mut colors: Vec<&'static str> = Vec::new();
    for panel in &panels {
        for name in &panel.implementations {
            index_of(&mut colors, name);
        }
    }
    let height = 40 + PANEL_HEIGHT * panels.len() as u32;
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(&format!("xbar bench: {}", device_line(report)), ("sans-serif", 15)).map_err(err)?;
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(&panels) {
        draw_panel(area, panel, &colors)?;
    }
    root.present().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks() {
        let (t, top) = linear_ticks(4450.0, 6.0);
        assert_eq!(t.first(), Some(&0.0));
        assert!(top >= 4450.0 * 1.1 && t.len() <= 9, "{t:?} {top}");
        let t = log_ticks(2.0, 5.2);
        assert_eq!(t.len(), 10, "{t:?}");
        let labels = [1000.0, 20_000.0, 2e6, 1999.86187, 49_999.98, 2.5, 0.0].map(tick_label);
        assert_eq!(labels, ["1000", "20k", "2M", "2000", "50k", "2.5", "0"].map(String::from));
    }
}
