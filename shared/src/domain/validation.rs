//! Field errors collected while parsing input into domain values. Every limit in the system
//! is enforced while building a typed value, so a value that exists is valid.

use serde::Serialize;

mod emoji_variation;

/// One problem with one field of the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FieldError {
    /// JSON path of the field, e.g. `locks[1]`.
    pub field: String,
    /// Stable machine code, from the `FieldCode` catalogue.
    pub code: FieldCode,
    /// A sentence for a person.
    pub message: String,
}

/// The catalogue of field-error codes (`FieldError::code`): one variant per stable code, in
/// the OpenAPI document as a string enum, so clients switch on a union, not on free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FieldCode {
    /// Missing or empty where a value is required.
    Required,
    /// Present but not a valid value of its type.
    Invalid,
    /// Not a field of this request.
    UnknownField,
    /// User text: empty after trimming.
    Empty,
    /// User text: longer than its limit.
    TooLong,
    /// User text: a control character (newlines included).
    ControlCharacter,
    /// User text: a hidden format character outside an emoji sequence.
    InvisibleCharacter,
    /// Not one of the strengths.
    UnknownStrength,
    /// Not a medium of the catalogue.
    UnknownStyle,
    /// Not one of the targets.
    UnknownTarget,
    /// Not one of the upload kinds.
    UnknownKind,
    /// Not one of the credit packs.
    UnknownPack,
    /// Not allowed with the other fields (a mask without the brush target).
    NotAllowed,
    /// A list longer than its limit.
    TooMany,
    /// The same value twice in a list.
    Duplicate,
    /// Not an asset id.
    InvalidAssetId,
    /// Below the smallest accepted value.
    TooSmall,
    /// Above the largest accepted value.
    TooLarge,
    /// Outside the accepted range.
    OutOfRange,
    /// A content type the API does not take.
    UnsupportedType,
    /// An asset id that names no asset of this user.
    AssetNotFound,
    /// A repair may not change the settings of the edit it repairs.
    SettingsLocked,
}

impl FieldCode {
    /// The wire form (`too_long`).
    pub fn as_str(self) -> &'static str {
        match self {
            FieldCode::Required => "required",
            FieldCode::Invalid => "invalid",
            FieldCode::UnknownField => "unknown_field",
            FieldCode::Empty => "empty",
            FieldCode::TooLong => "too_long",
            FieldCode::ControlCharacter => "control_character",
            FieldCode::InvisibleCharacter => "invisible_character",
            FieldCode::UnknownStrength => "unknown_strength",
            FieldCode::UnknownStyle => "unknown_style",
            FieldCode::UnknownTarget => "unknown_target",
            FieldCode::UnknownKind => "unknown_kind",
            FieldCode::UnknownPack => "unknown_pack",
            FieldCode::NotAllowed => "not_allowed",
            FieldCode::TooMany => "too_many",
            FieldCode::Duplicate => "duplicate",
            FieldCode::InvalidAssetId => "invalid_asset_id",
            FieldCode::TooSmall => "too_small",
            FieldCode::TooLarge => "too_large",
            FieldCode::OutOfRange => "out_of_range",
            FieldCode::UnsupportedType => "unsupported_type",
            FieldCode::SettingsLocked => "settings_locked",
            FieldCode::AssetNotFound => "asset_not_found",
        }
    }
}

/// All field errors found in one input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldErrors(pub Vec<FieldError>);

