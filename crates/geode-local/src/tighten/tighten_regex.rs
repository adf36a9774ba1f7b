//! Bounded regular expressions for [`super`]: a `pattern` (or a `patternProperties` key
//! pattern) narrowed to a finite length, so the model cannot write an endless string or key
//! that the pattern allows.
//!
//! [`bounded`] rewrites a pattern `P` into `^(?:P')$` where `P'` is `P` without its leading `^`
//! and trailing `$`, every unbounded repetition capped (`*` → `{0,N}`, `+` → `{1,N}`, `{m,}` →
//! `{m,m+N}`). Each string the result matches is a match of `P` (a capped repetition matches a
//! subset, and a whole-string match contains a match), and the result matches something
//! whenever `P` does (the shortest repetition counts are kept). A pattern that does not parse
//! as a Rust regex, or keeps an assertion (`^`, `$`, `\b`) anywhere but at its ends, is left
//! alone (`None`).

use regex_syntax::ast::parse::Parser;
use regex_syntax::ast::print::Printer;
use regex_syntax::ast::{AssertionKind, Ast, RepetitionKind, RepetitionRange};

/// The pattern with its length bounded (see the module docs); `None` when it is not rewritten
/// (unparseable, an inner assertion, or already anchored and bounded).
pub(crate) fn bounded(pattern: &str, repeat_cap: u32) -> Option<String> {
    let mut ast = Parser::new().parse(pattern).ok()?;
    let (start, end) = strip_anchors(&mut ast);
    if has_assertion(&ast) {
        return None;
    }
    let capped = cap_repetitions(&mut ast, repeat_cap);
    if start && end && !capped {
        return None;
    }
    let mut core = String::new();
    Printer::new().print(&ast, &mut core).ok()?;
    Some(format!("^(?:{core})$"))
}

/// The most characters a string matching `pattern` can have, when the pattern is anchored at
/// both ends (an unanchored pattern matches inside any longer string); `None` when unbounded,
/// unanchored or not parseable.
pub(crate) fn max_len(pattern: &str) -> Option<u64> {
    let mut ast = Parser::new().parse(pattern).ok()?;
    let (start, end) = strip_anchors(&mut ast);
    if !(start && end) || has_assertion(&ast) {
        return None;
    }
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    hir.properties()
        .maximum_len()
        .and_then(|n| u64::try_from(n).ok())
}

/// Removes a leading `^`/`\A` and a trailing `$`/`\z` of a top-level concatenation (or a lone
/// anchor); returns which were there.
fn strip_anchors(ast: &mut Ast) -> (bool, bool) {
    let is = |a: &Ast, kinds: &[AssertionKind]| matches!(a, Ast::Assertion(x) if kinds.contains(&x.kind));
    let starts = [AssertionKind::StartLine, AssertionKind::StartText];
    let ends = [AssertionKind::EndLine, AssertionKind::EndText];
    match ast {
        Ast::Concat(concat) => {
            let start = concat.asts.first().is_some_and(|a| is(a, &starts));
            if start {
                concat.asts.remove(0);
            }
            let end = concat.asts.last().is_some_and(|a| is(a, &ends));
            if end {
                concat.asts.pop();
            }
            (start, end)
        }
        other if is(other, &starts) || is(other, &ends) => {
            let start = is(other, &starts);
            *other = Ast::empty(other.span().to_owned());
            (start, !start)
        }
        _ => (false, false),
    }
}

/// True when an assertion is left anywhere in the pattern.
fn has_assertion(ast: &Ast) -> bool {
    match ast {
        Ast::Assertion(_) => true,
        Ast::Repetition(r) => has_assertion(&r.ast),
        Ast::Group(g) => has_assertion(&g.ast),
        Ast::Concat(c) => c.asts.iter().any(has_assertion),
        Ast::Alternation(a) => a.asts.iter().any(has_assertion),
        _ => false,
    }
}

/// Caps every unbounded repetition at `cap` more than its minimum; true when one was capped.
fn cap_repetitions(ast: &mut Ast, cap: u32) -> bool {
    match ast {
        Ast::Repetition(r) => {
            let inner = cap_repetitions(&mut r.ast, cap);
            let bounded = match r.op.kind {
                RepetitionKind::ZeroOrMore => Some(RepetitionRange::Bounded(0, cap)),
                RepetitionKind::OneOrMore => Some(RepetitionRange::Bounded(1, cap)),
                RepetitionKind::Range(RepetitionRange::AtLeast(m)) => {
                    Some(RepetitionRange::Bounded(m, m.saturating_add(cap)))
                }
                _ => None,
            };
            if let Some(range) = &bounded {
                r.op.kind = RepetitionKind::Range(range.clone());
            }
            inner || bounded.is_some()
        }
        Ast::Group(g) => cap_repetitions(&mut g.ast, cap),
        Ast::Concat(c) => cap_all(&mut c.asts, cap),
        Ast::Alternation(a) => cap_all(&mut a.asts, cap),
        _ => false,
    }
}

/// Caps every part (all of them, not only up to the first capped).
fn cap_all(asts: &mut [Ast], cap: u32) -> bool {
    let mut capped = false;
    for ast in asts {
        capped |= cap_repetitions(ast, cap);
    }
    capped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetitions_are_capped_and_the_pattern_anchored() {
        assert_eq!(
            bounded("^[a-z]+(-[a-z]*)?$", 8).as_deref(),
            Some("^(?:[a-z]{1,8}(-[a-z]{0,8})?)$")
        );
        assert_eq!(bounded("^pkg:", 8).as_deref(), Some("^(?:pkg:)$"));
        assert_eq!(bounded("\\d{2,}x", 8).as_deref(), Some("^(?:\\d{2,10}x)$"));
        // Already anchored and bounded: nothing to do.
        assert_eq!(bounded("^[0-9]{5}$", 8), None);
        // An inner anchor, a word boundary, or a pattern that does not parse: left alone.
        assert_eq!(bounded("^a$|^b$", 8), None);
        assert_eq!(bounded("\\bword", 8), None);
        assert_eq!(bounded("(?<=a)b", 8), None);
    }

    #[test]
    fn the_longest_match_of_an_anchored_bounded_pattern() {
        assert_eq!(max_len("^[a-z]{1,8}(-[a-z]{0,8})?$"), Some(17));
        assert_eq!(max_len(&bounded("^[a-z]+$", 8).unwrap()), Some(8));
        assert_eq!(max_len("^[a-z]+$"), None);
        assert_eq!(max_len("[a-z]{2}"), None);
        assert_eq!(max_len("^a$|^bb$"), None);
    }

    #[test]
    fn bounded_patterns_match_only_what_the_original_matches() {
        for (pattern, samples) in [
            (
                "^[a-zA-Z0-9_]*$",
                &["", "abc", "a b", "x".repeat(40).as_str()][..],
            ),
            ("pkg:", &["pkg:", "xpkg:y", "pk"][..]),
            (
                "^(ab)+c?$",
                &["ab", "ababc", "abab".repeat(20).as_str(), "c"][..],
            ),
        ] {
            let original = regex::Regex::new(pattern).unwrap();
            let narrowed = regex::Regex::new(&bounded(pattern, 8).unwrap()).unwrap();
            for s in samples {
                if narrowed.is_match(s) {
                    assert!(
                        original.is_match(s),
                        "{s:?} matches only the bounded {pattern}"
                    );
                }
            }
            assert!(
                !narrowed.is_match(&"a".repeat(100)),
                "{pattern} still unbounded"
            );
        }
    }
}
