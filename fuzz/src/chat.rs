//! The Chat Completions wire family's reply reader (`geode::llm::wire::chat`).

use super::check::{one_line, same};
use super::responses::check_response;
use geode::llm::wire::chat::{ParseError, parse_response, parse_value};

/// Parses `data` as a reply body (invalid UTF-8 replaced).
///
/// Invariants: deterministic; a body that is JSON gives what [`parse_value`] gives on its value
/// (the HTTP transport's path); only a body cut short is `Truncated`; the adapter error is one
/// line; tool inputs are objects.
pub fn run(data: &[u8]) {
    let body = String::from_utf8_lossy(data);
    let parsed = parse_response(&body);
    same(&parsed, &parse_response(&body), "chat::parse_response");
    match serde_json::from_str(&body) {
        Ok(value) => assert_eq!(parse_value(value), parsed, "parse_value differs"),
        Err(e) => assert_eq!(
            e.is_eof(),
            matches!(parsed, Err(ParseError::Truncated { .. })),
            "{parsed:?}"
        ),
    }
    match parsed {
        Ok(resp) => check_response(&resp),
        Err(e) => {
            one_line(&geode::llm::wire::chat::adapter_error(e.clone(), "fuzz"));
            let _ = e.to_string();
        }
    }
}
