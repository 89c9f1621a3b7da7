//! The packaged zips' sizes per architecture, against issue 33's 4 MB (the consumer's plus the
//! content credentials' measured cost, issue 46).

use crate::artefacts::{FUNCTIONS, root, stale};
use crate::limits;
use crate::table::{Row, row};

pub fn zip_sizes() -> Vec<Row> {
    let mut out = Vec::new();
    for arch in ["x86_64", "arm64"] {
        let dir = root().join("target").join("lambda-dist").join(arch);
        if !dir.exists() {
            let why = match (arch, limits::arm64_unbuildable()) {
                ("arm64", Some(why)) => why,
                _ => format!("not measured: run `cargo xtask package --arch {arch}`"),
            };
            out.push(row(format!("zip size ({arch})"), why, ""));
            continue;
        }
        let mut parts = Vec::new();
        let (mut stale_any, mut all_met) = (false, true);
        for f in FUNCTIONS {
            let zip = dir.join(f).join("bootstrap.zip");
            let name = f.trim_start_matches("atelier-");
            match std::fs::metadata(&zip) {
                Ok(m) => {
                    all_met &= m.len() <= limits::zip_budget(f);
                    parts.push(format!("{name} {}", mb(m.len())));
                    stale_any |= stale(&zip, f);
                }
                Err(_) => parts.push(format!("{name} absent")),
            }
        }
        let bare = root()
            .join("target")
            .join("lambda-dist")
            .join("floor")
            .join(arch)
            .join(limits::BARE)
            .join("bootstrap.zip");
        let mut how = format!(
            "`target/lambda-dist/{arch}/*/bootstrap.zip` from `cargo xtask package`; MB = 10^6 bytes; the bare lambda_runtime's zip: {}",
            std::fs::metadata(&bare).map_or("absent".to_owned(), |m| mb(m.len()))
        );
        if stale_any {
            how.push_str("; **a zip is older than its sources: rerun `cargo xtask package`**");
        }
        let figure = format!(
            "{} (goal ≤ 4 MB each, the consumer's {} with the content credentials: {})",
            parts.join(", "),
            mb(limits::zip_budget("atelier-consumer")),
            limits::verdict(all_met)
        );
        out.push(row(format!("zip size ({arch})"), figure, how));
    }
    out
}

fn mb(bytes: u64) -> String {
    format!("{:.2} MB", bytes as f64 / 1_000_000.0)
}
