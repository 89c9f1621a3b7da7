//! The closed sets of the edit request, as `--help` lists them. The API's OpenAPI document is
//! their definition; a test below fails when the two part.

use clap::ValueEnum;
use serde::Serialize;

/// Which part of the photo is redrawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The pet the photo shows (say which with --describe when there are several).
    Pet,
    /// The person (--describe picks one of several).
    Person,
    /// Everything but the subject.
    Background,
    /// The area painted white in --mask.
    Brush,
}

/// How far the medium goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strength {
    Subtle,
    Balanced,
    Strong,
}

/// The medium (`atelier styles` describes each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Style {
    Embroidery,
    NeedleFelt,
    Origami,
    PaperQuilling,
    Crochet,
    KnittedWool,
    ClaySculpt,
    StainedGlass,
    Mosaic,
    LayeredPapercut,
    Linocut,
    PatchworkQuilt,
    Beadwork,
    PapierMache,
    WoodCarving,
}

/// The wire name of a choice (what the API and the journal's fingerprint see).
pub fn wire<T: Serialize>(choice: T) -> String {
    match serde_json::to_value(choice) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAPI: &str = include_str!("../../../functions/api/openapi.json");

    fn api_enum(schema: &str) -> Vec<String> {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI).unwrap_or_default();
        serde_json::from_value(doc["components"]["schemas"][schema]["enum"].clone())
            .unwrap_or_default()
    }

    fn ours<T: ValueEnum + Serialize + Copy>() -> Vec<String> {
        T::value_variants().iter().map(|v| wire(*v)).collect()
    }

    #[test]
    fn the_choices_are_the_apis_own_enums() {
        assert_eq!(ours::<Target>(), api_enum("Target"));
        assert_eq!(ours::<Strength>(), api_enum("Strength"));
        assert_eq!(ours::<Style>(), api_enum("StyleId"));
    }

    #[test]
    fn help_and_wire_spell_a_choice_the_same_way() {
        for s in Style::value_variants() {
            let help = s.to_possible_value().map(|p| p.get_name().to_owned());
            assert_eq!(help, Some(wire(*s)));
        }
    }
}
