//! The Terraform module's inputs and outputs tables in `infra/terraform/README.md`, generated
//! from `variables.tf` and `outputs.tf` (what `terraform-docs` does; its Go binary cannot be
//! fetched here). `cargo xtask infra-schema` writes them between the markers; `cargo xtask
//! infra-test` fails when the committed README differs, so a new variable cannot go undocumented.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use hcl::{Block, Body, Expression};

pub const BEGIN: &str = "<!-- BEGIN_TF_DOCS -->";
pub const END: &str = "<!-- END_TF_DOCS -->";

/// The README with its generated part replaced by the tables of the module's `.tf` files.
pub fn render_readme(module: &Path) -> Result<String> {
    let readme = std::fs::read_to_string(module.join("README.md"))?;
    let (head, rest) = readme
        .split_once(BEGIN)
        .ok_or_else(|| anyhow!("infra/terraform/README.md has no {BEGIN} marker"))?;
    let (_, tail) = rest
        .split_once(END)
        .ok_or_else(|| anyhow!("infra/terraform/README.md has no {END} marker"))?;
    let tables = tables(module)?;
    Ok(format!("{head}{BEGIN}\n{tables}{END}{tail}"))
}

/// The inputs table, then the outputs table, in the order the files declare them.
fn tables(module: &Path) -> Result<String> {
    let variables = blocks(&module.join("variables.tf"), "variable")?;
    let outputs = blocks(&module.join("outputs.tf"), "output")?;
    let mut out =
        String::from("### Inputs\n\n| variable | type | default | meaning |\n|---|---|---|---|\n");
    for block in &variables {
        let default = match attribute(block.body(), "default") {
            Some(e) => format!("`{}`", one_line(e)),
            None => "**required**".to_owned(),
        };
        let kind = attribute(block.body(), "type").map_or_else(|| "any".to_owned(), one_line);
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            label(block)?,
            cell(&kind),
            cell(&default),
            cell(&description(block)?)
        ));
    }
    out.push_str("\n### Outputs\n\n| output | meaning |\n|---|---|\n");
    for block in &outputs {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            label(block)?,
            cell(&description(block)?)
        ));
    }
    Ok(out)
}

fn blocks(path: &Path, kind: &str) -> Result<Vec<Block>> {
    let text = std::fs::read_to_string(path)?;
    let body: Body = hcl::parse(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(body
        .into_blocks()
        .filter(|b| b.identifier() == kind)
        .collect())
}

fn label(block: &Block) -> Result<&str> {
    block
        .labels()
        .first()
        .map(|l| l.as_str())
        .ok_or_else(|| anyhow!("a {} block has no name", block.identifier()))
}

fn attribute<'a>(body: &'a Body, key: &str) -> Option<&'a Expression> {
    body.attributes().find(|a| a.key() == key).map(|a| a.expr())
}

fn description(block: &Block) -> Result<String> {
    match attribute(block.body(), "description") {
        Some(Expression::String(s)) => Ok(s.clone()),
        Some(Expression::TemplateExpr(t)) => Ok(t.to_string()),
        _ => bail!(
            "{} \"{}\" has no description string",
            block.identifier(),
            label(block)?
        ),
    }
}

/// An expression as one line of HCL (objects and lists written out on one line).
fn one_line(expr: &Expression) -> String {
    if let Expression::Object(object) = expr {
        let entries: Vec<String> = object
            .iter()
            .map(|(k, v)| format!("{} = {}", k, one_line(v)))
            .collect();
        return if entries.is_empty() {
            "{}".to_owned()
        } else {
            format!("{{ {} }}", entries.join(", "))
        };
    }
    let text = hcl::format::to_string(expr).unwrap_or_else(|_| expr.to_string());
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // The formatter pads lists as `[ "a" ]`; Terraform's own style is `["a"]`.
    text.replace("[ ", "[").replace(" ]", "]")
}

/// Text safe inside a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_and_an_output_become_rows_with_type_default_and_meaning() {
        let dir = std::env::temp_dir().join(format!("tf-docs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("variables.tf"),
            "variable \"web_origins\" {\n  description = \"Origins | allowed.\"\n  type = list(string)\n  default = [\"a\", \"b\"]\n}\nvariable \"limits\" {\n  description = \"L.\"\n  type = map(number)\n  default = { A = 5, B = 6 }\n}\nvariable \"dist_dir\" {\n  description = \"Zips.\"\n  type = string\n}\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("outputs.tf"),
            "output \"api_url\" {\n  description = \"Base URL.\"\n  value = 1\n}\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("README.md"),
            format!("# M\n{BEGIN}\nold\n{END}\nend\n"),
        )
        .unwrap();
        let readme = render_readme(&dir).unwrap();
        assert!(readme.starts_with("# M\n"));
        assert!(readme.ends_with(&format!("{END}\nend\n")));
        assert!(!readme.contains("old"));
        assert!(
            readme.contains(
                "| `web_origins` | list(string) | `[\"a\", \"b\"]` | Origins \\| allowed. |"
            ),
            "{readme}"
        );
        assert!(
            readme.contains("| `limits` | map(number) | `{ A = 5, B = 6 }` | L. |"),
            "{readme}"
        );
        assert!(readme.contains("| `dist_dir` | string | **required** | Zips. |"));
        assert!(readme.contains("| `api_url` | Base URL. |"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
