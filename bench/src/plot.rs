//! The benchmark plot: search latency (p50, p99; toolcat and `bm25s`) and per-turn plan time
//! against catalog size, drawn with plotters as SVG.
//!
//! Reads from the results directory: `latency.json` (from `toolcat-bench latency`),
//! `peer_latency.json` (from `bench/peer_latency.py`, optional) and `criterion.json` (from
//! `toolcat-bench collect`).

use std::path::Path;

use anyhow::{Context as _, Result};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use serde_json::Value;

/// One line: label, colour, dashed, points `(tools, value)`.
type Series = (String, RGBColor, bool, Vec<(f64, f64)>);

fn read(path: &Path) -> Result<Option<Value>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(
            serde_json::from_str(&text).with_context(|| format!("`{}`", path.display()))?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    }
}

/// `(tools, sizes[..].all[key])` of a latency file.
fn latency_points(v: &Value, key: &str) -> Vec<(f64, f64)> {
    v["sizes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s["tools"].as_f64()?, s["all"][key].as_f64()?)))
        .collect()
}

/// `(tools, mean µs)` of the criterion ids `PREFIX/N`.
fn criterion_points(v: &Value, prefix: &str) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = v
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(id, e)| {
            let n: f64 = id.strip_prefix(prefix)?.strip_prefix('/')?.parse().ok()?;
            Some((n, e["mean_ns"].as_f64()? / 1e3))
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// Draws `results/…` into the SVG file `out`.
///
/// # Errors
/// When a results file cannot be read or parsed, or the SVG cannot be written.
pub fn draw(results: &Path, out: &Path) -> Result<()> {
    let latency = read(&results.join("latency.json"))?.context("latency.json is missing")?;
    let peer = read(&results.join("peer_latency.json"))?;
    let criterion = read(&results.join("criterion.json"))?.unwrap_or(Value::Null);

    let blue = RGBColor(31, 119, 180);
    let orange = RGBColor(255, 127, 14);
    let green = RGBColor(44, 160, 44);
    let purple = RGBColor(148, 103, 189);

    let mut search: Vec<Series> = vec![
        (
            "toolcat p50".into(),
            blue,
            false,
            latency_points(&latency, "p50_us"),
        ),
        (
            "toolcat p99".into(),
            blue,
            true,
            latency_points(&latency, "p99_us"),
        ),
    ];
    if let Some(peer) = &peer {
        search.push((
            "bm25s p50".into(),
            orange,
            false,
            latency_points(peer, "p50_us"),
        ));
        search.push((
            "bm25s p99".into(),
            orange,
            true,
            latency_points(peer, "p99_us"),
        ));
    }
    let plans: Vec<Series> = vec![
        (
            "compiled, coding turn".into(),
            green,
            false,
            criterion_points(&criterion, "plan_compiled/coding"),
        ),
        (
            "compiled, full turn".into(),
            green,
            true,
            criterion_points(&criterion, "plan_compiled/full"),
        ),
        (
            "loaded, coding turn".into(),
            purple,
            false,
            criterion_points(&criterion, "plan_loaded/coding"),
        ),
        (
            "loaded, full turn".into(),
            purple,
            true,
            criterion_points(&criterion, "plan_loaded/full"),
        ),
    ];

    let root = SVGBackend::new(out, (1100, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(550);
    panel(
        &left,
        "Search latency per query (top 10)",
        "µs per query",
        &search,
    )?;
    panel(
        &right,
        "Per-turn plan time (criterion mean)",
        "µs per plan",
        &plans,
    )?;
    root.present()
        .with_context(|| format!("cannot write `{}`", out.display()))?;
    Ok(())
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_label: &str,
    series: &[Series],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let values = series.iter().flat_map(|s| s.3.iter().map(|p| p.1));
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo <= hi {
        (lo / 2.0, hi * 2.0)
    } else {
        (0.1, 10.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (60f64..16_000f64).log_scale(),
            (lo.max(1e-3)..hi).log_scale(),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("tools in the catalog")
        .y_desc(y_label)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| {
            if *y >= 1.0 {
                format!("{y:.0}")
            } else {
                format!("{y:.2}")
            }
        })
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for (label, colour, dashed, points) in series {
        if points.is_empty() {
            continue;
        }
        let colour = *colour;
        let style = colour.stroke_width(2);
        let drawn = if *dashed {
            chart.draw_series(DashedLineSeries::new(points.iter().copied(), 6, 4, style))
        } else {
            chart.draw_series(LineSeries::new(points.iter().copied(), style))
        }
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        // Dashed series get a dashed legend line.
        let (size, spacing) = if *dashed { (5, 3) } else { (18, 0) };
        drawn.label(label.as_str()).legend(move |(x, y)| {
            DashedPathElement::new(
                vec![(x, y), (x + 18, y)],
                size,
                spacing,
                colour.stroke_width(2),
            )
        });
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}
