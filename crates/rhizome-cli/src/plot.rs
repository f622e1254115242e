//! `rhizome plot`: the per-level series of a `reach --json` report as an SVG chart,
//! states and nodes per level on a log scale.

use anyhow::{Context, bail};
use clap::Args;
use plotters::prelude::*;
use serde_json::Value;
use std::path::PathBuf;

#[derive(Args)]
pub struct PlotArgs {
    /// A report written by `rhizome reach --json` (with a level strategy: saturation
    /// has no levels to draw).
    report: PathBuf,
    /// The SVG file to write.
    #[arg(short, long, value_name = "FILE.svg")]
    output: PathBuf,
}

/// One series of the chart: a name, a colour, a point per level.
struct Series {
    name: &'static str,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

pub fn run(args: PlotArgs) -> anyhow::Result<()> {
    if args.output == args.report {
        bail!(
            "{}: the picture would overwrite the report it is drawn from",
            args.output.display()
        );
    }
    let text = std::fs::read_to_string(&args.report)
        .with_context(|| format!("cannot read {}", args.report.display()))?;
    let json: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a JSON report", args.report.display()))?;
    let levels = json["per_level"].as_array().with_context(|| {
        format!(
            "{}: no `per_level` series (written by `rhizome reach --json`)",
            args.report.display()
        )
    })?;
    if levels.is_empty() {
        bail!(
            "{}: the `per_level` series is empty (saturation has no levels: run with -s bfs or chaining)",
            args.report.display()
        );
    }
    let number = |v: &Value, key: &str| -> anyhow::Result<f64> {
        let x = &v[key];
        x.as_f64()
            .or_else(|| x.as_str().and_then(|s| s.parse().ok()))
            .with_context(|| format!("{}: level without `{key}`: {v}", args.report.display()))
    };
    let mut states = Vec::new();
    let mut visited = Vec::new();
    let mut frontier = Vec::new();
    for v in levels {
        let level = number(v, "level")?;
        states.push((level, number(v, "states")?));
        // Counted with `reach --count-nodes` only (a walk of the set at every level).
        if let Some(n) = v["visited_nodes"].as_f64() {
            visited.push((level, n));
        }
        if let Some(f) = v["frontier_nodes"].as_f64() {
            frontier.push((level, f));
        }
    }
    let series = [
        Series {
            name: "states",
            color: RGBColor(31, 119, 180),
            points: states,
        },
        Series {
            name: "nodes of the visited set",
            color: RGBColor(214, 39, 40),
            points: visited,
        },
        Series {
            name: "nodes of the frontier",
            color: RGBColor(44, 160, 44),
            points: frontier,
        },
    ];
    // The file name only: a picture shown elsewhere should not carry this machine's paths.
    let model = json["model"].as_str().unwrap_or("?");
    let model = std::path::Path::new(model)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(model);
    let title = format!(
        "{model} ({}, {} states)",
        json["strategy"].as_str().unwrap_or("?"),
        json["states"].as_str().unwrap_or("?")
    );
    let svg = draw(&title, &series).map_err(|e| anyhow::anyhow!("drawing the chart: {e}"))?;
    std::fs::write(&args.output, svg)
        .with_context(|| format!("writing {}", args.output.display()))?;
    Ok(())
}

/// The chart as SVG text. Zero counts (an empty frontier) have no place on a log scale
/// and are left out.
fn draw(title: &str, series: &[Series]) -> Result<String, Box<dyn std::error::Error>> {
    let last_level = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(10.0, f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 540)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..last_level, (1.0..top * 2.0).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("level")
            .y_desc("count (log scale)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0e}"))
            .draw()?;
        for s in series.iter().filter(|s| !s.points.is_empty()) {
            let points: Vec<(f64, f64)> = s.points.iter().copied().filter(|p| p.1 > 0.0).collect();
            let color = s.color;
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(s.name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 2, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}
