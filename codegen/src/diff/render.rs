//! The report as text (a terminal), Markdown (a changelog or a pull-request comment) or JSON.

use super::{Change, Level, Report};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

impl Report {
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => self.text(),
            Format::Markdown => self.markdown(),
            Format::Json => {
                let mut s = serde_json::to_string_pretty(self).expect("a report serializes");
                s.push('\n');
                s
            }
        }
    }

    fn headline(&self) -> String {
        let s = self.summary;
        format!(
            "{} change(s): {} breaking, {} warning, {} info",
            self.changes.len(),
            s.breaking,
            s.warning,
            s.info
        )
    }

    fn text(&self) -> String {
        let mut out = format!("{} → {}\n{}\n", self.base, self.spec, self.headline());
        for level in [Level::Breaking, Level::Warning, Level::Info] {
            for c in self.changes.iter().filter(|c| c.level == level) {
                out.push_str(&format!(
                    "\n{:<8} {}  {}\n         {}\n         at {}\n",
                    level.as_str(),
                    c.id,
                    where_(c),
                    c.message,
                    c.pointer
                ));
                out.push_str(&format!("         server: {}\n", server_line(c)));
            }
        }
        out
    }

    fn markdown(&self) -> String {
        let mut out = format!(
            "## API changes: `{}` → `{}`\n\n{}\n",
            self.base,
            self.spec,
            self.headline()
        );
        for (level, title) in [
            (Level::Breaking, "Breaking for clients"),
            (Level::Warning, "May break some clients"),
            (Level::Info, "Compatible"),
        ] {
            let changes: Vec<&Change> = self.changes.iter().filter(|c| c.level == level).collect();
            if changes.is_empty() {
                continue;
            }
            out.push_str(&format!(
                "\n### {title}\n\n| Rule | Operation | Change | Server |\n|---|---|---|---|\n"
            ));
            for c in changes {
                out.push_str(&format!(
                    "| `{}` | {} | {} (`{}`) | {} |\n",
                    c.id,
                    cell(&where_(c)),
                    cell(&c.message),
                    c.pointer,
                    cell(&server_line(c))
                ));
            }
        }
        out
    }
}

fn where_(c: &Change) -> String {
    match (&c.operation, c.operations.len()) {
        (Some(op), _) => op.clone(),
        (None, 0) => "(document)".into(),
        (None, n) => format!("{n} operations"),
    }
}

fn server_line(c: &Change) -> String {
    let s = &c.server;
    let verdict = if s.breaks_build {
        "breaks the build"
    } else {
        "builds"
    };
    let mut line = verdict.to_string();
    if !s.handlers.is_empty() {
        line.push_str(&format!("; handlers {}", s.handlers.join(", ")));
    }
    if !s.items.is_empty() {
        line.push_str(&format!("; items {}", s.items.join(", ")));
    }
    line
}

/// Text safe inside a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
