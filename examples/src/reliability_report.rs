//! `bluegreen-reliability DIR DOC`: renders the trials the fault tests recorded in `DIR` (see
//! `bluegreen_examples::reliability`) into the generated part of `DOC` (`docs/reliability.md`).
//! Run by `scripts/reliability.sh`.

use std::path::PathBuf;

use anyhow::{Context as _, ensure};
use bluegreen_examples::reliability::{read_all, render, splice};
use clap::Parser;

/// Renders recorded fault trials into docs/reliability.md.
#[derive(Debug, Parser)]
struct Args {
    /// The directory the tests wrote their trials to.
    dir: PathBuf,
    /// The document whose generated part is replaced.
    doc: PathBuf,
    /// How the trials were made, printed above the tables.
    #[arg(long, default_value = "scripts/reliability.sh")]
    made_by: String,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let trials = read_all(&args.dir).with_context(|| format!("reading {}", args.dir.display()))?;
    ensure!(
        !trials.is_empty(),
        "no trials in {}: did the tests run with BLUEGREEN_RELIABILITY_DIR set?",
        args.dir.display()
    );
    let doc = std::fs::read_to_string(&args.doc).unwrap_or_default();
    let updated = splice(&doc, &render(&trials, &args.made_by));
    std::fs::write(&args.doc, updated)
        .with_context(|| format!("writing {}", args.doc.display()))?;
    println!("{}: {} trials", args.doc.display(), trials.len());
    Ok(())
}
