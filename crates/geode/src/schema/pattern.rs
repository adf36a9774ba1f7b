//! `pattern` and `patternProperties` as JSON Schema defines them: ECMA-262 regular expressions
//! (without the `u` flag, Annex B included), rewritten into the syntax Rust's regex engines read.
//!
//! Real schemas use ECMA forms that Rust's `regex` syntax reads differently or refuses, and the
//! validator's own translation leaves some of them out. [`to_rust_syntax`] rewrites each such
//! form into an equivalent one, so no valid ECMA pattern is refused:
//!
//! | ECMA form | meaning in ECMA | written for Rust as |
//! |---|---|---|
//! | `[` inside a class (`[[a-z]]`) | a literal `[` | `\[` |
//! | `&`, `~`, `-` doubled inside a class (`[a&&b]`) | literal characters | escaped (Rust reads class set operators) |
//! | `]` or `}` outside a class, `{` that starts no quantifier (`\{d}`, `a{,3}`, `{x}`) | literal characters | escaped |
//! | an identity escape of a letter ECMA does not define (`\a`, `\e`, `\z`, `\A`, `\Q`) | the letter itself | the letter (Rust reads most as assertions or classes) |
//! | `\b` inside a class | backspace | `\x08` |
//! | `\0` not followed by a digit | NUL | `\x00` |
//! | `\x` or `\u` without their hex digits, `\c` without a letter | `x`, `u`, `\c` | the literal text |
//! | `[]`, `[^]` | no character, any character | [`EMPTY_CLASS`], `[\s\S]` |
//!
//! Unicode property escapes (`\p{Letter}`, `\P{L}`) are read as in ECMA's Unicode mode, which JSON
//! Schema asks for. Everything else passes through unchanged: `\d`, `\w`, `\s`, `\cX`, `\xHH`, `\uHHHH`,
//! backreferences, groups and lookaround are read by the validator's engine (fancy-regex, with
//! the validator's own translation of the classes' ECMA meaning). A pattern that is not valid
//! ECMA either (an unclosed group) is left as written, and the validator says why.

use std::borrow::Cow;

/// A class that matches no character, which ECMA writes `[]`.
pub const EMPTY_CLASS: &str = r"[^\s\S]";

/// Letters that ECMA defines after a backslash (outside the `u` flag); any other letter after a
/// backslash is the letter itself.
const ECMA_ESCAPES: &str = "dDwWsSbBfnrtvcxuk";

/// `pattern` in the syntax Rust's regex engines read, borrowed when it needs no rewrite.
///
/// ```
/// use geode::schema::pattern::to_rust_syntax;
/// assert_eq!(to_rust_syntax("^[a-z]+$"), "^[a-z]+$");
/// assert_eq!(to_rust_syntax(r"^PUBMED:\{d}"), r"^PUBMED:\{d\}");
/// assert_eq!(to_rust_syntax("^[[a-z]*]*$"), r"^[\[a-z]*\]*$");
/// ```
pub fn to_rust_syntax(pattern: &str) -> Cow<'_, str> {
    let out = rewrite(pattern);
    if out == pattern {
        Cow::Borrowed(pattern)
    } else {
        Cow::Owned(out)
    }
}

/// The rewrite of the module table, one pass over the characters.
fn rewrite(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    // Whether the last thing written outside a class can take a quantifier.
    let mut quantifiable = false;
    while i < chars.len() {
        let c = chars[i];
        if in_class {
            i = class_char(&chars, i, &mut out, &mut in_class);
            continue;
        }
        match c {
            '\\' => {
                i = escape(&chars, i, false, &mut out);
                quantifiable = true;
            }
            '[' => {
                match (chars.get(i + 1), chars.get(i + 2)) {
                    (Some(']'), _) => {
                        out.push_str(EMPTY_CLASS);
                        i += 2;
                    }
                    (Some('^'), Some(']')) => {
                        out.push_str(r"[\s\S]");
                        i += 3;
                    }
                    (Some('^'), _) => {
                        out.push_str("[^");
                        in_class = true;
                        i += 2;
                    }
                    _ => {
                        out.push('[');
                        in_class = true;
                        i += 1;
                    }
                }
                quantifiable = true;
            }
            ']' | '}' => {
                out.push('\\');
                out.push(c);
                i += 1;
                quantifiable = true;
            }
            '{' => {
                match quantifier_len(&chars[i..]) {
                    Some(len) if quantifiable => {
                        out.extend(&chars[i..i + len]);
                        i += len;
                    }
                    _ => {
                        out.push_str(r"\{");
                        i += 1;
                    }
                }
                quantifiable = false;
            }
            '(' => {
                out.push(c);
                i += 1;
                quantifiable = false;
            }
            '|' | '^' => {
                out.push(c);
                i += 1;
                quantifiable = false;
            }
            '*' | '+' | '?' => {
                out.push(c);
                i += 1;
                // A lazy `?` follows a quantifier; nothing else may.
                quantifiable = false;
            }
            _ => {
                out.push(c);
                i += 1;
                quantifiable = true;
            }
        }
    }
    out
}

