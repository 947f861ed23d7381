//! `codegen generate|check [--spec PATH] [--out DIR] [--crate-name NAME]`.
//!
//! Exit codes: 0 success; 1 `check` found differences; 2 the document cannot be generated (the
//! message names the file and JSON pointer) or an I/O error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "codegen",
    about = "Generate the server crate from an OpenAPI 3.0 document"
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
    /// The generated crate's package name.
    #[arg(long, default_value = "bank-api")]
    crate_name: String,
    /// The `bank-codegen-runtime` dependency's path as written into the generated `Cargo.toml`
    /// (relative to `--out`, or absolute). Default: this checkout's `codegen/runtime`, relative
    /// to `--out`.
    #[arg(long)]
    runtime_path: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Write the crate to `--out`.
    Generate(Target),
    /// Exit 1 with a diff when `--out` is not what the document produces.
    Check(Target),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (target, write) = match cli.command {
        Command::Generate(t) => (t, true),
        Command::Check(t) => (t, false),
    };
    let text = match std::fs::read_to_string(&target.spec) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", target.spec.display());
            return ExitCode::from(2);
        }
    };
    let source = target.spec.display().to_string();
    let runtime_path = target.runtime_path.clone().unwrap_or_else(|| {
        bank_codegen::relative_path(&target.out, std::path::Path::new(bank_codegen::RUNTIME_DIR))
    });
    let opts = bank_codegen::Options {
        crate_name: &target.crate_name,
        source: &source,
        runtime_path: &runtime_path,
    };
    let files = match bank_codegen::generate(&text, &opts) {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "error: {}#{}: {}",
                source,
                e.pointer.trim_start_matches('#'),
                e.message
            );
            return ExitCode::from(2);
        }
    };
    if write {
        if let Err(e) = bank_codegen::write(&target.out, &files) {
            eprintln!("error: cannot write {}: {e}", target.out.display());
            return ExitCode::from(2);
        }
        println!("wrote {} files to {}", files.len(), target.out.display());
        return ExitCode::SUCCESS;
    }
    match bank_codegen::check(&target.out, &files) {
        Ok(None) => {
            println!("{} is up to date with {}", target.out.display(), source);
            ExitCode::SUCCESS
        }
        Ok(Some(diff)) => {
            eprintln!("{diff}");
            eprintln!(
                "error: {} is stale; run `cargo run -p bank-codegen -- generate` and commit the result",
                target.out.display()
            );
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", target.out.display());
            ExitCode::from(2)
        }
    }
}
