//! The master's path queries against N on log–log axes, one line per
//! setup with its fitted slope, as a self-contained SVG (a few lines of
//! text: no plotting library needed for points and lines).

use std::fmt::Write as _;

/// One setup's points: (N, master path queries).
pub(crate) struct Series {
    pub(crate) name: &'static str,
    pub(crate) colour: &'static str,
    pub(crate) points: Vec<(f64, f64)>,
}

/// The least-squares slope of log(y) against log(x): the exponent of the
/// growth (1 for linear, 2 for quadratic). `None` for fewer than two
/// distinct x.
pub(crate) fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.log10(), y.log10()))
        .collect();
    let n = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (logs.len() >= 2 && sxx > 0.0).then(|| sxy / sxx)
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;

/// The SVG document.
pub(crate) fn svg(title: &str, series: &[Series]) -> String {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all.filter(|(x, y)| *x > 0.0 && *y > 0.0) {
        (x0, x1) = (x0.min(x.log10()), x1.max(x.log10()));
        (y0, y1) = (y0.min(y.log10()), y1.max(y.log10()));
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    // Whole decades around the data.
    let (x0, x1) = (x0.floor(), x1.ceil().max(x0.floor() + 1.0));
    let (y0, y1) = (y0.floor(), y1.ceil().max(y0.floor() + 1.0));
    let px = |x: f64| LEFT + (x.log10() - x0) / (x1 - x0) * (WIDTH - LEFT - RIGHT);
    let py = |y: f64| HEIGHT - BOTTOM - (y.log10() - y0) / (y1 - y0) * (HEIGHT - TOP - BOTTOM);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{}" y="24" text-anchor="middle" font-size="14">{title}</text>"#,
        WIDTH / 2.0
    );
    for d in x0 as i32..=x1 as i32 {
        let x = px(10f64.powi(d));
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">10^{d}</text>"##,
            HEIGHT - BOTTOM,
            HEIGHT - BOTTOM + 18.0
        );
    }
    for d in y0 as i32..=y1 as i32 {
        let y = py(10f64.powi(d));
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">10^{d}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">N (nodes, one rank each, all-to-all)</text><text transform="translate(18 {}) rotate(-90)" text-anchor="middle">PathRecord queries at the master</text>"#,
        (LEFT + WIDTH - RIGHT) / 2.0,
        HEIGHT - 16.0,
        (TOP + HEIGHT - BOTTOM) / 2.0
    );
    for (i, s) in series.iter().enumerate() {
        let points: Vec<String> = s
            .points
            .iter()
            .filter(|(x, y)| *x > 0.0 && *y > 0.0)
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"#,
            points.join(" "),
            s.colour
        );
        for p in &points {
            let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(
                out,
                r#"<circle cx="{x}" cy="{y}" r="3.5" fill="{}"/>"#,
                s.colour
            );
        }
        let label = match slope(&s.points) {
            Some(k) => format!("{} (fitted slope {k:.2})", s.name),
            None => s.name.to_string(),
        };
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" fill="{}">{label}</text>"#,
            LEFT + 12.0,
            TOP + 16.0 + 18.0 * i as f64,
            s.colour
        );
    }
    out.push_str("</svg>\n");
    out
}