/// Writes the class character at `i` (the class is open); returns the next index.
fn class_char(chars: &[char], i: usize, out: &mut String, in_class: &mut bool) -> usize {
    match chars[i] {
        '\\' => escape(chars, i, true, out),
        ']' => {
            out.push(']');
            *in_class = false;
            i + 1
        }
        '[' => {
            out.push_str(r"\[");
            i + 1
        }
        c @ ('&' | '~') => {
            out.push('\\');
            out.push(c);
            i + 1
        }
        '-' if chars.get(i + 1) == Some(&'-') => {
            out.push_str(r"\-");
            i + 1
        }
        c => {
            out.push(c);
            i + 1
        }
    }
}

/// Writes the escape starting at the backslash `i`; returns the next index.
fn escape(chars: &[char], i: usize, in_class: bool, out: &mut String) -> usize {
    let Some(&next) = chars.get(i + 1) else {
        // A trailing backslash is not ECMA; left for the validator to refuse.
        out.push('\\');
        return i + 1;
    };
    let hex_run = |from: usize, n: usize| {
        chars.len() >= from + n && chars[from..from + n].iter().all(char::is_ascii_hexdigit)
    };
    match next {
        'b' if in_class => {
            out.push_str(r"\x08");
            i + 2
        }
        '0' if !chars.get(i + 2).is_some_and(char::is_ascii_digit) => {
            out.push_str(r"\x00");
            i + 2
        }
        'x' if !hex_run(i + 2, 2) => {
            out.push('x');
            i + 2
        }
        'u' if !hex_run(i + 2, 4) => {
            out.push('u');
            i + 2
        }
        'c' if !chars.get(i + 2).is_some_and(char::is_ascii_alphabetic) => {
            out.push_str(r"\\c");
            i + 2
        }
        // A Unicode property (`\p{Letter}`): JSON Schema reads patterns in Unicode mode here.
        'p' | 'P' if chars.get(i + 2) == Some(&'{') => {
            let end = chars[i + 2..]
                .iter()
                .position(|c| *c == '}')
                .map_or(chars.len(), |p| i + 3 + p);
            out.extend(&chars[i..end]);
            end
        }
        'k' if chars.get(i + 2) != Some(&'<') => {
            out.push('k');
            i + 2
        }
        c if c.is_ascii_alphabetic() && !ECMA_ESCAPES.contains(c) => {
            out.push(c);
            i + 2
        }
        c if c.is_alphanumeric() || c.is_ascii_punctuation() || c == ' ' => {
            // Defined escapes, backreferences and escaped punctuation read the same in Rust;
            // other identity escapes are written as the character, escaped when Rust needs it.
            if c.is_alphanumeric() || is_rust_escapable(c) {
                out.push('\\');
            }
            out.push(c);
            i + 2
        }
        c => {
            // An identity escape of a character Rust does not allow escaping (`\é`, `\ `).
            out.push(c);
            i + 2
        }
    }
}

/// Characters Rust's regex syntax allows after a backslash as themselves.
fn is_rust_escapable(c: char) -> bool {
    regex_syntax::is_escapeable_character(c)
}

