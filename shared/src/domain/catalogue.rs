//! Every model Atelier can use, in one table: who serves it, which calls it can serve, what
//! the provider charges for it (integer micro-dollars per million tokens, with the date and
//! the place the figure was read), and the day the provider shuts it down where one is
//! announced. The cost of a call comes from the row of the model that served it
//! (`adapters::model::cost`); the configuration refuses a model that is not here, cannot serve its
//! call, or is past its shutdown ([`check_configured`]); the deployment reads the same rows
//! (`atelier-admin models` → `infra/models.json`, written by `adapters::model::catalogue`)
//! and refuses the same models. Data and pure rules only: the lifecycle metric and the
//! export, which name the metrics, are the adapter's.
//!
//! A price change is a new [`Prices`] value with a new `version`; a row is never edited in
//! place once costs were booked from it, so a stored attempt names the prices it used.

use serde::{Deserialize, Serialize};
use time::Date;
use time::macros::date;

/// Which paid call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// The readiness check (vision).
    Check,
    /// The image edit.
    Edit,
    /// The review of a result (vision).
    Review,
    /// The comparison of a repair candidate (vision).
    Compare,
}

impl CallKind {
    pub const ALL: [CallKind; 4] = [
        CallKind::Check,
        CallKind::Edit,
        CallKind::Review,
        CallKind::Compare,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CallKind::Check => "check",
            CallKind::Edit => "edit",
            CallKind::Review => "review",
            CallKind::Compare => "compare",
        }
    }
}

impl std::fmt::Display for CallKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which provider's API serves a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI's image-edit and chat-completions API (`/v1/images/edits`, `/v1/chat/completions`).
    OpenAi,
    /// Google's Gemini API (`/v1beta/models/{model}:generateContent`, [`super::gemini`]).
    Gemini,
}

impl Provider {
    pub const ALL: [Provider; 2] = [Provider::OpenAi, Provider::Gemini];

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Gemini => "gemini",
        }
    }

    /// The provider a configuration value names (`openai`, `gemini`).
    pub fn parse(raw: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == raw)
    }

    /// The edit model used on this provider when none is configured.
    pub fn default_image_model(self) -> &'static str {
        match self {
            Provider::OpenAi => DEFAULT_IMAGE_MODEL,
            Provider::Gemini => DEFAULT_GEMINI_IMAGE_MODEL,
        }
    }

    /// The vision model used on this provider when none is configured.
    pub fn default_vision_model(self) -> &'static str {
        match self {
            Provider::OpenAi => DEFAULT_VISION_MODEL,
            Provider::Gemini => DEFAULT_GEMINI_VISION_MODEL,
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a model can do for Atelier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Serves {
    /// The edit: a prompt, up to two role-labelled images and an alpha mask on the first.
    Edit,
    /// The readiness check, the review and the comparison: images in, a strict
    /// `json_schema` answer out.
    Vision,
}

impl Serves {
    /// The calls of this kind.
    pub fn calls(self) -> &'static [CallKind] {
        match self {
            Serves::Edit => &[CallKind::Edit],
            Serves::Vision => &[CallKind::Check, CallKind::Review, CallKind::Compare],
        }
    }

    /// The kind of model a call needs.
    pub fn of(kind: CallKind) -> Serves {
        match kind {
            CallKind::Edit => Serves::Edit,
            CallKind::Check | CallKind::Review | CallKind::Compare => Serves::Vision,
        }
    }
}

/// Rates in micro-dollars per million tokens (so a fraction of a micro-dollar per token stays
/// an integer), as the provider bills the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "billed_as", rename_all = "snake_case")]
pub enum Rates {
    /// An image model: text and image input priced apart, image output tokens.
    ImageTokens {
        text_input_per_mtok: u64,
        image_input_per_mtok: u64,
        output_per_mtok: u64,
    },
    /// A chat model: input (text and images alike) and output, reasoning tokens included in
    /// the output.
    ChatTokens {
        input_per_mtok: u64,
        output_per_mtok: u64,
    },
}

