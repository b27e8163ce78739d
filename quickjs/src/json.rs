//! The JSON text QuickJS's `JSON.stringify` gives, made fit for `serde_json`: lone UTF-16
//! surrogates, which JSON text escapes but `serde_json` (and UTF-8) cannot hold, become U+FFFD,
//! and nesting past what `serde_json` parses is named before it fails. Also the size a console
//! line counts for.

use std::borrow::Cow;

/// The deepest nesting of arrays and objects `serde_json` parses (its recursion limit of 128
/// counts the level that fails).
pub(crate) const MAX_DEPTH: usize = 127;

/// `json` with every escaped lone surrogate (`\ud800`, a high one not followed by an escaped low
/// one, or a low one alone) replaced by `\ufffd`, the replacement character. `JSON.stringify`
/// escapes lone surrogates and only them (a pair stays two raw code units, which are UTF-8 by
/// then), so the text is otherwise left as it is.
pub(crate) fn well_formed(json: &str) -> Cow<'_, str> {
    let bytes = json.as_bytes();
    let mut out: Option<String> = None;
    let mut kept = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(unit) = escaped_unit(bytes, i) else {
            // Any other escape: skip the escaped character (it may be a backslash).
            i += 2;
            continue;
        };
        let lone = match unit {
            0xD800..=0xDBFF => match escaped_unit(bytes, i + 6) {
                Some(0xDC00..=0xDFFF) => {
                    i += 12;
                    continue;
                }
                _ => true,
            },
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            let text = out.get_or_insert_with(|| String::with_capacity(json.len()));
            text.push_str(&json[kept..i]);
            text.push_str("\\ufffd");
            kept = i + 6;
        }
        i += 6;
    }
    match out {
        None => Cow::Borrowed(json),
        Some(mut text) => {
            text.push_str(&json[kept..]);
            Cow::Owned(text)
        }
    }
}

/// The code unit of a `\uXXXX` escape starting at `at`, if there is one.
fn escaped_unit(bytes: &[u8], at: usize) -> Option<u32> {
    let escape = bytes.get(at..at + 6)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    escape[2..].iter().try_fold(0, |unit, &digit| {
        let value = char::from(digit).to_digit(16)?;
        Some(unit * 16 + value)
    })
}

/// Whether `json` nests arrays and objects deeper than `max` levels (strings skipped).
pub(crate) fn deeper_than(json: &str, max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in json.as_bytes() {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The bytes a console line counts for against
/// [`ScriptLimits::console_bytes`](toolcat::code_mode::ScriptLimits::console_bytes): its length
/// as a JSON string's content (escapes included), plus 3 for the quotes and the separator, and
/// never less than 4, so even an empty line costs something.
pub(crate) fn console_cost(line: &str) -> usize {
    let escaped: usize = line
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
            c if c < ' ' => 6,
            c => c.len_utf8(),
        })
        .sum();
    (escaped + 3).max(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_the_replacement_character() {
        assert_eq!(well_formed(r#""\ud800""#), r#""\ufffd""#);
        assert_eq!(well_formed(r#"{"\udc00":1}"#), r#"{"\ufffd":1}"#);
        assert_eq!(well_formed(r#""a\ud800b\udfffc""#), r#""a\ufffdb\ufffdc""#);
        // A pair, an escaped backslash before `u`, and other escapes stay.
        assert_eq!(well_formed(r#""\ud83d\ude00""#), r#""\ud83d\ude00""#);
        assert_eq!(well_formed(r#""\\ud800""#), r#""\\ud800""#);
        assert_eq!(well_formed(r#""\u0041\n\"é""#), r#""\u0041\n\"é""#);
        // A high surrogate before another high one, and at the very end.
        assert_eq!(well_formed(r#""\ud800\ud800""#), r#""\ufffd\ufffd""#);
        assert_eq!(well_formed(r"\ud800"), r"\ufffd");
        for text in [r#""\ud800""#, r#"{"\ud800":"\udfff"}"#] {
            let fixed = well_formed(text);
            assert!(
                serde_json::from_str::<serde_json::Value>(&fixed).is_ok(),
                "{fixed}"
            );
        }
    }

    #[test]
    fn depth_counts_arrays_and_objects_outside_strings() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(!deeper_than(&nested(MAX_DEPTH), MAX_DEPTH));
        assert!(deeper_than(&nested(MAX_DEPTH + 1), MAX_DEPTH));
        assert!(!deeper_than(r#"["[[[[", "\"[[["]"#, 1));
        assert!(deeper_than(r#"{"a":[{}]}"#, 2));
        // The limit is serde_json's own.
        assert!(serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH)).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH + 1)).is_err());
    }

    #[test]
    fn a_console_line_costs_its_escaped_length_and_overhead() {
        assert_eq!(console_cost(""), 4);
        assert_eq!(console_cost("a"), 4);
        assert_eq!(console_cost("ab"), 5);
        assert_eq!(console_cost("a\"b\n"), 9);
        assert_eq!(console_cost("\u{1}"), 9);
        assert_eq!(console_cost("é"), 5);
        assert_eq!(
            console_cost("x\u{1}\"é"),
            serde_json::to_string("x\u{1}\"é").unwrap().len() + 1
        );
    }
}