/// The length of the quantifier `{n}`, `{n,}` or `{n,m}` at the start of `chars`, if it is one.
fn quantifier_len(chars: &[char]) -> Option<usize> {
    let mut i = 1;
    let digits = |i: &mut usize| {
        let start = *i;
        while chars.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if !digits(&mut i) {
        return None;
    }
    if chars.get(i) == Some(&',') {
        i += 1;
        digits(&mut i);
    }
    (chars.get(i) == Some(&'}')).then_some(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (ECMA pattern, text, whether ECMA matches it) — each checked through the validator.
    const CASES: &[(&str, &str, bool)] = &[
        (r"^PUBMED:\{d}", "PUBMED:{d}", true),
        (r"^PUBMED:\{d}", "PUBMED:1", false),
        ("^[[a-z]*[-]?[a-z]*]*$", "[ab-c]]", true),
        ("^[[a-z]*[-]?[a-z]*]*$", "AB", false),
        (r"^\$(\.[a-z]+|\[[0-9]+\])*$", "$.a[0].b", true),
        ("^a{,3}$", "a{,3}", true),
        ("^{x}$", "{x}", true),
        ("^x{2}$", "xx", true),
        ("^x{2}$", "x{2}", false),
        (r"^\a\e\z$", "aez", true),
        (r"^[\b]$", "\u{8}", true),
        (r"^\0$", "\0", true),
        (r"^\x4$", "x4", true),
        (r"^\u12$", "u12", true),
        (r"^\u0041$", "A", true),
        ("^a[]b$", "ab", false),
        ("^a[^]b$", "a\nb", true),
        ("^[a&&b]+$", "&&ab", true),
        ("^[a--b]+$", "a-b", true),
        (r"^\d{3}-\w+$", "123-ab_c", true),
        (r"^(?=.*\d)[a-z\d]{4}$", "ab1c", true),
        (r"^(a)\1$", "aa", true),
        (r"^\p{L}$", "é", true),
        (r"^\p{Letter}+$", "Hello", true),
        (r"^\P{L}$", "1", true),
        (r"^\p$", "p", true),
        (r"^[A-Fa-f\d]{2}$", "a9", true),
        (r"^\[\*]$", "[*]", true),
    ];

    #[test]
    fn every_case_compiles_and_matches_as_ecma_says() {
        use crate::schema::ResponseSchema;
        use crate::schema::validate::CompiledSchema;
        for (pattern, text, matches) in CASES {
            let schema = serde_json::json!({"type": "string", "pattern": pattern});
            let compiled = CompiledSchema::compile(&ResponseSchema::from_value(schema).unwrap())
                .unwrap_or_else(|e| panic!("{pattern}: {e}"));
            assert_eq!(
                compiled.is_valid(&serde_json::json!(text)),
                *matches,
                "{pattern} on {text:?} (written {})",
                to_rust_syntax(pattern)
            );
        }
    }

    #[test]
    fn pattern_property_names_are_rewritten_at_every_depth() {
        use crate::schema::ResponseSchema;
        use crate::schema::validate::CompiledSchema;
        let schema = serde_json::json!({"patternProperties": {"^[[a]$": {
            "patternProperties": {"^x{,2}$": {"type": "integer"}},
            "propertyNames": {"pattern": "^x{,2}$"}
        }}});
        let compiled = CompiledSchema::compile(&ResponseSchema::from_value(schema).unwrap())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(compiled.is_valid(&serde_json::json!({"[": {"x{,2}": 1}})));
        assert!(!compiled.is_valid(&serde_json::json!({"[": {"x{,2}": "s"}})));
        assert!(!compiled.is_valid(&serde_json::json!({"[": {"xx": 1}})));
    }

    #[test]
    fn patterns_rust_reads_alike_are_borrowed() {
        for p in [r"^[a-z0-9_]+$", r"^\d{4}-\d{2}$", r"(?i)^x|y$", r"^[^\]]*$"] {
            assert!(matches!(to_rust_syntax(p), Cow::Borrowed(_)), "{p}");
        }
    }

    #[test]
    fn a_quantifier_needs_something_to_repeat() {
        assert_eq!(to_rust_syntax("a{2}"), "a{2}");
        assert_eq!(to_rust_syntax("(a){2,}"), "(a){2,}");
        assert_eq!(to_rust_syntax("^{2}"), r"^\{2\}");
        assert_eq!(to_rust_syntax("{2}"), r"\{2\}");
    }
}
