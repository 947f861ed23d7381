//! `openapi-poem generate|check [--spec PATH] [--out DIR] [--crate-name NAME]` and
//! `openapi-poem diff --base OLD [--spec NEW] [--format text|markdown|json] [--fail-on LEVEL]`
//! and `openapi-poem upgrade [--spec PATH]` (a 3.0 document written as 3.1, on stdout).
//!
//! Exit codes: 0 success; 1 `check` found differences, or `diff` found a change at the
//! `--fail-on` level (default: breaking); 2 a document cannot be read or generated (the message
//! names the file and JSON pointer) or an I/O error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "openapi-poem",
    version,
    about = "Generate a poem-openapi server crate, and its typed client, from an OpenAPI 3.0, 3.1 \
             or 3.2 document, and report what a change to the document does to its clients"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Target {
    /// The OpenAPI document (YAML or JSON).
    #[arg(long, default_value = "spec/openapi.yaml")]
    spec: PathBuf,
    /// The crate directory to write or check.
    #[arg(long, default_value = "generated")]
    out: PathBuf,
    /// The generated crate's package name. Default: the name in `--out`'s `Cargo.toml` when
    /// there is one (regenerating keeps it), else the name of the `--out` directory.
    #[arg(long)]
    crate_name: Option<String>,
    /// The `openapi-poem-runtime` dependency's path as written into the generated `Cargo.toml`
    /// beside its version (relative to `--out`, or absolute). Default: when `--out` is inside
    /// a checkout of this repository, its `codegen/runtime`; else none, and the runtime comes
    /// from the registry by version.
    #[arg(long)]
    runtime_path: Option<String>,
    /// Above this many schemas, the types become crates of their own under `--out/parts/`
    /// (about this many each, along the type graph), which cargo checks side by side and no
    /// one of which needs all the memory; 0: always one crate. The paths do not change.
    #[arg(long, default_value_t = openapi_poem::emit::DEFAULT_TYPES_PER_CRATE)]
    types_per_crate: usize,
    /// The routing glue (`routes`, `app`, `document`, `Server`) as a crate of its own at
    /// `--out/routes/` (package `<crate>-routes`, depending on the crate by path) instead of
    /// the module `server`: a server whose handlers are a crate that does not depend on the
    /// glue has the two checked side by side after a spec edit. Regenerating keeps it: on
    /// whenever `--out/routes/Cargo.toml` exists.
    #[arg(long)]
    routes_apart: bool,
    /// Fail (exit 2) when the document has anything read with a weaker meaning than it says
    /// (each named by its JSON pointer on stderr): the fidelity report as a gate.
    #[arg(long)]
    deny_warnings: bool,
}

#[derive(clap::Args)]
struct DiffArgs {
    /// The document as clients know it (for example `spec/releases/1.4.yaml`).
    #[arg(long)]
    base: PathBuf,
    /// The edited document.
    #[arg(long, default_value = "spec/openapi.yaml")]
    spec: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    format: openapi_poem::diff::Format,
    /// The level from which a change makes the exit status 1.
    #[arg(long, value_enum, default_value = "breaking")]
    fail_on: FailOn,
    /// Release gate: breaking changes do not fail when the major part of `info.version` moved.
    #[arg(long)]
    allow_major_bump: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum FailOn {
    Breaking,
    Warning,
    Never,
}

impl Target {
    /// The flags that shape the output beyond `--spec`, as the generated header repeats them:
    /// each one whose value is not its default (so `check` and `generate` agree).
    fn flags(&self) -> String {
        let mut flags = Vec::new();
        if self.out != std::path::Path::new("generated") {
            flags.push(format!("--out {}", self.out.display()));
        }
        if let Some(name) = &self.crate_name {
            flags.push(format!("--crate-name {name}"));
        }
        if let Some(path) = &self.runtime_path {
            flags.push(format!("--runtime-path {path}"));
        }
        if self.types_per_crate != openapi_poem::emit::DEFAULT_TYPES_PER_CRATE {
            flags.push(format!("--types-per-crate {}", self.types_per_crate));
        }
        if self.routes_apart() {
            flags.push("--routes-apart".to_string());
        }
        flags.join(" ")
    }

