//! Property tests of the three pure rules money depends on, through their public APIs only:
//! validation of the edit request (any JSON parses into an `EditSpec` or gives field errors,
//! never panics; every text limit holds), the request hash (the idempotency arbiter: formatting
//! never changes it, meaning always does) and the price function (the table, its bounds,
//! monotone in the options, deterministic).

use std::collections::BTreeSet;

use atelier_shared::domain::edit::limits;
use atelier_shared::domain::pricing::{SIGNUP_GRANT, quote};
use atelier_shared::domain::validation::{TextError, clean_text};
use atelier_shared::domain::{
    AssetId, EditRequest, EditSpec, RepairRequest, STYLES, Strength, StyleId, Target,
};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};

/// The fields of the wire form, as a client names them.
const FIELDS: [&str; 9] = EditRequest::FIELDS;

const TARGETS: [Target; 4] = [
    Target::Pet,
    Target::Person,
    Target::Background,
    Target::Brush,
];
const STRENGTHS: [Strength; 3] = [Strength::Subtle, Strength::Balanced, Strength::Strong];

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Generators

/// A well-formed asset id (`ast_` + 26 Crockford base32 characters).
fn asset_id() -> impl Strategy<Value = String> {
    "[0-9abcdefghjkmnpqrstvwxyz]{26}".prop_map(|b| format!("ast_{b}"))
}

fn style_id() -> impl Strategy<Value = StyleId> {
    select(STYLES.iter().map(|s| s.id).collect::<Vec<_>>())
}

fn target() -> impl Strategy<Value = Target> {
    select(TARGETS.to_vec())
}

fn strength() -> impl Strategy<Value = Strength> {
    select(STRENGTHS.to_vec())
}

fn wire_name<T: serde::Serialize>(v: T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Characters that hide text from a person (issue 14): written out here from the issue, not
/// taken from the code under test, so the properties check the rule rather than restate it.
const HIDDEN: [(char, char); 10] = [
    ('\u{E0000}', '\u{E007F}'), // tag characters
    ('\u{2060}', '\u{2064}'),   // word joiner, invisible operators
    ('\u{00AD}', '\u{00AD}'),   // soft hyphen
    ('\u{061C}', '\u{061C}'),   // Arabic letter mark
    ('\u{180E}', '\u{180E}'),   // Mongolian vowel separator
    ('\u{FFF9}', '\u{FFFB}'),   // interlinear annotation
    ('\u{202A}', '\u{202E}'),   // bidi embeddings and overrides
    ('\u{2066}', '\u{2069}'),   // bidi isolates
    ('\u{200B}', '\u{200F}'),   // zero-width characters and marks
    ('\u{FEFF}', '\u{FEFF}'),   // byte-order mark
];

fn is_hidden(c: char) -> bool {
    HIDDEN.iter().any(|&(a, b)| (a..=b).contains(&c))
}

/// One character from the hidden ranges.
fn hidden_char() -> impl Strategy<Value = char> {
    select(HIDDEN.to_vec()).prop_flat_map(|(a, b)| proptest::char::range(a, b))
}

/// Hostile text with one hidden character put anywhere in it (start, middle or end), between
/// two letters, so it never lands inside an emoji sequence where UTS #51 allows it.
fn text_with_hidden() -> impl Strategy<Value = String> {
    (base_text(), hidden_char(), any::<prop::sample::Index>()).prop_map(|(text, c, at)| {
        let chars: Vec<char> = text.chars().collect();
        let i = at.index(chars.len() + 1);
        let hidden = ['x', c, 'x'];
        chars[..i]
            .iter()
            .chain(&hidden)
            .chain(&chars[i..])
            .collect()
    })
}

const ZWJ: char = '\u{200D}';

/// Emoji that join (issue 28: what phones type), each optionally with a skin tone, or VS16
/// where UTS #51 lists one for it (❤️, 🏳️).
fn emoji_element() -> impl Strategy<Value = String> {
    let base = select(vec![
        '\u{1F415}',
        '\u{1F9BA}',
        '\u{1F469}',
        '\u{1F468}',
        '\u{1F467}',
        '\u{1F4BB}',
        '\u{1F525}',
        '\u{1F308}',
        '\u{1F9D1}',
        '\u{1F91D}',
    ]);
    let suffix = select(vec!["", "", "\u{1F3FB}", "\u{1F3FF}"]);
    let with_selector = select(vec!['\u{2764}', '\u{1F3F3}']);
    prop_oneof![
        3 => (base, suffix).prop_map(|(b, s)| format!("{b}{s}")),
        1 => (with_selector, select(vec!["", "\u{FE0F}"])).prop_map(|(b, s)| format!("{b}{s}")),
    ]
}

/// Two to five emoji joined by ZWJ, or a subdivision flag (🏴 + tag letters + cancel tag).
fn emoji_sequence() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(emoji_element(), 2..=5).prop_map(|v| v.join(&ZWJ.to_string())),
        "[a-z0-9]{2,6}".prop_map(|spec| {
            let tags: String = spec
                .chars()
                .filter_map(|c| char::from_u32(0xE0000 + c as u32))
                .collect();
            format!("\u{1F3F4}{tags}\u{E007F}")
        }),
    ]
}