impl FieldErrors {
    pub fn push(&mut self, field: impl Into<String>, code: FieldCode, message: impl Into<String>) {
        self.0.push(FieldError {
            field: field.into(),
            code,
            message: message.into(),
        });
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok(value)` when nothing was recorded.
    pub fn finish<T>(self, value: T) -> Result<T, FieldErrors> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl std::fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect();
        write!(f, "{}", parts.join("; "))
    }
}

impl std::error::Error for FieldErrors {}

/// Why a piece of text was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextError {
    Empty,
    TooLong {
        max: usize,
    },
    ControlCharacter,
    /// The first invisible character found (see [`is_invisible`]).
    InvisibleCharacter(char),
}

impl TextError {
    pub fn code(self) -> FieldCode {
        match self {
            TextError::Empty => FieldCode::Empty,
            TextError::TooLong { .. } => FieldCode::TooLong,
            TextError::ControlCharacter => FieldCode::ControlCharacter,
            TextError::InvisibleCharacter(_) => FieldCode::InvisibleCharacter,
        }
    }

    pub fn message(self) -> String {
        match self {
            TextError::Empty => "must not be empty".to_owned(),
            TextError::TooLong { max } => format!("must be at most {max} characters"),
            TextError::ControlCharacter => "must not contain control characters".to_owned(),
            TextError::InvisibleCharacter(c) => format!(
                "must not contain invisible characters (found U+{:04X})",
                u32::from(c)
            ),
        }
    }
}

/// User text: trimmed, 1..=max characters (not bytes), no control characters (newlines
/// included: every text field here is one line, and control characters are a classic way to
/// smuggle structure into prompts and logs) and no invisible characters.
///
/// Invisible characters are refused, not stripped: a refusal shows the person exactly what we
/// would have sent to the model (the text they see is the text we keep), the idempotency hash
/// stays a hash of what the client sent, and a client that pastes one learns why (the message
/// names the code point). Stripping would silently edit text whose meaning we cannot judge.
pub fn clean_text(raw: &str, max: usize) -> Result<String, TextError> {
    let text = raw.trim();
    if text.is_empty() {
        return Err(TextError::Empty);
    }
    if text.chars().count() > max {
        return Err(TextError::TooLong { max });
    }
    if text.chars().any(char::is_control) {
        return Err(TextError::ControlCharacter);
    }
    if let Some(c) = first_hidden(text) {
        return Err(TextError::InvisibleCharacter(c));
    }
    Ok(text.to_owned())
}

const ZWJ: char = '\u{200D}';
/// 🏴, the base of the subdivision flags (England, Scotland, Wales: UTS #51 tag sequences).
const BLACK_FLAG: char = '\u{1F3F4}';
const CANCEL_TAG: char = '\u{E007F}';
const VARIATION_SELECTOR_16: char = '\u{FE0F}';
/// The text presentation selector (VS15), VS16's pair in the same sequences.
const VARIATION_SELECTOR_15: char = '\u{FE0E}';

/// The first invisible character of `text` that is not part of an emoji as phones type it
/// (UTS #51): a zero-width joiner between two emoji (🐕‍🦺, 👩🏽‍💻, 👨‍👩‍👧) and the tag
/// characters of a subdivision flag (🏴 + 2–6 lowercase letters or digits as tags + the
/// cancel tag), and a presentation selector (VS15/VS16) right after a character that
/// `emoji-variation-sequences.txt` gives one (❤️, ☺️, 1️⃣). The same characters anywhere else
/// are still refused: a joiner beside a letter, digit or space, a tag outside a flag, a flag
/// without its cancel tag, a selector after a letter or after another selector.
fn first_hidden(text: &str) -> Option<char> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == BLACK_FLAG
            && let Some(len) = tag_sequence_len(&chars[i + 1..])
        {
            i += 1 + len;
            continue;
        }
        let sanctioned = match c {
            ZWJ => joins_two_emoji(&chars, i),
            VARIATION_SELECTOR_15 | VARIATION_SELECTOR_16 => i
                .checked_sub(1)
                .is_some_and(|p| takes_presentation_selector(chars[p])),
            _ => false,
        };
        if sanctioned {
            i += 1;
            continue;
        }
        if is_invisible(c) {
            return Some(c);
        }
        i += 1;
    }
    None
}

/// The length of a valid tag spec + cancel tag at the start of `rest`, if there is one.
fn tag_sequence_len(rest: &[char]) -> Option<usize> {
    let spec = rest
        .iter()
        .take_while(|&&c| matches!(c, '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}'))
        .count();
    ((2..=6).contains(&spec) && rest.get(spec) == Some(&CANCEL_TAG)).then_some(spec + 1)
}

/// Whether UTS #51 lists an emoji and a text presentation sequence for `base`.
fn takes_presentation_selector(base: char) -> bool {
    emoji_variation::BASES.binary_search(&base).is_ok()
}

/// Whether the joiner at `at` stands between the end of one emoji (an emoji, optionally with
/// VS16 or a skin tone after it) and the start of the next.
fn joins_two_emoji(chars: &[char], at: usize) -> bool {
    let before = at
        .checked_sub(1)
        .and_then(|i| chars.get(i))
        .copied()
        .filter(|&c| c != VARIATION_SELECTOR_16)
        .or_else(|| at.checked_sub(2).and_then(|i| chars.get(i)).copied());
    let after = chars.get(at + 1).copied();
    before.is_some_and(is_pictographic) && after.is_some_and(is_pictographic)
}

/// An emoji character that can join a ZWJ sequence: Emoji=Yes, outside ASCII (the keycap
/// bases `0-9 # *` are Emoji=Yes but never joined, and letting them join would hide joiners
/// in plain digits).
fn is_pictographic(c: char) -> bool {
    use unicode_properties::UnicodeEmoji;
    !c.is_ascii() && c != ZWJ && c.is_emoji_char()
}

/// Characters that render as nothing (or reorder what renders) and so can carry text to the
/// model that a person reviewing the request cannot see: every format character (Unicode
/// general category Cf, as of Unicode 15.1: soft hyphen, Arabic letter mark, Mongolian vowel
/// separator, zero-width space/joiners/marks, bidi embeddings, overrides and isolates, word
/// joiner and invisible operators, the byte-order mark, interlinear annotation, tag
/// characters and the other Cf blocks), the line and paragraph separators (every field is one
/// line), Hangul fillers (blank letters), and every variation selector (U+FE00–FE0F and the
/// supplement's 240: invisible, and enough of them to encode any byte). [`clean_text`] lets
/// the joiner, the tag characters and the two emoji presentation selectors (VS15/VS16)
/// through only inside emoji sequences ([`first_hidden`]); the ZWNJ/ZWJ some scripts use for
/// shaping and the other selectors (math symbol and CJK compatibility variants) stay refused:
/// a one-line description of what to edit does not need them.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}'                     // soft hyphen
        | '\u{0600}'..='\u{0605}'       // Arabic number signs (prepended marks)
        | '\u{061C}'                   // Arabic letter mark
        | '\u{06DD}' | '\u{070F}' | '\u{0890}'..='\u{0891}' | '\u{08E2}'
        | '\u{115F}'..='\u{1160}'       // Hangul choseong/jungseong fillers
        | '\u{180E}'                   // Mongolian vowel separator
        | '\u{200B}'..='\u{200F}'       // zero-width space, ZWNJ, ZWJ, LRM, RLM
        | '\u{2028}'..='\u{202E}'       // line/paragraph separators, bidi embeddings/overrides
        | '\u{2060}'..='\u{2064}'       // word joiner, invisible operators
        | '\u{2066}'..='\u{206F}'       // bidi isolates, deprecated format characters
        | '\u{3164}' | '\u{FFA0}'       // Hangul fillers
        | '\u{FE00}'..='\u{FE0F}'       // variation selectors (VS15/VS16: see first_hidden)
        | '\u{FEFF}'                   // zero-width no-break space (byte-order mark)
        | '\u{FFF9}'..='\u{FFFB}'       // interlinear annotation
        | '\u{110BD}' | '\u{110CD}'
        | '\u{13430}'..='\u{1343F}'     // Egyptian hieroglyph format controls
        | '\u{1BCA0}'..='\u{1BCA3}'     // shorthand format controls
        | '\u{1D173}'..='\u{1D17A}'     // musical symbol format controls
        | '\u{E0000}'..='\u{E007F}'     // tag characters
        | '\u{E0100}'..='\u{E01EF}'     // variation selectors supplement
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_field_code_is_written_as_its_wire_name() {
        for code in [
            FieldCode::Required,
            FieldCode::TooLong,
            FieldCode::SettingsLocked,
        ] {
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(serde_json::json!(code.as_str()))
            );
        }
    }