/// One version of a model's prices and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Prices {
    /// Stored beside every cost computed from these prices (`<model>@<version>`).
    pub version: &'static str,
    /// The day the figures were read.
    pub as_of: Date,
    pub rates: Rates,
    /// Where the figures come from, and what is assumed where the source is not the
    /// provider's own page for this exact model.
    pub source: &'static str,
}

/// The output tokens an edit model bills for its largest image (1536×1024) at each quality;
/// `auto` counts as high.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OutputCeiling {
    pub low: u64,
    pub medium: u64,
    pub high: u64,
}

/// gpt-image-1's published counts for 1536×1024 (rounded up).
const IMAGE_1_OUTPUT: OutputCeiling = OutputCeiling {
    low: 408,
    medium: 1_584,
    high: 6_240,
};

/// ASSUMPTION: OpenAI publishes no per-quality output counts for the 2.x models; 1.5 times
/// gpt-image-1's, so the reservation stays above the cost (the settlement uses the usage the
/// provider reports, so only headroom is lost).
const IMAGE_2X_OUTPUT: OutputCeiling = OutputCeiling {
    low: 612,
    medium: 2_376,
    high: 9_360,
};

/// The largest ceiling in the table, for a model that has none.
pub const LARGEST_EDIT_OUTPUT: OutputCeiling = IMAGE_2X_OUTPUT;

/// One model Atelier can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Model {
    pub provider: Provider,
    /// The id sent as `model` on the wire.
    pub id: &'static str,
    pub serves: Serves,
    pub prices: Prices,
    /// The provider's announced shutdown day: from that day on a call answers "no such model".
    pub shutdown: Option<Date>,
    /// Where the shutdown date (or its absence) is documented.
    pub lifecycle_source: &'static str,
    /// An edit model's largest output, in tokens, per quality (`None` for a vision model):
    /// the estimate's output part.
    pub edit_output: Option<OutputCeiling>,
    /// `reasoning_effort` sent on each vision call, for reasoning models: `none` keeps the
    /// whole `max_completion_tokens` for the answer (reasoning tokens count against it).
    pub reasoning_effort: Option<&'static str>,
}

/// The pinned official client whose documentation the lifecycle dates are read from (and a
/// test compares them with: `tools/model-server/tests/official_client.rs`).
pub const OFFICIAL_CLIENT: &str =
    "openai==3.57.0 (Python), types/image_model.py and types/shared/chat_model.py";

/// Days before an announced shutdown when the daily check starts to warn (metric and alarm).
pub const SHUTDOWN_WARNING_DAYS: i64 = 30;

const IMAGE_2X: Rates = Rates::ImageTokens {
    text_input_per_mtok: 5_000_000,
    image_input_per_mtok: 8_000_000,
    output_per_mtok: 30_000_000,
};

const IMAGE_2X_SOURCE: &str = "OpenAI's model page for gpt-image-2.6-sunburst \
(developers.openai.com/api/docs/models/gpt-image-2.6-sunburst: text input $5.00, image input \
$8.00, image output $30.00 per 1M tokens). ASSUMPTION for the 2.5 models: the same rates, as \
OpenAI's 2026-09-08 launch of GPT Image 2.5 kept gpt-image-2's prices (reported by resellers); \
their own model pages were not available to check";

/// A GPT Image 2.5 model: the two share rates, ceilings and their documented status.
const fn image_2_5(id: &'static str) -> Model {
    Model {
        provider: Provider::OpenAi,
        id,
        serves: Serves::Edit,
        prices: Prices {
            version: "2026-12-01",
            as_of: date!(2026 - 12 - 01),
            rates: IMAGE_2X,
            source: IMAGE_2X_SOURCE,
        },
        shutdown: None,
        lifecycle_source: "openai==3.57.0 types/image_edit_params.py: a current edit model, a suggested replacement of gpt-image-1",
        edit_output: Some(IMAGE_2X_OUTPUT),
        reasoning_effort: None,
    }
}

