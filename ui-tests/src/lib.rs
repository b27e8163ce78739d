//! The trybuild cases of `#[tool]` and of the generated glue are in `tests/ui/`,
//! driven by `tests/ui.rs`. They live in a crate of their own so that trybuild, which compiles
//! the cases against this crate's dependencies, builds only the quick start's dependency tree
//! rather than the CLI's.
//!
//! The library holds the one text helper of the text-level tests (here and in the CLI crate's
//! `tests/layout.rs`): [`code_only`].
#![forbid(unsafe_code)]

/// `text` with comments and the contents of string and character literals blanked out (line
/// breaks kept), so a text-level check sees code only: descriptions and docs may well mention what
/// it looks for. Lifetimes (`'a`) are kept; raw strings are read as plain ones.
pub fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue; // the line break itself is kept
            }
            '"' => {
                out.push('"');
                i += 1;
                while i < chars.len() {
                    match chars[i] {
                        '\\' => i += 1,
                        '"' => break,
                        '\n' => out.push('\n'),
                        _ => {}
                    }
                    i += 1;
                }
                out.push('"');
            }
            // `'x'` and `'\n'`-style character literals; a lone `'` starts a lifetime.
            '\'' if chars.get(i + 1) == Some(&'\\') => {
                out.push_str("' '");
                i += 3; // past the quote, the backslash and the escaped character
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '\'' if chars.get(i + 2) == Some(&'\'') => {
                out.push_str("' '");
                i += 2;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::code_only;

    #[test]
    fn code_only_blanks_comments_and_strings() {
        let text = "// toolcat\nlet a = \"use toolcat::x \\\" still\"; // crate\nb";
        assert_eq!(code_only(text), "\nlet a = \"\"; \nb");
        let text = "match c { '\"' => x, '\\'' => y, _ => f::<'a>() } // \"";
        assert_eq!(
            code_only(text),
            "match c { ' ' => x, ' ' => y, _ => f::<'a>() } "
        );
    }
}
