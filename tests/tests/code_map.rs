//! docs/architecture.md's code map names every Rust source file of the workspace's crates, and
//! nothing that is gone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, relative to the repository.
fn sources(repo: &Path, dir: &Path, into: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("a readable directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(repo, &path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(repo).expect("inside the repository");
            into.insert(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The `src/` files of the crates at the repository's top level (each a directory with a
/// `Cargo.toml` and a `src/`; the end-to-end test crate aside).
fn tree(repo: &Path) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    for entry in std::fs::read_dir(repo).expect("the repository") {
        let dir = entry.expect("a directory entry").path();
        if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() && !dir.ends_with("tests") {
            sources(repo, &dir.join("src"), &mut files);
        }
    }
    files
}

/// The source paths the code map names (backquoted, ending in `.rs`).
fn named(doc: &str) -> BTreeSet<String> {
    let map = doc
        .split_once("## Code map")
        .expect("docs/architecture.md has a Code map section")
        .1;
    map.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.contains("/src/") && Path::new(s).extension().is_some_and(|e| e == "rs"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_code_map_names_every_source_file_and_nothing_that_is_gone() {
    let repo = repo();
    let doc = std::fs::read_to_string(repo.join("docs/architecture.md")).expect("the doc");
    let named = named(&doc);
    let tree = tree(&repo);
    let missing: Vec<_> = tree.difference(&named).collect();
    let gone: Vec<_> = named.difference(&tree).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "docs/architecture.md's code map: not named {missing:?}; named but gone {gone:?}"
    );
}

#[test]
fn a_file_the_map_does_not_name_is_found() {
    let doc = "## Code map\n- `gate/src/lib.rs`: the surface.\n- `gate/src/old.rs`: gone.\n";
    let named = named(doc);
    let tree: BTreeSet<String> = ["gate/src/lib.rs", "gate/src/new.rs"]
        .map(str::to_owned)
        .into();
    assert_eq!(
        tree.difference(&named).collect::<Vec<_>>(),
        ["gate/src/new.rs"]
    );
    assert_eq!(
        named.difference(&tree).collect::<Vec<_>>(),
        ["gate/src/old.rs"]
    );
}