/// The table. Defaults are [`DEFAULT_IMAGE_MODEL`] and [`DEFAULT_VISION_MODEL`].
pub const CATALOGUE: &[Model] = &[
    image_2_5("gpt-image-2.5-sunburst"),
    image_2_5("gpt-image-2.5-flare"),
    Model {
        provider: Provider::OpenAi,
        id: "gpt-image-1",
        serves: Serves::Edit,
        prices: Prices {
            version: "2026-11",
            as_of: date!(2026 - 11 - 01),
            rates: Rates::ImageTokens {
                text_input_per_mtok: 5_000_000,
                image_input_per_mtok: 10_000_000,
                output_per_mtok: 40_000_000,
            },
            source: "the figures Atelier booked in November 2026 (cost table 2026-11: text $5, image $10, output $40 per 1M tokens)",
        },
        shutdown: Some(date!(2026 - 10 - 23)),
        lifecycle_source: "openai==3.57.0 types/image_model.py: \"GPT Image 1 was shut down on October 23, 2026\"",
        edit_output: Some(IMAGE_1_OUTPUT),
        reasoning_effort: None,
    },
    Model {
        provider: Provider::OpenAi,
        id: "gpt-5.4-mini",
        serves: Serves::Vision,
        prices: Prices {
            version: "2026-12-01",
            as_of: date!(2026 - 12 - 01),
            rates: Rates::ChatTokens {
                input_per_mtok: 750_000,
                output_per_mtok: 4_500_000,
            },
            source: "OpenAI's price for gpt-5.4-mini as listed by the gateways that resell it at cost \
(OpenRouter, Vercel AI Gateway: $0.75 input, $4.50 output per 1M tokens, linking \
developers.openai.com/api/docs/pricing). ASSUMPTION: OpenAI's own page was not available to check",
        },
        shutdown: None,
        lifecycle_source: "openai==3.57.0 types/shared/chat_model.py: listed, no announced shutdown",
        edit_output: None,
        reasoning_effort: Some("none"),
    },
    Model {
        provider: Provider::OpenAi,
        id: "gpt-4.1-mini",
        serves: Serves::Vision,
        prices: Prices {
            version: "2026-11",
            as_of: date!(2026 - 11 - 01),
            rates: Rates::ChatTokens {
                input_per_mtok: 400_000,
                output_per_mtok: 1_600_000,
            },
            source: "the figures Atelier booked in November 2026 (cost table 2026-11: $0.40 input, $1.60 output per 1M tokens)",
        },
        shutdown: Some(date!(2027 - 01 - 14)),
        lifecycle_source: "openai==3.57.0 types/shared/chat_model.py: \"Announced shutdown date: 2027-01-14\"",
        edit_output: None,
        reasoning_effort: None,
    },
    GEMINI_ROWS[0],
    GEMINI_ROWS[1],
];

/// Output allowance of a Gemini image model: the image itself (1,120 tokens for a 1K image,
/// the only size Atelier asks for) plus its thinking and any text. ASSUMPTION: Google
/// publishes no ceiling for the thinking tokens; 2,000 is an allowance (the settlement uses the
/// reported usage, so only headroom is lost if it is generous).
const GEMINI_IMAGE_OUTPUT: OutputCeiling = OutputCeiling {
    low: 3_120,
    medium: 3_120,
    high: 3_120,
};

