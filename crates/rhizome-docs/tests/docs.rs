//! The README and `docs/` stay true to the repository: they name no path outside it, every
//! file they point at exists, every code block is either Rust that `cargo test` runs (the
//! README is a doc test of this crate, see `src/lib.rs`) or marked as shell/text, and the
//! README still opens with its two first commands.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every Markdown file under docs/ and fuzz/, with their text.
fn documents() -> Vec<(PathBuf, String)> {
    let root = root();
    let mut paths = vec![root.join("README.md"), root.join("fuzz/README.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/ exists") {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            paths.push(p);
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, text)
        })
        .collect()
}

/// The info strings of the fenced code blocks (the word after the opening fence), with the
/// block's first line number.
fn fences(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open = false;
    for (i, line) in text.lines().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            if !open {
                out.push((i + 1, info.trim().to_string()));
            }
            open = !open;
        }
    }
    assert!(!open, "an unclosed code block");
    out
}

#[test]
fn no_path_outside_the_repository() {
    for (path, text) in documents() {
        for (n, line) in text.lines().enumerate() {
            // The models directory beside a CI checkout may be *described* (the tests'
            // build script looks there) but never given to a user as where to find things.
            let describes_ci_layout = line.contains("beside the checkout");
            for needle in ["../", "/work/", "shared/formats", "ARCHITECTURE.md"] {
                if needle == "../" && describes_ci_layout {
                    continue;
                }
                assert!(
                    !line.contains(needle),
                    "{}:{}: names `{needle}`, a path outside the repository: {line}",
                    path.display(),
                    n + 1
                );
            }
        }
    }
}

#[test]
fn code_blocks_are_rust_that_runs_or_marked_as_not_rust() {
    for (path, text) in documents() {
        for (line, info) in fences(&text) {
            let lang = info.split(',').next().unwrap_or("");
            let is_readme = path.ends_with("README.md") && !path.ends_with("fuzz/README.md");
            match lang {
                "sh" | "text" => {}
                // Rust only in the README, which runs as doc tests; none skipped or
                // only compiled.
                "rust" if is_readme => assert_eq!(
                    info,
                    "rust",
                    "{}:{line}: a README Rust block must run as written",
                    path.display()
                ),
                other => panic!(
                    "{}:{line}: code block `{other}`: mark it `sh` or `text`, or make it a README `rust` block",
                    path.display()
                ),
            }
        }
    }
}

#[test]
fn readme_starts_with_its_two_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let first_block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a first sh block");
    let commands: Vec<&str> = first_block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        commands,
        [
            "cargo run --release -- reach",
            "cargo test --workspace --release"
        ]
    );
}

/// Relative Markdown links and backticked repository paths (`crates/...`, `docs/...`) must
/// name files that exist, so the map in docs/architecture.md stays the tree as it is. The
/// README's picture is made by `rhizome plot` and may lag behind a fresh checkout, so
/// image links are only required to live under docs/img/.
#[test]
fn named_files_exist() {
    let root = root();
    for (path, text) in documents() {
        let base = path.parent().unwrap();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("](") {
            let image = rest[..i]
                .rfind("![")
                .is_some_and(|b| !rest[b..i].contains(']'));
            rest = &rest[i + 2..];
            let target = &rest[..rest.find(')').unwrap()];
            if target.contains("://") || target.starts_with('#') {
                continue;
            }
            let target = target.split('#').next().unwrap();
            if image {
                assert!(
                    target.starts_with("docs/img/"),
                    "{}: image `{target}` outside docs/img/",
                    path.display()
                );
                continue;
            }
            assert!(
                base.join(target).exists(),
                "{}: link to `{target}`, which does not exist",
                path.display()
            );
        }
        for piece in text.split('`').skip(1).step_by(2) {
            let looks_like_path = ["crates/", "docs/", "fuzz/", "scripts/", ".ci/"]
                .iter()
                .any(|p| piece.starts_with(p));
            if !looks_like_path || piece.contains(' ') || piece.contains('…') {
                continue;
            }
            let file = piece.trim_end_matches('/');
            assert!(
                root.join(file).exists(),
                "{}: names `{piece}`, which is not in the repository",
                path.display()
            );
        }
    }
}
