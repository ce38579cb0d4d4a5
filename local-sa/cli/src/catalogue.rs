//! A catalogue of metrics, in Markdown, read from the exposition the
//! program itself writes: every family's name, type, labels and meaning
//! as Prometheus would scrape them, so that the documentation cannot name
//! a metric the code does not have, or miss one it has.

use std::fmt::Write as _;
use std::path::Path;

/// One metric family of an exposition.
#[derive(Debug, Default, PartialEq, Eq)]
struct Family {
    name: String,
    kind: String,
    help: String,
    /// Label names its samples carry, in first-seen order (`le` left
    /// out: every histogram has it).
    labels: Vec<String>,
}

/// The families of `exposition` (Prometheus' text format), in order.
fn families(exposition: &str) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for line in exposition.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push(Family {
                name: name.to_owned(),
                help: help.replace("\\\\", "\\"),
                ..Family::default()
            });
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            if let Some(f) = out.last_mut().filter(|f| f.name == name) {
                kind.clone_into(&mut f.kind);
            }
        } else if let Some(f) = out.last_mut()
            && let Some((_, labels)) = line.split_once('{')
        {
            for pair in labels.split("\",") {
                let Some((label, _)) = pair.split_once('=') else {
                    continue;
                };
                if label != "le" && !f.labels.iter().any(|l| l == label) {
                    f.labels.push(label.to_owned());
                }
            }
        }
    }
    out
}

/// `exposition`'s families as a Markdown table: name, type, labels,
/// meaning.
pub fn metrics_catalogue(exposition: &str) -> String {
    let mut out = String::from("| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n");
    for f in families(exposition) {
        let labels = f
            .labels
            .iter()
            .map(|l| format!("`{l}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            f.name,
            f.kind,
            labels,
            f.help.replace('|', "\\|")
        );
    }
    out
}

/// `doc` with the lines between `<!-- begin generated: {name} -->` and
/// `<!-- end generated: {name} -->` replaced by `text`; `None` if either
/// marker is missing. How a page keeps a generated part in step.
pub fn with_generated_part(doc: &str, name: &str, text: &str) -> Option<String> {
    let begin = format!("<!-- begin generated: {name} -->\n");
    let end = format!("<!-- end generated: {name} -->");
    let start = doc.find(&begin)? + begin.len();
    let stop = start + doc[start..].find(&end)?;
    Some(format!("{}{text}{}", &doc[..start], &doc[stop..]))
}

/// Whether the part `name` of the page at `path` is `text`; with
/// `LOCAL_SA_BLESS` set, first writes it so. `Err`: what to say (the page
/// is behind the code, or has no such part). For the programs' tests.
pub fn generated_part_is_current(path: &Path, name: &str, text: &str) -> Result<(), String> {
    let read = || std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
    let kept = with_generated_part(&read()?, name, text)
        .ok_or_else(|| format!("{} has no part {name:?}", path.display()))?;
    if std::env::var_os("LOCAL_SA_BLESS").is_some() {
        std::fs::write(path, &kept).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if kept == read()? {
        Ok(())
    } else {
        Err(format!(
            "{} is behind the code ({name}): run the test again with LOCAL_SA_BLESS=1",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_with_their_labels() {
        let text = "# HELP a_total Things, with a | bar.\n# TYPE a_total counter\n\
                    a_total{port=\"m/1\",owner=\"uid 1\"} 3\na_total{port=\"m/2\",owner=\"x\"} 1\n\
                    # HELP h_seconds Times.\n# TYPE h_seconds histogram\n\
                    h_seconds_bucket{port=\"m/1\",le=\"0.1\"} 1\nh_seconds_sum{port=\"m/1\"} 0.1\n\
                    # HELP g Now.\n# TYPE g gauge\ng 2\n";
        assert_eq!(
            metrics_catalogue(text),
            "| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n\
             | `a_total` | counter | `port`, `owner` | Things, with a \\| bar. |\n\
             | `h_seconds` | histogram | `port` | Times. |\n\
             | `g` | gauge |  | Now. |\n"
        );
    }

    #[test]
    fn a_generated_part_is_replaced_between_its_markers() {
        let doc = "a\n<!-- begin generated: x -->\nold\n<!-- end generated: x -->\nb\n";
        assert_eq!(
            with_generated_part(doc, "x", "new\n").unwrap(),
            "a\n<!-- begin generated: x -->\nnew\n<!-- end generated: x -->\nb\n"
        );
        assert_eq!(with_generated_part(doc, "y", "new\n"), None);
    }
}