    #[test]
    fn clean_text_cases() {
        let cases: &[(&str, usize, Result<&str, TextError>, &str)] = &[
            ("  hello ", 10, Ok("hello"), "trims"),
            ("", 10, Err(TextError::Empty), "empty"),
            ("   ", 10, Err(TextError::Empty), "blank"),
            ("ééééé", 5, Ok("ééééé"), "counts characters, not bytes"),
            ("abcdef", 5, Err(TextError::TooLong { max: 5 }), "too long"),
            ("a\nb", 10, Err(TextError::ControlCharacter), "newline"),
            ("a\u{0007}b", 10, Err(TextError::ControlCharacter), "bell"),
            (
                "a\u{202E}b",
                10,
                Err(TextError::InvisibleCharacter('\u{202E}')),
                "bidi override",
            ),
            (
                "a\u{E0041}b",
                10,
                Err(TextError::InvisibleCharacter('\u{E0041}')),
                "tag character",
            ),
            (
                "a\u{0007}\u{200B}b",
                10,
                Err(TextError::ControlCharacter),
                "control before invisible",
            ),
            (
                "I ❤\u{FE0F} cats",
                20,
                Ok("I ❤\u{FE0F} cats"),
                "emoji variation selector",
            ),
        ];
        for (input, max, want, why) in cases {
            let got = clean_text(input, *max);
            assert_eq!(got.as_deref().map_err(|e| *e), *want, "{why}");
        }
    }

