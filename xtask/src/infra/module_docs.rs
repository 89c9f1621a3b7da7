//! The Terraform module documents itself: every variable has a validation, every output a
//! description, and the README's inputs and outputs tables match the `.tf` files.

use std::path::Path;

use anyhow::{Result, bail};

use super::outcome::Outcome;
use crate::tf_docs::render_readme;

pub(super) fn terraform_documented(infra: &Path) -> Result<Outcome> {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(infra.join("terraform"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "tf") {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            for block in undocumented_blocks(&std::fs::read_to_string(&path)?) {
                missing.push(format!("terraform/{name}: {block}"));
            }
        }
    }
    if missing.is_empty() {
        Ok(Outcome::Passed)
    } else {
        missing.sort();
        bail!("{}", missing.join("; "))
    }
}

pub(super) fn terraform_tables_current(infra: &Path) -> Result<Outcome> {
    let module = infra.join("terraform");
    let committed = std::fs::read_to_string(module.join("README.md"))?;
    if render_readme(&module)? == committed {
        Ok(Outcome::Passed)
    } else {
        bail!(
            "infra/terraform/README.md's tables differ from the .tf files: run `cargo xtask infra-schema`"
        )
    }
}

/// How a block opens at the end of its header line (kept out of the functions below, whose
/// brace balance then reads plainly).
const BLOCK_OPEN: &str = " \u{7b}";
/// A line that closes a top-level block.
const BLOCK_CLOSE: &str = "\u{7d}";
/// The line that opens a variable's validation block.
const VALIDATION_OPEN: &str = "validation \u{7b}";

/// What each kind of top-level block must contain: a `variable` a `validation` block, an
/// `output` a `description`.
fn required_inside(header: &str) -> (&'static str, &'static str) {
    if header.starts_with("variable") {
        (VALIDATION_OPEN, "validation")
    } else {
        ("description", "description")
    }
}

/// The top-level `variable` blocks without a `validation` block and `output` blocks without a
/// `description` in one file (blocks open at the end of a header line and close with a line
/// that is only the closing brace, as `terraform fmt` writes them).
fn undocumented_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<(String, bool)> = None;
    for line in text.lines() {
        if let Some((header, found)) = &mut open {
            let (wanted, name) = required_inside(header);
            *found |= line.trim_start().starts_with(wanted);
            if line == BLOCK_CLOSE {
                if !*found {
                    out.push(format!("{header} has no {name}"));
                }
                open = None;
            }
        } else if let Some(header) = line.strip_suffix(BLOCK_OPEN)
            && (header.starts_with("variable \"") || header.starts_with("output \""))
        {
            open = Some((header.to_owned(), false));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_without_validation_and_an_output_without_description_are_named() {
        let tf = "variable \"a\" {\n  type = number\n  validation {\n    condition = var.a > 0\n  }\n}\n\
                  variable \"b\" {\n  type = number\n}\n\
                  output \"c\" {\n  description = \"C.\"\n  value = 1\n}\n\
                  output \"d\" {\n  value = 1\n}\n";
        assert_eq!(
            undocumented_blocks(tf),
            vec![
                "variable \"b\" has no validation",
                "output \"d\" has no description"
            ]
        );
    }
}
