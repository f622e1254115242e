//! Runs the fuzz target's checks on files (a crash AFL saved, or a whole corpus folder)
//! without AFL, so a crash can be reproduced and debugged with ordinary tools.

use std::path::Path;

fn replay(path: &Path) -> std::io::Result<usize> {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        let mut n = 0;
        for p in entries {
            n += replay(&p)?;
        }
        return Ok(n);
    }
    let data = std::fs::read(path)?;
    eprintln!("{}: {} bytes", path.display(), data.len());
    rhizome_fuzz::check(&data);
    Ok(1)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: replay FILE_OR_DIR...");
        std::process::exit(2);
    }
    let mut total = 0;
    for a in &args {
        match replay(Path::new(a)) {
            Ok(n) => total += n,
            Err(e) => {
                eprintln!("replay: error: {a}: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("{total} inputs checked, none failed");
}