/// Whether the hidden character at `i` of `chars` is part of an emoji sequence as UTS #51
/// writes them: a ZWJ between two non-ASCII emoji (a VS16 may end the first), a tag inside
/// `🏴 tag{2,6} cancel-tag`.
fn sanctioned(chars: &[char], i: usize) -> bool {
    use unicode_properties::UnicodeEmoji;
    let emoji =
        |c: Option<&char>| c.is_some_and(|&c| !c.is_ascii() && c != ZWJ && c.is_emoji_char());
    match chars[i] {
        ZWJ => {
            let prev = match i.checked_sub(1).map(|p| chars[p]) {
                Some('\u{FE0F}') => i.checked_sub(2).and_then(|p| chars.get(p)),
                _ => i.checked_sub(1).and_then(|p| chars.get(p)),
            };
            emoji(prev) && emoji(chars.get(i + 1))
        }
        '\u{E0000}'..='\u{E007F}' => {
            let start = chars[..i].iter().rposition(|&c| c == '\u{1F3F4}');
            let end = chars[i..]
                .iter()
                .position(|&c| c == '\u{E007F}')
                .map(|e| e + i);
            match (start, end) {
                (Some(s), Some(e)) => {
                    let spec = &chars[s + 1..e];
                    (2..=6).contains(&spec.len())
                        && spec.iter().all(
                            |&c| matches!(c, '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}'),
                        )
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Text a person might type, or an attacker: ordinary words, other scripts, emoji, every kind
/// of whitespace and control character, bidi overrides and zero-width characters, and long runs.
fn base_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z ,.'-]{0,40}",
        2 => "\\PC{0,60}",
        2 => any::<String>(),
        1 => "[ \t\n\r\u{0}\u{7}\u{85}\u{a0}\u{200b}\u{202e}\u{2066}\u{feff}a-c]{0,12}",
        1 => (190usize..=260).prop_map(|n| "é".repeat(n)),
        1 => (70usize..=90).prop_map(|n| "x".repeat(n)),
    ]
}

/// [`base_text`], and sometimes the same with a hidden character.
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![5 => base_text(), 1 => text_with_hidden()]
}

/// Strings that are sometimes valid values of some field and sometimes not.
fn field_string() -> impl Strategy<Value = String> {
    prop_oneof![
        style_id().prop_map(|s| s.as_str().to_owned()),
        target().prop_map(wire_name),
        strength().prop_map(wire_name),
        asset_id(),
        asset_id().prop_map(|a| format!("  {a}\t")),
        asset_id().prop_map(|a| a.to_uppercase()),
        Just(String::new()),
        hostile_text(),
    ]
}

/// Any JSON value, biased towards strings that look like the fields' values.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        field_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A value for one field: mostly of the right JSON type, sometimes of any type.
fn field_value(field: &'static str) -> BoxedStrategy<Value> {
    if field == "locks" {
        prop_oneof![
            4 => prop::collection::vec(field_string().prop_map(Value::String), 0..6)
                .prop_map(Value::Array),
            1 => json_value(),
        ]
        .boxed()
    } else {
        prop_oneof![
            4 => field_string().prop_map(Value::String),
            1 => json_value(),
        ]
        .boxed()
    }
}

/// Any JSON object a client could send as an edit request: a random subset of the fields with
/// random values, sometimes an unknown field, sometimes not an object at all.
fn any_request_json() -> impl Strategy<Value = Value> {
    let fields = FIELDS.map(|f| prop::option::weighted(0.6, field_value(f)));
    let object = (
        fields,
        prop::option::weighted(0.1, ("[a-z_]{1,12}", json_value())),
    )
        .prop_map(|(values, extra)| {
            let mut m = Map::new();
            for (name, v) in FIELDS.iter().zip(values) {
                if let Some(v) = v {
                    m.insert((*name).to_owned(), v);
                }
            }
            if let Some((k, v)) = extra {
                m.insert(k, v);
            }
            Value::Object(m)
        });
    prop_oneof![4 => object, 5 => mutated_valid_request(), 1 => json_value()]
}

/// A valid request with a few fields removed, replaced by any value, or added: most land near
/// the boundary between accepted and refused.
fn mutated_valid_request() -> impl Strategy<Value = Value> {
    let edits = prop::collection::vec(
        (
            select(FIELDS.to_vec()),
            prop::option::weighted(0.7, json_value()),
        ),
        0..3,
    );
    (valid_request(), edits).prop_flat_map(|(r, edits)| {
        let base: Map<String, Value> = r
            .pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        let replacements: Vec<BoxedStrategy<(String, Option<Value>)>> = edits
            .into_iter()
            .map(|(field, remove_or_any)| match remove_or_any {
                None => Just((field.to_owned(), None)).boxed(),
                Some(_) => field_value(field)
                    .prop_map(move |v| (field.to_owned(), Some(v)))
                    .boxed(),
            })
            .collect();
        replacements.prop_map(move |changes| {
            let mut m = base.clone();
            for (k, v) in changes {
                match v {
                    Some(v) => m.insert(k, v),
                    None => m.remove(&k),
                };
            }
            Value::Object(m)
        })
    })
}

/// A request that validates: every field legal, text with surrounding whitespace.
#[derive(Debug, Clone)]
struct ValidRequest {
    style: StyleId,
    target: Target,
    strength: Option<Strength>,
    original: String,
    mask: String,
    reference: Option<String>,
    custom_style: Option<String>,
    target_description: Option<String>,
    locks: Vec<String>,
}

fn clean_word() -> impl Strategy<Value = String> {
    "[a-z][a-z ]{0,18}[a-z]"
}

fn valid_request() -> impl Strategy<Value = ValidRequest> {
    (
        (style_id(), target(), prop::option::of(strength())),
        (asset_id(), asset_id(), prop::option::of(asset_id())),
        prop::option::of(clean_word()),
        prop::option::of(clean_word()),
        prop::collection::btree_set(clean_word(), 0..=limits::LOCKS),
    )
        .prop_map(
            |((style, target, strength), (original, mask, reference), cs, td, locks)| {
                ValidRequest {
                    style,
                    target,
                    strength,
                    original,
                    mask,
                    reference,
                    custom_style: cs,
                    target_description: td,
                    // Case-insensitive duplicates are refused; keep one of each.
                    locks: locks.into_iter().fold(Vec::<String>::new(), |mut acc, l| {
                        if !acc.iter().any(|a| a.eq_ignore_ascii_case(&l)) {
                            acc.push(l);
                        }
                        acc
                    }),
                }
            },
        )
}

impl ValidRequest {
    /// The request as JSON key/value pairs (in a canonical order).
    fn pairs(&self) -> Vec<(&'static str, Value)> {
        let mut p = vec![
            ("style", json!(self.style.as_str())),
            ("target", json!(wire_name(self.target))),
            ("original_asset_id", json!(self.original)),
        ];
        if let Some(s) = self.strength {
            p.push(("strength", json!(wire_name(s))));
        }
        if self.target == Target::Brush {
            p.push(("mask_asset_id", json!(self.mask)));
        }
        if let Some(r) = &self.reference {
            p.push(("style_reference_asset_id", json!(r)));
        }
        if let Some(c) = &self.custom_style {
            p.push(("custom_style", json!(c)));
        }
        if let Some(t) = &self.target_description {
            p.push(("target_description", json!(t)));
        }
        if !self.locks.is_empty() {
            p.push(("locks", json!(self.locks)));
        }
        p
    }

    fn spec(&self) -> EditSpec {
        let json = Value::Object(
            self.pairs()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        );
        validate_json(&json).unwrap_or_else(|e| panic!("a valid request was refused: {e}"))
    }
}

/// Parses JSON text the way the API does and validates it.
fn validate_text(text: &str) -> Result<EditSpec, String> {
    let req: EditRequest = serde_json::from_str(text).map_err(|e| format!("shape: {e}"))?;
    req.validate().map_err(|e| format!("fields: {e}"))
}

fn validate_json(v: &Value) -> Result<EditSpec, String> {
    validate_text(&v.to_string())
}

/// Whitespace JSON allows between tokens.
fn ws() -> impl Strategy<Value = String> {
    "[ \t\r\n]{0,3}"
}

/// Writes `pairs` as a JSON object in the given key order with the given whitespace, and with
/// whitespace padding inside every text value (which validation trims).
fn render(pairs: &[(&'static str, Value)], order: &[usize], pad: &[String]) -> String {
    let mut pad = pad.iter().cycle();
    let mut next = || pad.next().cloned().unwrap_or_default();
    let padded = |v: &Value, p: &str| -> Value {
        let inside = p.replace(['\r', '\n'], " "); // text is one line; keep it legal
        match v {
            Value::String(s) => json!(format!("{inside}{s}{inside}")),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| json!(format!("{inside}{}", i.as_str().unwrap_or(""))))
                    .collect(),
            ),
            other => other.clone(),
        }
    };
    let mut out = format!("{}{{", next());
    for (n, &i) in order.iter().enumerate() {
        let (k, v) = &pairs[i];
        if n > 0 {
            out.push(',');
        }
        let p = next();
        out.push_str(&format!("{p}\"{k}\"{}:{}{}", next(), next(), padded(v, &p)));
    }
    out.push_str(&format!("{}}}{}", next(), next()));
    out
}

/// A valid request, then the same request with its keys shuffled and whitespace added.
fn valid_request_and_rendering() -> impl Strategy<Value = (ValidRequest, String)> {
    valid_request().prop_flat_map(|r| {
        let n = r.pairs().len();
        let order = Just((0..n).collect::<Vec<_>>()).prop_shuffle();
        let pad = prop::collection::vec(ws(), 1..12);
        (Just(r), order, pad).prop_map(|(r, order, pad)| {
            let text = render(&r.pairs(), &order, &pad);
            (r, text)
        })
    })
}

/// One change of meaning to a valid spec, by field.
#[derive(Debug, Clone)]
enum Change {
    Style(StyleId),
    Target(Target),
    Strength(Strength),
    Original(String),
    Mask(Option<String>),
    Reference(Option<String>),
    CustomStyle(Option<String>),
    TargetDescription(Option<String>),
    Locks(Vec<String>),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        style_id().prop_map(Change::Style),
        target().prop_map(Change::Target),
        strength().prop_map(Change::Strength),
        asset_id().prop_map(Change::Original),
        prop::option::of(asset_id()).prop_map(Change::Mask),
        prop::option::of(asset_id()).prop_map(Change::Reference),
        prop::option::of(clean_word()).prop_map(Change::CustomStyle),
        prop::option::of(clean_word()).prop_map(Change::TargetDescription),
        prop::collection::vec(clean_word(), 0..=3).prop_map(Change::Locks),
    ]
}

fn asset(raw: &str) -> AssetId {
    AssetId::parse(raw).unwrap_or_else(|| panic!("asset id {raw}"))
}

fn apply(spec: &EditSpec, change: &Change) -> EditSpec {
    let mut s = spec.clone();
    match change {
        Change::Style(v) => s.style = *v,
        Change::Target(v) => s.target = *v,
        Change::Strength(v) => s.strength = *v,
        Change::Original(v) => s.original_asset_id = asset(v),
        Change::Mask(v) => s.mask_asset_id = v.as_deref().map(asset),
        Change::Reference(v) => s.style_reference_asset_id = v.as_deref().map(asset),
        Change::CustomStyle(v) => s.custom_style = v.clone(),
        Change::TargetDescription(v) => s.target_description = v.clone(),
        Change::Locks(v) => s.locks = v.clone(),
    }
    s
}

/// Every invariant a validated spec promises.
fn assert_spec_invariants(spec: &EditSpec) -> Result<(), TestCaseError> {
    for (name, text, max) in [
        (
            "custom_style",
            spec.custom_style.as_deref(),
            limits::CUSTOM_STYLE_CHARS,
        ),
        (
            "target_description",
            spec.target_description.as_deref(),
            limits::TARGET_DESCRIPTION_CHARS,
        ),
    ] {
        if let Some(t) = text {
            prop_assert!(is_clean(t, max), "{name} {t:?} breaks the text rules");
        }
    }
    prop_assert!(spec.locks.len() <= limits::LOCKS, "{:?}", spec.locks);
    for (i, l) in spec.locks.iter().enumerate() {
        prop_assert!(is_clean(l, limits::LOCK_CHARS), "lock {l:?}");
        prop_assert!(
            !spec.locks[..i].iter().any(|e| e.eq_ignore_ascii_case(l)),
            "duplicate lock {l:?}"
        );
    }
    prop_assert_eq!(
        spec.mask_asset_id.is_some(),
        spec.target == Target::Brush,
        "a mask exactly when brushed"
    );
    for (_, _, id) in spec.assets() {
        prop_assert!(AssetId::parse(id.as_str()).is_some(), "{id}");
    }
    Ok(())
}

/// Trimmed, 1..=max characters, no control or hidden characters.
fn is_clean(t: &str, max: usize) -> bool {
    t == t.trim()
        && !t.is_empty()
        && t.chars().count() <= max
        && !t.chars().any(char::is_control)
        && {
            let chars: Vec<char> = t.chars().collect();
            (0..chars.len()).all(|i| !is_hidden(chars[i]) || sanctioned(&chars, i))
        }
}

// ---------------------------------------------------------------------------------------------
// Validation

proptest! {
    #![proptest_config(config(2000))]

    /// Any JSON object either becomes a spec that keeps every limit, or is refused naming
    /// known fields with stable codes — never a panic, never an empty refusal.
    #[test]
    fn any_edit_request_json_parses_into_a_spec_or_field_errors(body in any_request_json()) {
        let Ok(req) = serde_json::from_value::<EditRequest>(body.clone()) else {
            // A shape error (wrong JSON type, unknown field): the API answers 422 naming the
            // path, through serde; nothing more to check here.
            return Ok(());
        };
        match req.validate() {
            Ok(spec) => {
                assert_spec_invariants(&spec)?;
                // The stored form reads back as the same spec with the same hash.
                let stored = serde_json::to_string(&spec).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let back: EditSpec = serde_json::from_str(&stored).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(back.request_hash(), spec.request_hash());
                prop_assert_eq!(back, spec);
            }
            Err(errors) => {
                prop_assert!(!errors.is_empty(), "a refusal names at least one field: {body}");
                for e in &errors.0 {
                    let base = e.field.split('[').next().unwrap_or_default();
                    prop_assert!(FIELDS.contains(&base), "unknown field {:?} in {errors:?}", e.field);
                    prop_assert!(!e.code.as_str().is_empty() && e.code.as_str().chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{:?}", e.code);
                    prop_assert!(!e.message.is_empty());
                }
            }
        }
    }

    /// Arbitrary bytes as a body: an error or a request, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(req) = serde_json::from_slice::<EditRequest>(&bytes) {
            let _ = req.validate();
        }
    }

    /// Each text field, whatever its content, is either refused with the field's name or kept
    /// clean; the lengths are counted in characters.
    #[test]
    fn text_limits_hold_for_every_text_field(
        custom_style in hostile_text(),
        target_description in hostile_text(),
        locks in prop::collection::vec(hostile_text(), 0..6),
        original in asset_id(),
    ) {
        let req = EditRequest {
            style: Some("embroidery".into()),
            target: Some("pet".into()),
            original_asset_id: Some(original),
            custom_style: Some(custom_style.clone()),
            target_description: Some(target_description.clone()),
            locks: locks.clone(),
            ..EditRequest::default()
        };
        match req.validate() {
            Ok(spec) => {
                assert_spec_invariants(&spec)?;
                // Blank text means "not given"; otherwise the text is the input, trimmed.
                let expect = |raw: &str| (!raw.trim().is_empty()).then(|| raw.trim().to_owned());
                prop_assert_eq!(spec.custom_style, expect(&custom_style));
                prop_assert_eq!(spec.target_description, expect(&target_description));
                let trimmed: Vec<String> = locks.iter().map(|l| l.trim().to_owned()).collect();
                prop_assert_eq!(spec.locks, trimmed);
            }
            Err(errors) => {
                let named: BTreeSet<&str> = errors.0.iter().map(|e| e.field.split('[').next().unwrap_or_default()).collect();
                let allowed: BTreeSet<&str> = ["custom_style", "target_description", "locks"].into();
                prop_assert!(named.is_subset(&allowed), "{errors:?}");
                // The refusal agrees with clean_text field by field.
                let bad = |raw: &str, max| !raw.trim().is_empty() && clean_text(raw, max).is_err();
                prop_assert_eq!(named.contains("custom_style"), bad(&custom_style, limits::CUSTOM_STYLE_CHARS));
                prop_assert_eq!(named.contains("target_description"), bad(&target_description, limits::TARGET_DESCRIPTION_CHARS));
            }
        }
    }

    /// `clean_text` is idempotent, agrees with its own definition, and its error is the
    /// first rule broken.
    #[test]
    fn clean_text_is_idempotent_and_keeps_its_rules(raw in hostile_text(), max in 0usize..=250) {
        match clean_text(&raw, max) {
            Ok(t) => {
                prop_assert!(is_clean(&t, max), "{t:?}");
                prop_assert_eq!(t.as_str(), raw.trim());
                prop_assert_eq!(clean_text(&t, max), Ok(t.clone()), "idempotent");
            }
            Err(TextError::Empty) => prop_assert!(raw.trim().is_empty()),
            Err(TextError::TooLong { max: m }) => {
                prop_assert_eq!(m, max);
                prop_assert!(raw.trim().chars().count() > max);
            }
            Err(TextError::ControlCharacter) => {
                prop_assert!(raw.trim().chars().count() <= max);
                prop_assert!(!is_clean(raw.trim(), max));
            }
            Err(TextError::InvisibleCharacter(c)) => {
                prop_assert!(raw.trim().chars().count() <= max);
                prop_assert!(raw.trim().contains(c), "names a character of the text");
                prop_assert!(!raw.trim().chars().any(char::is_control), "control characters come first");
            }
        }
    }

    /// Text with a hidden character is never accepted unchanged, whatever the field and its
    /// limit: `clean_text` refuses it (a hidden character at either end is not trimmed away,
    /// as none of them is white space).
    #[test]
    fn text_with_a_hidden_character_is_never_accepted(raw in text_with_hidden(), max in 0usize..=400) {
        prop_assert!(clean_text(&raw, max).is_err(), "{raw:?} accepted");
    }

    /// Emoji as phones type them (ZWJ sequences, subdivision flags) are accepted anywhere in
    /// ordinary text, unchanged.
    #[test]
    fn emoji_sequences_are_accepted(before in "[a-zA-Z ]{0,20}", emoji in emoji_sequence(), after in "[a-zA-Z ]{0,20}") {
        let raw = format!("{before}{emoji}{after}");
        prop_assert_eq!(clean_text(&raw, 200), Ok(raw.trim().to_owned()));
    }

    /// The joiner and the tag characters next to anything but an emoji are refused, even
    /// inside or beside a valid sequence.
    #[test]
    fn joiners_and_tags_beside_non_emoji_are_refused(
        emoji in emoji_sequence(),
        hidden in select(vec![ZWJ, '\u{E0067}', '\u{E007F}']),
        letter in "[a-zA-Z0-9 #*]",
        at_end in any::<bool>(),
    ) {
        let raw = if at_end { format!("{emoji}{hidden}{letter}x") } else { format!("x{letter}{hidden}{emoji}") };
        prop_assert!(clean_text(&raw, 200).is_err(), "{raw:?} accepted");
    }

    /// The same through every text field of an edit and a repair: refused, naming the field.
    #[test]
    fn no_text_field_accepts_a_hidden_character(raw in text_with_hidden(), field in 0usize..4, original in asset_id()) {
        let mut req = EditRequest {
            style: Some("embroidery".into()),
            target: Some("pet".into()),
            original_asset_id: Some(original),
            ..EditRequest::default()
        };
        let name = match field {
            0 => { req.custom_style = Some(raw.clone()); "custom_style" }
            1 => { req.target_description = Some(raw.clone()); "target_description" }
            2 => { req.locks = vec![raw.clone()]; "locks[0]" }
            _ => {
                let repair = RepairRequest { instruction: Some(raw.clone()), ..RepairRequest::default() };
                let errors = repair.validate().err().ok_or_else(|| TestCaseError::fail(format!("{raw:?} accepted")))?;
                prop_assert!(errors.0.iter().any(|e| e.field == "instruction"), "{errors:?}");
                return Ok(());
            }
        };
        let errors = req.validate().err().ok_or_else(|| TestCaseError::fail(format!("{raw:?} accepted")))?;
        prop_assert!(errors.0.iter().any(|e| e.field == name), "{errors:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// The request hash

proptest! {
    #![proptest_config(config(1000))]

    /// Key order, whitespace between tokens, whitespace around text and an explicit default
    /// strength never change the hash: a retry by another client library replays.
    #[test]
    fn formatting_never_changes_the_hash((req, text) in valid_request_and_rendering()) {
        let spec = req.spec();
        let formatted = validate_text(&text).map_err(TestCaseError::fail)?;
        prop_assert_eq!(&formatted, &spec, "{}", text);
        prop_assert_eq!(formatted.request_hash(), spec.request_hash());
        // An absent strength is the default one.
        if req.strength.is_none() {
            let explicit = ValidRequest { strength: Some(Strength::Balanced), ..req.clone() };
            prop_assert_eq!(explicit.spec().request_hash(), spec.request_hash());
        }
        // Blank optional text is "not given".
        if req.custom_style.is_none() {
            let blank = ValidRequest { custom_style: Some("   ".into()), ..req.clone() };
            prop_assert_eq!(blank.spec().request_hash(), spec.request_hash());
        }
    }

    /// Equal specs hash equal (the hash is a function of the value, computed fresh each time).
    #[test]
    fn equal_specs_hash_equal(req in valid_request()) {
        let (a, b) = (req.spec(), req.spec());
        prop_assert_eq!(&a, &b);
        let h = a.request_hash();
        prop_assert_eq!(&h, &b.request_hash());
        prop_assert_eq!(h.len(), 64);
        prop_assert!(h.chars().all(|c| c.is_ascii_hexdigit()));
    }

    /// Any change of meaning in any field changes the hash: a key reused with another body is
    /// a conflict, never a replay of the wrong job.
    #[test]
    fn any_change_in_any_field_changes_the_hash(req in valid_request(), change in change()) {
        let spec = req.spec();
        let changed = apply(&spec, &change);
        if changed == spec {
            prop_assert_eq!(changed.request_hash(), spec.request_hash());
        } else {
            prop_assert_ne!(changed.request_hash(), spec.request_hash(), "{:?}", change);
        }
    }

    /// Two different requests from the wire hash differently, also when a text moves from one
    /// field to another (the hash is over named fields, not a concatenation).
    #[test]
    fn moving_text_between_fields_changes_the_hash(req in valid_request(), text in clean_word()) {
        let a = ValidRequest { custom_style: Some(text.clone()), target_description: None, ..req.clone() };
        let b = ValidRequest { custom_style: None, target_description: Some(text.clone()), ..req.clone() };
        let c = ValidRequest { custom_style: None, target_description: None, locks: vec![text], ..req };
        let hashes: BTreeSet<String> = [a, b, c].iter().map(|r| r.spec().request_hash()).collect();
        prop_assert_eq!(hashes.len(), 3);
    }
}

// ---------------------------------------------------------------------------------------------
// The price function

/// The README's table: pet 4, person 4, background 5, brushed area 3, +1 with a style reference.
fn table(target: Target, reference: bool) -> i64 {
    let base = match target {
        Target::Pet | Target::Person => 4,
        Target::Background => 5,
        Target::Brush => 3,
    };
    base + i64::from(reference)
}

proptest! {
    #![proptest_config(config(1000))]

    /// The price matches the table, lies within [3, 6] (and within the signup grant, so the
    /// first edit is free), is the sum of its lines, and depends on nothing else: not the style,
    /// strength, texts, locks or asset ids.
    #[test]
    fn the_price_matches_the_table_within_its_bounds(req in valid_request(), other in valid_request()) {
        let spec = req.spec();
        let q = quote(&spec);
        let credits = q.credits.get();
        let want = table(spec.target, spec.style_reference_asset_id.is_some());
        prop_assert_eq!(credits, want);
        prop_assert!((3..=6).contains(&credits), "{credits}");
        prop_assert!(q.credits <= SIGNUP_GRANT);
        prop_assert_eq!(credits, q.lines.iter().map(|l| l.credits.get()).sum::<i64>());
        prop_assert!(q.lines.iter().all(|l| l.credits.get() > 0 && !l.item.is_empty()));
        // Deterministic: the same spec, priced again (and a clone), gives the same quote.
        prop_assert_eq!(&quote(&spec), &q);
        prop_assert_eq!(&quote(&spec.clone()), &q);
        // Only the target and the reference's presence matter.
        let same_options = ValidRequest {
            target: req.target,
            reference: req.reference.as_ref().map(|_| other.original.clone()),
            ..other
        };
        prop_assert_eq!(quote(&same_options.spec()), q);
    }

    /// Monotone in the options: adding a style reference adds exactly one credit (and its own
    /// line), removing it takes that credit away; never cheaper with more.
    #[test]
    fn the_price_is_monotone_in_the_options(req in valid_request(), reference in asset_id()) {
        let without = ValidRequest { reference: None, ..req.clone() }.spec();
        let with = ValidRequest { reference: Some(reference), ..req }.spec();
        let (a, b) = (quote(&without), quote(&with));
        prop_assert_eq!(b.credits.get(), a.credits.get() + 1);
        prop_assert_eq!(b.lines.len(), a.lines.len() + 1);
        prop_assert!(b.lines.starts_with(&a.lines));
    }
}

/// The whole table, every target with and without a reference, exactly.
#[test]
fn every_row_of_the_price_table() {
    for target in TARGETS {
        for reference in [false, true] {
            let req = ValidRequest {
                style: StyleId::Origami,
                target,
                strength: None,
                original: AssetId::generate().as_str().to_owned(),
                mask: AssetId::generate().as_str().to_owned(),
                reference: reference.then(|| AssetId::generate().as_str().to_owned()),
                custom_style: None,
                target_description: None,
                locks: vec![],
            };
            assert_eq!(
                quote(&req.spec()).credits.get(),
                table(target, reference),
                "{target:?} reference={reference}"
            );
        }
    }
}