    /// `--routes-apart`, or the routes crate already there (so that `check` and a plain
    /// `generate` keep the layout).
    fn routes_apart(&self) -> bool {
        self.routes_apart || self.out.join("routes").join("Cargo.toml").is_file()
    }
}

#[derive(Subcommand)]
enum Command {
    /// Write the crate to `--out`: the server half, and the typed client behind the crate's
    /// `client` feature (`<crate>::client::Client`, over reqwest, with the same input types and
    /// response enums; enable it with `features = ["client"]`).
    Generate(Target),
    /// Exit 1 with a diff when `--out` is not what the document produces.
    Check(Target),
    /// Report what the changes from `--base` to `--spec` do to clients and to the server.
    Diff(DiffArgs),
    /// Write an OpenAPI 3.0 document as OpenAPI 3.1 (YAML on stdout), meaning kept: `nullable`
    /// as type unions, `example` as `examples`, boolean exclusive bounds as numbers.
    Upgrade {
        /// The OpenAPI 3.0 document (YAML or JSON; files it references are bundled in).
        #[arg(long, default_value = "spec/openapi.yaml")]
        spec: PathBuf,
    },
}

fn parse(path: &std::path::Path) -> Result<openapi_poem::ir::Api, ExitCode> {
    openapi_poem::parse::parse_file(path).map_err(|e| {
        eprintln!(
            "error: {}#{}: {}",
            path.display(),
            e.pointer.trim_start_matches('#'),
            e.message
        );
        ExitCode::from(2)
    })
}

fn major(version: &str) -> &str {
    version.split('.').next().unwrap_or(version).trim()
}

fn diff(args: DiffArgs) -> Result<ExitCode, ExitCode> {
    // The two documents are independent: parse them on two threads.
    let (old, new) = std::thread::scope(|s| {
        let old = s.spawn(|| parse(&args.base));
        let new = parse(&args.spec);
        (old.join().expect("the parser does not panic"), new)
    });
    let (old, new) = (old?, new?);
    let report = openapi_poem::diff::Report::new(
        &args.base.display().to_string(),
        &args.spec.display().to_string(),
        openapi_poem::diff::diff(&old, &new),
    );
    print!("{}", report.render(args.format));
    use openapi_poem::diff::Level;
    let failing = match args.fail_on {
        FailOn::Breaking => report.has(Level::Breaking),
        FailOn::Warning => report.has(Level::Warning),
        FailOn::Never => false,
    };
    if failing && args.allow_major_bump && major(&old.version) != major(&new.version) {
        eprintln!(
            "note: info.version moved from {} to {}: a new major version may break clients",
            old.version, new.version
        );
        return Ok(ExitCode::SUCCESS);
    }
    Ok(if failing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn upgrade(spec: &std::path::Path) -> ExitCode {
    let mut doc = match openapi_poem::bundle::bundle_file(spec) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!(
                "error: {}#{}: {}",
                spec.display(),
                e.pointer.trim_start_matches('#'),
                e.message
            );
            return ExitCode::from(2);
        }
    };
    let version = doc
        .get("openapi")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    if !version.starts_with("3.0.") {
        eprintln!(
            "error: {}#/openapi: `{version}` is not OpenAPI 3.0",
            spec.display()
        );
        return ExitCode::from(2);
    }
    openapi_poem::upgrade::to_openapi_31(&mut doc);
    match serde_yaml::to_string(&doc) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (target, write) = match cli.command {
        Command::Generate(t) => (t, true),
        Command::Check(t) => (t, false),
        Command::Diff(args) => return diff(args).unwrap_or_else(|code| code),
        Command::Upgrade { spec } => return upgrade(&spec),
    };
    let source = target.spec.display().to_string();
    let runtime_path = target
        .runtime_path
        .clone()
        .or_else(|| openapi_poem::default_runtime_path(&target.out));
    let flags = target.flags();
    let crate_name = target
        .crate_name
        .clone()
        .unwrap_or_else(|| openapi_poem::default_crate_name(&target.out));
    let opts = openapi_poem::Options {
        crate_name: &crate_name,
        source: &source,
        flags: &flags,
        runtime_path: runtime_path.as_deref(),
        types_per_crate: target.types_per_crate,
        routes_apart: target.routes_apart(),
    };
    let api = match parse(&target.spec) {
        Ok(api) => api,
        Err(code) => return code,
    };
    if target.deny_warnings && !api.warnings.is_empty() {
        eprintln!(
            "error: {source}: {} warning(s) and --deny-warnings (each named above)",
            api.warnings.len()
        );
        return ExitCode::from(2);
    }
    let files = openapi_poem::emit::emit(&api, &opts);
    if write {
        if let Err(e) = openapi_poem::write(&target.out, &files) {
            eprintln!("error: cannot write {}: {e}", target.out.display());
            return ExitCode::from(2);
        }
        println!("wrote {} files to {}", files.len(), target.out.display());
        return ExitCode::SUCCESS;
    }
    match openapi_poem::check(&target.out, &files) {
        Ok(None) => {
            println!("{} is up to date with {}", target.out.display(), source);
            ExitCode::SUCCESS
        }
        Ok(Some(diff)) => {
            eprintln!("{diff}");
            eprintln!(
                "error: {} is stale; run `openapi-poem generate --spec {source}{}{}` and commit the result",
                target.out.display(),
                if flags.is_empty() { "" } else { " " },
                flags
            );
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", target.out.display());
            ExitCode::from(2)
        }
    }
}
