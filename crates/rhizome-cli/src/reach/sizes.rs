//! Sizes in `reach`: parsing `--memory`, the machine's memory, peak memory, and sizes
//! in text.

/// Parses `123`, `64K`, `512M`, `8G`, `1T` (binary multiples).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        // A trailing letter is a unit only after a number: `garbage` is not `garbag` in
        // an unknown unit `e`.
        Some((i, c)) if c.is_ascii_alphabetic() && t[..i].trim().parse::<f64>().is_ok() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(format!("size `{s}`: unknown unit `{c}` (use K, M, G or T)")),
            };
            (t[..i].trim(), m)
        }
        _ => (t, 1),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("size `{s}` is not a number with an optional K/M/G/T unit"))?;
    if n.is_nan() || n <= 0.0 || !n.is_finite() {
        return Err(format!("size `{s}` must be positive"));
    }
    Ok((n * mult as f64) as usize)
}

pub(super) fn physical_memory() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<usize>().ok())
        })
        .map_or(8 << 30, |kb| kb * 1024)
}

/// Peak resident memory of this process so far (VmHWM), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    process_status_bytes("VmHWM:")
}

/// A memory field of `/proc/self/status` (given in KiB there, e.g. `VmRSS:`), in bytes.
pub fn process_status_bytes(field: &str) -> Option<u64> {
    proc_self_bytes("status", field)
}

/// A `field:  N kB` line of `/proc/self/<file>`, in bytes.
pub(super) fn proc_self_bytes(file: &str, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/self/{file}")).ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

pub fn human_bytes(b: u64) -> String {
    let mut v = b as f64;
    for unit in ["B", "KiB", "MiB", "GiB"] {
        if v < 1024.0 {
            return format!("{v:.1} {unit}");
        }
        v /= 1024.0;
    }
    format!("{v:.1} TiB")
}

/// A node count in a line of text: `3.1M`, `420K`, `900`.
pub(super) fn short_nodes(n: usize) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1}M", n as f64 / (1 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.0}K", n as f64 / (1 << 10) as f64),
        n => n.to_string(),
    }
}

/// A byte count as `--memory` takes it: `128M`, `1.5G`.
pub(super) fn size_text(bytes: usize) -> String {
    let units = [
        ("T", 1usize << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ];
    for (unit, size) in units {
        if bytes >= size {
            let v = bytes as f64 / size as f64;
            return if bytes.is_multiple_of(size) {
                format!("{}{unit}", bytes / size)
            } else {
                format!("{v:.1}{unit}")
            };
        }
    }
    bytes.to_string()
}