    /// Every range named in issue 14 and every other refused range, first, last and middle
    /// code point: refused with `invisible_character`, inside a word and at either end.
    #[test]
    fn each_invisible_range_is_refused() {
        let ranges: &[(u32, u32, &str)] = &[
            (0xE0000, 0xE007F, "tag characters"),
            (0x2060, 0x2064, "word joiner and invisible operators"),
            (0x00AD, 0x00AD, "soft hyphen"),
            (0x061C, 0x061C, "Arabic letter mark"),
            (0x180E, 0x180E, "Mongolian vowel separator"),
            (0xFFF9, 0xFFFB, "interlinear annotation"),
            (0x202A, 0x202E, "bidi embeddings and overrides"),
            (0x2066, 0x2069, "bidi isolates"),
            (0x200B, 0x200F, "zero-width characters and marks"),
            (0xFEFF, 0xFEFF, "byte-order mark"),
            (0x2028, 0x2029, "line and paragraph separators"),
            (0x206A, 0x206F, "deprecated format characters"),
            (0x0600, 0x0605, "Arabic number signs"),
            (0x115F, 0x1160, "Hangul fillers"),
            (0x3164, 0x3164, "Hangul filler"),
            (0xFFA0, 0xFFA0, "halfwidth Hangul filler"),
            (0x13430, 0x1343F, "Egyptian hieroglyph format controls"),
            (0x1BCA0, 0x1BCA3, "shorthand format controls"),
            (0x1D173, 0x1D17A, "musical symbol format controls"),
            (0xE0100, 0xE01EF, "variation selectors supplement"),
            (
                0xFE00,
                0xFE0F,
                "variation selectors, emoji ones after a letter",
            ),
        ];
        for &(first, last, why) in ranges {
            for cp in [first, first + (last - first) / 2, last] {
                let c = char::from_u32(cp).expect("a scalar value");
                // Line separators are white space: at either end they are trimmed away.
                let ends = !c.is_whitespace();
                let texts = [format!("a{c}b"), format!("{c}ab"), format!("ab{c}")];
                for text in texts.into_iter().take(if ends { 3 } else { 1 }) {
                    let got = clean_text(&text, 10);
                    assert_eq!(
                        got,
                        Err(TextError::InvisibleCharacter(c)),
                        "{why}: U+{cp:04X} in {text:?}"
                    );
                    assert_eq!(
                        got.map_err(|e| e.code().as_str()),
                        Err("invisible_character")
                    );
                }
            }
        }
    }

    /// What phones type: emoji ZWJ sequences (with skin tones and VS16) and subdivision flags.
    #[test]
    fn emoji_as_phones_type_them_are_kept() {
        for text in [
            "the dog on the right \u{1F415}\u{200D}\u{1F9BA}",
            "\u{1F469}\u{1F3FD}\u{200D}\u{1F4BB} at her desk",
            "family \u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}",
            "\u{2764}\u{FE0F}\u{200D}\u{1F525} heart on fire",
            "flag \u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F} of Scotland",
            "\u{1F3F3}\u{FE0F}\u{200D}\u{1F308} rainbow flag",
        ] {
            assert_eq!(clean_text(text, 80).as_deref(), Ok(text), "{text:?}");
        }
    }

