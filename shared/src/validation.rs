//! Field errors collected while parsing input into domain values. Every limit in the system
//! is enforced while building a typed value, so a value that exists is valid.

use serde::Serialize;

/// One problem with one field of the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FieldError {
    /// JSON path of the field, e.g. `locks[1]`.
    pub field: String,
    /// Stable machine code, e.g. `too_long`, `unknown_style`.
    pub code: &'static str,
    /// A sentence for a person.
    pub message: String,
}

/// All field errors found in one input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldErrors(pub Vec<FieldError>);

impl FieldErrors {
    pub fn push(
        &mut self,
        field: impl Into<String>,
        code: &'static str,
        message: impl Into<String>,
    ) {
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
    TooLong { max: usize },
    ControlCharacter,
}

impl TextError {
    pub fn code(self) -> &'static str {
        match self {
            TextError::Empty => "empty",
            TextError::TooLong { .. } => "too_long",
            TextError::ControlCharacter => "control_character",
        }
    }

    pub fn message(self) -> String {
        match self {
            TextError::Empty => "must not be empty".to_owned(),
            TextError::TooLong { max } => format!("must be at most {max} characters"),
            TextError::ControlCharacter => "must not contain control characters".to_owned(),
        }
    }
}

/// User text: trimmed, 1..=max characters (not bytes), no control characters (newlines
/// included: every text field here is one line, and control characters are a classic way to
/// smuggle structure into prompts and logs).
pub fn clean_text(raw: &str, max: usize) -> Result<String, TextError> {
    let text = raw.trim();
    if text.is_empty() {
        return Err(TextError::Empty);
    }
    if text.chars().count() > max {
        return Err(TextError::TooLong { max });
    }
    if text
        .chars()
        .any(|c| c.is_control() || is_invisible_format(c))
    {
        return Err(TextError::ControlCharacter);
    }
    Ok(text.to_owned())
}

/// Bidirectional overrides and zero-width characters: invisible, and used to hide text.
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

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
                Err(TextError::ControlCharacter),
                "bidi override",
            ),
        ];
        for (input, max, want, why) in cases {
            let got = clean_text(input, *max);
            assert_eq!(got.as_deref().map_err(|e| *e), *want, "{why}");
        }
    }
}