/// Gemini's rows: an edit model and a vision model.
const GEMINI_ROWS: [Model; 2] = [
    Model {
        provider: Provider::Gemini,
        id: "gemini-3.1-flash-image",
        serves: Serves::Edit,
        prices: Prices {
            version: "2026-12-01",
            as_of: date!(2026 - 12 - 01),
            // Input (text and image) $0.50; image output $60 per 1M tokens. Text and thinking
            // output ($3) is charged at the image rate too, since the usage does not split it:
            // an upper bound.
            rates: Rates::ImageTokens {
                text_input_per_mtok: 500_000,
                image_input_per_mtok: 500_000,
                output_per_mtok: 60_000_000,
            },
            source: "Gemini 3.1 Flash Image: input $0.50 (text/image), output $3.00 (text and \
thinking), image output $60.00 per 1M tokens ($0.067 for a 1K image of 1,120 tokens). ASSUMPTION: Google's own pricing page (ai.google.dev/gemini-api/docs/pricing) was not reachable when read; these are the figures gateways reselling Google AI Studio at cost list",
        },
        shutdown: None,
        lifecycle_source: "google-genai==3.6.1 _gaos/types/interactions/model.py: listed (\"Gemini 3.1 Flash Image.\"), no shutdown announced",
        edit_output: Some(GEMINI_IMAGE_OUTPUT),
        reasoning_effort: None,
    },
    Model {
        provider: Provider::Gemini,
        id: "gemini-3.1-flash-lite",
        serves: Serves::Vision,
        prices: Prices {
            version: "2026-12-01",
            as_of: date!(2026 - 12 - 01),
            rates: Rates::ChatTokens {
                input_per_mtok: 250_000,
                output_per_mtok: 1_500_000,
            },
            source: "Gemini 3.1 Flash-Lite: input $0.25, output $1.50 per 1M tokens (thinking \
included in output). ASSUMPTION: Google's own pricing page (ai.google.dev/gemini-api/docs/pricing) was not reachable when read; these are the figures gateways reselling Google AI Studio at cost list",
        },
        shutdown: None,
        lifecycle_source: "google-genai==3.6.1 _gaos/types/interactions/model.py: listed, no shutdown announced",
        edit_output: None,
        reasoning_effort: None,
    },
];

/// The edit model when none is configured: the editing-precision one of the two the pinned
/// client names as gpt-image-1's replacements (flare is the faster one).
pub const DEFAULT_IMAGE_MODEL: &str = "gpt-image-2.5-sunburst";
/// The vision model when none is configured: the pinned client's current small model with
/// image input and strict JSON schema answers, no shutdown announced.
pub const DEFAULT_VISION_MODEL: &str = "gpt-5.4-mini";
/// Gemini's edit model when none is configured.
pub const DEFAULT_GEMINI_IMAGE_MODEL: &str = "gemini-3.1-flash-image";
/// Gemini's vision model when none is configured.
pub const DEFAULT_GEMINI_VISION_MODEL: &str = "gemini-3.1-flash-lite";
/// [`DEFAULT_IMAGE_MODEL`]'s row in [`CATALOGUE`] (a unit test holds them together).
pub const DEFAULT_IMAGE_ROW: usize = 0;
/// [`DEFAULT_VISION_MODEL`]'s row in [`CATALOGUE`].
pub const DEFAULT_VISION_ROW: usize = 3;

/// The row of a model id.
pub fn find(id: &str) -> Option<&'static Model> {
    CATALOGUE.iter().find(|m| m.id == id)
}

/// Why a configured model cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelRefused {
    #[error(
        "{id:?} is not in the model catalogue (shared/src/domain/catalogue.rs); known: {known}"
    )]
    Unknown { id: String, known: String },
    #[error("{id:?} cannot serve the {wanted:?} calls")]
    WrongKind { id: String, wanted: Serves },
    #[error("{id:?} was shut down by its provider on {shutdown}; use one of: {instead}")]
    ShutDown {
        id: String,
        shutdown: Date,
        instead: String,
    },
}

impl Model {
    /// Whether the provider has shut the model down by `today` (UTC).
    pub fn is_shut_down(&self, today: Date) -> bool {
        self.shutdown.is_some_and(|d| d <= today)
    }

    /// Days from `today` until the announced shutdown (negative once past); `None` when none
    /// is announced.
    pub fn days_to_shutdown(&self, today: Date) -> Option<i64> {
        self.shutdown.map(|d| (d - today).whole_days())
    }

    /// `<model>@<prices version>`: what a stored cost names.
    pub fn price_label(&self) -> String {
        format!("{}@{}", self.id, self.prices.version)
    }
}