    /// UTS #51: a presentation selector follows only a character `emoji-variation-sequences.txt`
    /// lists, once.
    #[test]
    fn a_presentation_selector_only_follows_a_character_that_takes_one() {
        let refused = |c| Err(TextError::InvisibleCharacter(c));
        let cases: &[(&str, Result<(), TextError>, &str)] = &[
            (
                "I \u{2665}\u{FE0F} cats",
                Ok(()),
                "♥️ heart suit, emoji style",
            ),
            ("smile \u{263A}\u{FE0F}", Ok(()), "☺️ smiling face"),
            ("\u{263A}\u{FE0E} as text", Ok(()), "☺︎ text style"),
            ("keycap 1\u{FE0F}\u{20E3}", Ok(()), "1️⃣ keycap sequence"),
            (
                "\u{1F441}\u{FE0F}\u{200D}\u{1F5E8}\u{FE0F} eye",
                Ok(()),
                "👁️‍🗨️ both halves",
            ),
            ("\u{1F6F3}\u{FE0F} ship", Ok(()), "the list's last base"),
            ("a\u{FE0F}", refused('\u{FE0F}'), "after a plain letter"),
            ("a\u{FE0F}b", refused('\u{FE0F}'), "inside a word"),
            ("\u{FE0F}cat", refused('\u{FE0F}'), "at the start"),
            ("\u{2665}\u{FE0F}\u{FE0F}", refused('\u{FE0F}'), "twice"),
            (
                "\u{1F600}\u{FE0F}",
                refused('\u{FE0F}'),
                "😀 has no text style to switch from (🐕 has one: it is listed)",
            ),
            (
                "x\u{FE0E}y",
                refused('\u{FE0E}'),
                "text style after a letter",
            ),
            (
                "\u{2665}\u{FE00}",
                refused('\u{FE00}'),
                "a selector that is not VS15/VS16",
            ),
        ];
        for (text, want, why) in cases {
            let got = clean_text(text, 40);
            match want {
                Ok(()) => assert_eq!(got.as_deref(), Ok(*text), "{why}"),
                Err(e) => assert_eq!(got, Err(*e), "{why}"),
            }
        }
    }

    /// The same characters outside an emoji sequence are still hidden text.
    #[test]
    fn joiners_and_tags_outside_emoji_are_refused() {
        let zwj = TextError::InvisibleCharacter('\u{200D}');
        for (text, want) in [
            ("a\u{200D}b", zwj),
            ("\u{1F415}\u{200D}b", zwj),
            ("a\u{200D}\u{1F415}", zwj),
            ("1\u{200D}2", zwj),
            ("\u{1F415}\u{200D} \u{1F9BA}", zwj),
            ("\u{1F415}\u{200D}", zwj),
            ("\u{1F415}\u{200D}\u{200D}\u{1F9BA}", zwj),
            (
                "cat\u{E0067}\u{E0062}\u{E007F}",
                TextError::InvisibleCharacter('\u{E0067}'),
            ),
            (
                "\u{1F3F4}\u{E0067}\u{E0062}",
                TextError::InvisibleCharacter('\u{E0067}'),
            ),
            (
                "\u{1F3F4}\u{E0067}\u{E007F}",
                TextError::InvisibleCharacter('\u{E0067}'),
            ),
            (
                "\u{1F3F4}\u{E0047}\u{E0042}\u{E007F}",
                TextError::InvisibleCharacter('\u{E0047}'),
            ),
            (
                "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E0061}\u{E0062}\u{E007F}",
                TextError::InvisibleCharacter('\u{E0067}'),
            ),
        ] {
            assert_eq!(clean_text(text, 80), Err(want), "{text:?}");
        }
    }

    #[test]
    fn neighbours_of_the_invisible_ranges_are_kept() {
        for cp in [
            0x00AC, 0x00AE, 0x2027, 0x2030, 0x2065, 0xFDFF, 0xFE10, 0xFEFE, 0xFFFC, 0xE0080,
        ] {
            let c = char::from_u32(cp).expect("a scalar value");
            let text = format!("a{c}b");
            assert_eq!(clean_text(&text, 10), Ok(text.clone()), "U+{cp:04X}");
        }
    }
}
