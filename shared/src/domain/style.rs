//! The style catalog: 15 handmade-looking media, each with its prompt recipe. The recipe
//! names the material, how it is built, its surface and its light, because "make it look
//! like X" alone yields a filter, not an object made of X.

use serde::{Deserialize, Serialize};

/// A medium from the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StyleId {
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

/// One catalog entry.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct Style {
    pub id: StyleId,
    pub name: &'static str,
    /// What the client shows under the name.
    pub blurb: &'static str,
    /// The medium, for the edit prompt: material, construction, surface, light.
    #[serde(skip)]
    pub recipe: &'static str,
    /// A dominant thread/paper/glaze colour, used by the stand-in model's deterministic effect
    /// and by clients for a swatch.
    pub swatch: [u8; 3],
}

macro_rules! style {
    ($id:ident, $name:literal, $blurb:literal, $recipe:literal, $swatch:expr) => {
        Style {
            id: StyleId::$id,
            name: $name,
            blurb: $blurb,
            recipe: $recipe,
            swatch: $swatch,
        }
    };
}

/// The catalog, in display order.
pub const STYLES: [Style; 15] = [
    style!(
        Embroidery,
        "Embroidery",
        "Satin-stitched thread on linen",
        "hand embroidery: dense satin and long-and-short stitches in cotton floss on a taut linen ground; visible thread direction follows the form; slight raised relief; soft raking light shows individual strands",
        [196, 64, 72]
    ),
    style!(
        NeedleFelt,
        "Needle felt",
        "Soft sculpted wool",
        "needle-felted wool sculpture: compacted carded fibres with a fuzzy halo, rounded simplified volumes, tiny stray hairs at the edges; matte, diffuse light",
        [214, 170, 120]
    ),
    style!(
        Origami,
        "Origami",
        "Folded paper facets",
        "origami: a single sheet of crisp coloured paper folded into flat facets with sharp creases; no cuts or glue; hard directional light makes each facet a flat tone",
        [70, 130, 200]
    ),
    style!(
        PaperQuilling,
        "Paper quilling",
        "Coiled paper strips",
        "paper quilling: narrow paper strips rolled into tight and loose coils and scrolls, glued edge-on to a card ground; the edges catch light, the coils cast small shadows",
        [236, 180, 60]
    ),
    style!(
        Crochet,
        "Crochet",
        "Amigurumi yarn stitches",
        "crochet amigurumi: single-crochet stitches in cotton yarn in visible spiral rows, stuffed rounded forms, embroidered details; soft daylight",
        [150, 200, 160]
    ),
    style!(
        KnittedWool,
        "Knitted wool",
        "Chunky knit texture",
        "hand-knitted wool: stockinette V-stitches and ribbing in chunky yarn, gentle fuzz, the knit rows wrap around the form",
        [180, 90, 60]
    ),
    style!(
        ClaySculpt,
        "Clay",
        "Stop-motion modelling clay",
        "plasticine stop-motion figure: smooth modelling clay with faint fingerprints and tool marks, saturated colours, slightly glossy highlights",
        [230, 120, 40]
    ),
    style!(
        StainedGlass,
        "Stained glass",
        "Lead-lined coloured glass",
        "stained glass: pieces of translucent coloured glass joined by dark lead came, glowing as if lit from behind; flat colour per piece",
        [40, 90, 170]
    ),
    style!(
        Mosaic,
        "Mosaic",
        "Small ceramic tesserae",
        "mosaic: small square ceramic and glass tesserae set in grout lines, each tile one colour, slight unevenness in the setting",
        [30, 150, 150]
    ),
    style!(
        LayeredPapercut,
        "Layered papercut",
        "Stacked cut paper",
        "layered papercut: several sheets of coloured card cut with a blade and stacked with gaps, soft drop shadows between layers",
        [240, 230, 210]
    ),
    style!(
        Linocut,
        "Linocut",
        "Carved block print",
        "linocut print: bold carved lines in one or two inks on off-white paper, gouge marks and slight ink unevenness",
        [30, 30, 40]
    ),
    style!(
        PatchworkQuilt,
        "Patchwork quilt",
        "Pieced fabric squares",
        "patchwork quilt: pieced cotton fabric patches in small prints, visible quilting stitches and seams, soft puffed batting",
        [120, 80, 160]
    ),
    style!(
        Beadwork,
        "Beadwork",
        "Glass seed beads",
        "beadwork: rows of tiny glass seed beads stitched edge to edge, each bead a glossy point of colour",
        [200, 40, 140]
    ),
    style!(
        PapierMache,
        "Papier-mâché",
        "Painted paper pulp",
        "papier-mâché: layered torn newspaper strips under matte poster paint, lumpy hand-made surface, visible paper edges",
        [250, 200, 90]
    ),
    style!(
        WoodCarving,
        "Wood carving",
        "Hand-carved wood",
        "hand-carved wood: limewood with chisel facets following the grain, warm oiled finish, crisp cut edges",
        [150, 100, 60]
    ),
];

impl StyleId {
    /// The catalog entry (every id has one).
    pub fn style(self) -> &'static Style {
        // The catalog is indexed in declaration order; the test below keeps them in step.
        &STYLES[self as usize]
    }

    pub fn as_str(self) -> &'static str {
        // serde's name, without allocating a JSON value.
        match self {
            StyleId::Embroidery => "embroidery",
            StyleId::NeedleFelt => "needle_felt",
            StyleId::Origami => "origami",
            StyleId::PaperQuilling => "paper_quilling",
            StyleId::Crochet => "crochet",
            StyleId::KnittedWool => "knitted_wool",
            StyleId::ClaySculpt => "clay_sculpt",
            StyleId::StainedGlass => "stained_glass",
            StyleId::Mosaic => "mosaic",
            StyleId::LayeredPapercut => "layered_papercut",
            StyleId::Linocut => "linocut",
            StyleId::PatchworkQuilt => "patchwork_quilt",
            StyleId::Beadwork => "beadwork",
            StyleId::PapierMache => "papier_mache",
            StyleId::WoodCarving => "wood_carving",
        }
    }

    pub fn parse(raw: &str) -> Option<StyleId> {
        STYLES.iter().map(|s| s.id).find(|id| id.as_str() == raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_indexed_by_id_and_names_match_serde() {
        for (i, s) in STYLES.iter().enumerate() {
            assert_eq!(s.id as usize, i, "{} out of order", s.name);
            let json = serde_json::to_value(s.id).unwrap_or_default();
            assert_eq!(json.as_str(), Some(s.id.as_str()));
            assert_eq!(StyleId::parse(s.id.as_str()), Some(s.id));
            assert!(s.recipe.len() > 40, "{} needs a real recipe", s.name);
        }
    }
}