/// The model to use for calls of `serves`: known, able to serve them, and not shut down on
/// `today`. The cold start, the deploy checks and the tests all ask this.
pub fn check_configured(
    id: &str,
    serves: Serves,
    today: Date,
) -> Result<&'static Model, ModelRefused> {
    let Some(model) = find(id) else {
        return Err(ModelRefused::Unknown {
            id: id.to_owned(),
            known: usable(serves, today).join(", "),
        });
    };
    if model.serves != serves {
        return Err(ModelRefused::WrongKind {
            id: id.to_owned(),
            wanted: serves,
        });
    }
    match model.shutdown {
        Some(shutdown) if model.is_shut_down(today) => Err(ModelRefused::ShutDown {
            id: id.to_owned(),
            shutdown,
            instead: usable(serves, today).join(", "),
        }),
        _ => Ok(model),
    }
}

/// The ids of the models that can serve `serves` on `today`.
pub fn usable(serves: Serves, today: Date) -> Vec<&'static str> {
    CATALOGUE
        .iter()
        .filter(|m| m.serves == serves && !m.is_shut_down(today))
        .map(|m| m.id)
        .collect()
}

/// Days until the nearest announced shutdown among `ids` on `today` (negative once past;
/// an id not in the catalogue counts as shut down today, 0), or `None` when none is announced.
pub fn nearest_shutdown<'a>(ids: impl IntoIterator<Item = &'a str>, today: Date) -> Option<i64> {
    ids.into_iter()
        .filter_map(|id| match find(id) {
            Some(model) => model.days_to_shutdown(today),
            None => Some(0),
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TODAY: Date = date!(2026 - 12 - 01);

    #[test]
    fn every_id_is_listed_once() {
        let mut ids: Vec<&str> = CATALOGUE.iter().map(|m| m.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CATALOGUE.len());
    }

    #[test]
    fn the_default_rows_are_the_default_ids() {
        assert_eq!(CATALOGUE[DEFAULT_IMAGE_ROW].id, DEFAULT_IMAGE_MODEL);
        assert_eq!(CATALOGUE[DEFAULT_VISION_ROW].id, DEFAULT_VISION_MODEL);
    }

    #[test]
    fn the_defaults_are_usable_today() {
        assert!(check_configured(DEFAULT_IMAGE_MODEL, Serves::Edit, TODAY).is_ok());
        assert!(check_configured(DEFAULT_VISION_MODEL, Serves::Vision, TODAY).is_ok());
    }

    #[test]
    fn the_defaults_are_not_due_to_shut_down_within_the_warning() {
        for id in [DEFAULT_IMAGE_MODEL, DEFAULT_VISION_MODEL] {
            let days = find(id).and_then(|m| m.days_to_shutdown(TODAY));
            assert!(
                days.is_none_or(|d| d > SHUTDOWN_WARNING_DAYS),
                "{id}: {days:?}"
            );
        }
    }

    #[test]
    fn a_shut_down_unknown_or_misplaced_model_is_refused_with_a_reason() {
        let cases: [(&str, &str, Serves); 3] = [
            ("shut down on 2026-10-23", "gpt-image-1", Serves::Edit),
            ("not in the catalogue", "gpt-image-9", Serves::Edit),
            ("a vision model cannot edit", "gpt-5.4-mini", Serves::Edit),
        ];
        for (why, id, serves) in cases {
            let err = check_configured(id, serves, TODAY).expect_err(why);
            assert!(err.to_string().contains(id), "{why}: {err}");
        }
        let err = check_configured("gpt-image-1", Serves::Edit, TODAY).expect_err("shut down");
        assert!(err.to_string().contains("gpt-image-2.5-sunburst"), "{err}");
    }

    #[test]
    fn a_model_is_shut_down_from_its_shutdown_day_on() {
        let m = find("gpt-4.1-mini").expect("listed");
        assert!(!m.is_shut_down(date!(2027 - 01 - 13)));
        assert!(m.is_shut_down(date!(2027 - 01 - 14)));
        assert_eq!(m.days_to_shutdown(TODAY), Some(44));
    }
}
