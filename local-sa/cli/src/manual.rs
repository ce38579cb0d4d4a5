//! Man page sections from the text `--help` prints after the options, so
//! that the manual and `--help` say the same thing. The epilogue is a
//! series of sections: a heading line (no indent, ending in `:`) and its
//! text, kept line for line (its tables are aligned with spaces).

use std::fmt::Write as _;

/// `after_help`'s sections as man page sections (roff), each kept line
/// for line. Text before the first heading goes into a NOTES section.
pub fn man_sections(after_help: &str) -> String {
    let mut out = String::new();
    let mut heading = String::from("NOTES");
    let mut body: Vec<&str> = Vec::new();
    for line in after_help.lines() {
        if let Some(h) = heading_of(line) {
            out.push_str(&man_section(&heading, &body.join("\n")));
            heading = h.to_owned();
            body.clear();
        } else {
            body.push(line);
        }
    }
    out.push_str(&man_section(&heading, &body.join("\n")));
    out
}

/// One man page section: `.SH heading`, then `body` line for line, with
/// its common indent removed. Nothing for an empty body.
pub fn man_section(heading: &str, body: &str) -> String {
    let lines: Vec<&str> = body.lines().collect();
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return String::new();
    };
    let lines = &lines[first..=last];
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let heading = escape(heading).replace('"', "\\(dq");
    let mut out = if heading.contains(' ') {
        format!(".SH \"{heading}\"\n.nf\n")
    } else {
        format!(".SH {heading}\n.nf\n")
    };
    for line in lines {
        let text = line.get(indent..).unwrap_or("").trim_end();
        let _ = writeln!(out, "{}", escape_line(text));
    }
    out.push_str(".fi\n");
    out
}

/// A heading line: no indent, ends with `:`, and its words before any
/// parenthesis in capitals ("EXIT STATUS:", "QUERIES (saquery names):").
fn heading_of(line: &str) -> Option<&str> {
    let h = line.strip_suffix(':')?;
    let words = h.split(" (").next().unwrap_or(h);
    let capitals = !words.is_empty()
        && !line.starts_with(' ')
        && words.chars().any(|c| c.is_ascii_uppercase())
        && words
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == ' ' || c == '-');
    capitals.then_some(h)
}

/// Roff text: backslashes and minus signs (options' dashes must stay
/// ASCII hyphen-minus when copied from the page).
fn escape(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

/// A roff text line: escaped, and not taken for a request when it starts
/// with `.` or `'`.
pub fn escape_line(text: &str) -> String {
    let escaped = escape(text);
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_start_sections_and_text_is_kept_line_for_line() {
        let help = "\
EXIT STATUS:
  0 answered; 1 an error
  status.

QUERIES (saquery names):
  -p        paths
  .hidden   a dot
Numbers are decimal.";
        assert_eq!(
            man_sections(help),
            ".SH \"EXIT STATUS\"\n.nf\n0 answered; 1 an error\nstatus.\n.fi\n\
             .SH \"QUERIES (saquery names)\"\n.nf\n  \\-p        paths\n  .hidden   a dot\nNumbers are decimal.\n.fi\n"
        );
    }

    #[test]
    fn what_could_be_roff_is_escaped() {
        assert_eq!(
            man_section("FILES", "  .lock file\n  a\\b"),
            ".SH FILES\n.nf\n\\&.lock file\na\\eb\n.fi\n"
        );
        assert_eq!(man_section("EMPTY", "\n  \n"), "");
        assert_eq!(heading_of("Numbers are: "), None);
        assert_eq!(heading_of("  INDENTED:"), None);
        assert_eq!(heading_of("lower case:"), None);
        assert_eq!(
            heading_of("CACHE CONTROL (root or its user):"),
            Some("CACHE CONTROL (root or its user)")
        );
    }
}
