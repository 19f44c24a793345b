//! Line charts as PNG files, for results that are read as curves over time (the soak).
//! Text is drawn with DejaVu Sans from the system's fonts (Debian's
//! `fonts-dejavu-core`); without it the chart is refused with a message naming the
//! package, never drawn without labels.

use std::path::Path;
use std::sync::Once;

use anyhow::Context;
use plotters::prelude::*;

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];
const FONT: &str = "sans-serif";

/// One named curve: (x, y) points in x order.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
        }
    }
}

/// What one chart shows.
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// A logarithmic y axis (for values that span orders of magnitude).
    pub log_y: bool,
}

/// The mesh, the lines and the legend on a built chart (a macro: the linear and the
/// logarithmic axes are different types, and plotters' mesh bounds are not nameable
/// for both).
macro_rules! draw {
    ($ctx:expr, $chart:expr, $series:expr) => {{
        let ctx = &mut $ctx;
        ctx.configure_mesh()
            .x_desc($chart.x_label)
            .y_desc($chart.y_label)
            .label_style((FONT, 14))
            .draw()?;
        for (n, s) in $series.iter().enumerate() {
            let color = Palette99::pick(n).to_rgba().stroke_width(2);
            ctx.draw_series(LineSeries::new(s.points.iter().copied(), color))?
                .label(s.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        ctx.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 14))
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;
    }};
}

/// Draws `series` as lines in one 1200×500 PNG at `path`, with a legend.
pub fn lines(path: &Path, chart: &Chart, series: &[Series]) -> anyhow::Result<()> {
    register_font()?;
    let points = || series.iter().flat_map(|s| s.points.iter().copied());
    let x_max = points().map(|p| p.0).fold(1e-9_f64, f64::max);
    let y_max = points().map(|p| p.1).fold(1e-9_f64, f64::max) * 1.1;
    let y_min_positive = points()
        .map(|p| p.1)
        .filter(|y| *y > 0.0)
        .fold(f64::INFINITY, f64::min);
    let root = BitMapBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(chart.title, (FONT, 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(80);
    if chart.log_y {
        let low = if y_min_positive.is_finite() {
            y_min_positive / 2.0
        } else {
            0.1
        };
        let mut ctx =
            builder.build_cartesian_2d(0.0..x_max, (low..y_max.max(low * 10.0)).log_scale())?;
        draw!(ctx, chart, series);
    } else {
        let mut ctx = builder.build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        draw!(ctx, chart, series);
    }
    root.present()
        .with_context(|| format!("write {}", path.display()))?;
    Ok(())
}

/// Registers DejaVu Sans as the charts' font, once per process.
fn register_font() -> anyhow::Result<()> {
    static ONCE: Once = Once::new();
    let mut outcome = Ok(());
    ONCE.call_once(|| {
        outcome = (|| {
            let path = FONT_PATHS
                .iter()
                .find(|p| Path::new(p).exists())
                .context("no DejaVu Sans font: install Debian's fonts-dejavu-core")?;
            let bytes: &'static [u8] = Box::leak(std::fs::read(path)?.into_boxed_slice());
            plotters::style::register_font(FONT, FontStyle::Normal, bytes)
                .map_err(|_| anyhow::anyhow!("{path} is not a font plotters can read"))
        })();
    });
    outcome
}
