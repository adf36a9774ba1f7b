//! [`Constraint`]: what the local engine may emit, compiled by llguidance into a token [`Matcher`].
//!
//! Contract: a constraint is either compiled into a working matcher or refused with
//! [`LocalError::Constraint`] carrying llguidance's reason. There is no fall-back to unconstrained
//! decoding (llama-cpp-2's own llguidance sampler would fail open: in 0.1.160 it ignores
//! matcher errors and decodes unconstrained).
//!
//! * JSON Schema: compiled from the schema narrowed for decoding by [`crate::tighten`] (objects
//!   closed where the schema leaves them open, compact whitespace with the model's own `", "` and
//!   `": "` spacing, strings, patterns, lists and map keys bounded; keywords llguidance cannot
//!   compile left to validation), each named by [`Constraint::decoding_transforms`]. Fully compact separators (`","`, `":"`) pushed SmolLM2
//!   off its usual spacing and made free strings loop in our tests, so they are not used. A caller
//!   may set llguidance's options in the schema's `x-guidance`; whitespace set there is kept.
//! * Choice: a Lark grammar `start: "a" | "b" | ...` whose literals are JSON strings (llguidance's
//!   Lark string syntax), so the whole answer is exactly one of the strings, unquoted.
//! * Regex: llguidance's regex, matched against the whole answer.
//! * Grammar: a Lark grammar in llguidance's dialect.
//! * Tools: a call to one of the caller's tools, or (unless one is required) the answer, as a
//!   Lark grammar embedding both schemas ([`crate::tool_call`]). Tools beside a choice, regex
//!   or grammar are refused: the answer then has no JSON or free-text form to offer beside a call.

use crate::error::LocalError;
use crate::tighten::tighten_within;
use crate::tool_call::{Offer, call_rule};
use geode::llm::request::AdapterCallRequest;
use geode::schema::{ResponseSchema, TextConstraint};
use geode::vocab::Transform;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use serde_json::Value;

/// A constraint on the generated text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Constraint {
    /// Unconstrained decoding.
    None,
    /// The text is a JSON document matching this schema.
    JsonSchema(ResponseSchema),
    /// The text is exactly one of these strings.
    Choice(Vec<String>),
    /// The whole text matches this regular expression.
    Regex(String),
    /// The text derives from this Lark grammar (llguidance dialect).
    Grammar(String),
    /// A call to one of the offered tools, or the answer under `answer` (`None` or
    /// `JsonSchema`) when no call is required.
    Tools {
        /// The tools, and whether a call is required.
        offer: Offer,
        /// The answer's constraint when the model does not call.
        answer: Box<Constraint>,
    },
}

impl Constraint {
    /// The constraint carried by a request: its `response_schema` or its `text_constraint`.
    /// Both at once cannot be enforced together and are refused.
    pub fn from_request(req: &AdapterCallRequest) -> Result<Self, LocalError> {
        let answer = Self::answer(req)?;
        let Some(offer) = Offer::new(&req.tools, &req.tool_choice)? else {
            return Ok(answer);
        };
        if !matches!(answer, Self::None | Self::JsonSchema(_)) {
            return Err(LocalError::Constraint {
                kind: "tools",
                reason: format!(
                    "tools and a {} constraint cannot be enforced together",
                    answer.kind()
                ),
            });
        }
        Ok(Self::Tools {
            offer,
            answer: Box::new(answer),
        })
    }

    /// The answer's own constraint: the request's schema or text constraint.
    fn answer(req: &AdapterCallRequest) -> Result<Self, LocalError> {
        match (&req.response_schema, &req.text_constraint) {
            (None, None) => Ok(Self::None),
            (Some(schema), None) => Ok(Self::JsonSchema(schema.clone())),
            (None, Some(text)) => Self::from_text_constraint(text),
            (Some(_), Some(text)) => Err(LocalError::Constraint {
                kind: "json_schema",
                reason: format!(
                    "a response_schema and a {} constraint cannot be enforced together",
                    text.kind()
                ),
            }),
        }
    }

    /// The engine constraint for a geode [`TextConstraint`]. A kind this engine does not know
    /// is refused rather than decoded unconstrained.
    pub fn from_text_constraint(text: &TextConstraint) -> Result<Self, LocalError> {
        match text {
            TextConstraint::Choice(options) => Ok(Self::Choice(options.clone())),
            TextConstraint::Regex(rx) => Ok(Self::Regex(rx.clone())),
            TextConstraint::Grammar(lark) => Ok(Self::Grammar(lark.clone())),
            other => Err(LocalError::Constraint {
                kind: other.kind(),
                reason: "this constraint kind is not supported by the local engine".to_owned(),
            }),
        }
    }

    /// A short name: `none`, `json_schema`, `choice`, `regex`, `grammar` or `tools`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::JsonSchema(_) => "json_schema",
            Self::Choice(_) => "choice",
            Self::Regex(_) => "regex",
            Self::Grammar(_) => "grammar",
            Self::Tools { .. } => "tools",
        }
    }

    /// True unless this is [`Constraint::None`].
    pub fn is_constrained(&self) -> bool {
        !matches!(self, Self::None)
    }

    /// How decoding narrows the caller's schema for an answer of at most `max_tokens`
    /// ([`crate::tighten::tighten_within`]): one [`Transform`] per narrowing, pointing into the
    /// caller's schema; empty for the other constraint kinds.
    pub fn decoding_transforms(&self, max_tokens: u32) -> Vec<Transform> {
        match self {
            Self::JsonSchema(schema) => tighten_within(schema, max_tokens).transforms,
            Self::Tools { answer, .. } => answer.decoding_transforms(max_tokens),
            _ => Vec::new(),
        }
    }

    /// The llguidance grammar for this constraint (`None` when unconstrained), a schema
    /// narrowed for answers of at most `max_tokens`, refused when even its shortest answer
    /// needs more tokens of a model whose longest token is `longest_token` bytes
    /// ([`crate::shortest::check`]).
    fn to_grammar(
        &self,
        max_tokens: u32,
        longest_token: usize,
    ) -> Result<Option<TopLevelGrammar>, LocalError> {
        Ok(Some(match self {
            Self::None => return Ok(None),
            Self::JsonSchema(schema) => {
                TopLevelGrammar::from_json_schema(decoding(schema, max_tokens, longest_token)?)
            }
            Self::Choice(options) => TopLevelGrammar::from_lark(choice_grammar(options)?),
            Self::Regex(rx) => TopLevelGrammar::from_regex(rx),
            Self::Grammar(lark) => TopLevelGrammar::from_lark(lark.clone()),
            Self::Tools { offer, answer } => {
                TopLevelGrammar::from_lark(tools_grammar(offer, answer, max_tokens, longest_token)?)
            }
        }))
    }

    /// Compiles the constraint into a fresh matcher for answers of at most `max_tokens`;
    /// `Ok(None)` when unconstrained. Any llguidance error is a [`LocalError::Constraint`]
    /// (fail closed).
    pub(crate) fn compile(
        &self,
        factory: &ParserFactory,
        max_tokens: u32,
    ) -> Result<Option<Matcher>, LocalError> {
        let longest_token = factory.tok_env().tok_trie().max_token_len();
        let Some(grammar) = self.to_grammar(max_tokens, longest_token)? else {
            return Ok(None);
        };
        let parser = factory
            .create_parser(grammar)
            .map_err(|e| LocalError::Constraint {
                kind: self.kind(),
                reason: format!("{e:#}"),
            })?;
        let matcher = Matcher::new(Ok(parser));
        match matcher.get_error() {
            Some(reason) => Err(LocalError::Constraint {
                kind: self.kind(),
                reason,
            }),
            None => Ok(Some(matcher)),
        }
    }
}

/// `schema` narrowed for answers of at most `max_tokens`, refused when even its shortest answer
/// needs more ([`crate::shortest::check`]).
fn decoding(
    schema: &ResponseSchema,
    max_tokens: u32,
    longest_token: usize,
) -> Result<Value, LocalError> {
    let decoding = tighten_within(schema, max_tokens).schema;
    crate::shortest::check(&decoding, max_tokens, longest_token)?;
    Ok(decoding)
}

/// `start: call` or `start: call | answer`, the answer being its schema's JSON or free text.
fn tools_grammar(
    offer: &Offer,
    answer: &Constraint,
    max_tokens: u32,
    longest_token: usize,
) -> Result<String, LocalError> {
    let call = offer.call_schema(max_tokens)?;
    crate::shortest::check(&call, max_tokens, longest_token)?;
    let rule = call_rule(&call);
    if offer.required {
        return Ok(format!("start: call\n{rule}"));
    }
    let answer = match answer {
        Constraint::JsonSchema(schema) => {
            format!(
                "answer: %json {}\n",
                decoding(schema, max_tokens, longest_token)?
            )
        }
        _ => "answer: TEXT\nTEXT: /(?s:.*)/\n".to_owned(),
    };
    Ok(format!("start: call | answer\n{rule}{answer}"))
}

/// `start: "a" | "b"` with JSON-escaped literals; an empty list cannot be satisfied.
fn choice_grammar(options: &[String]) -> Result<String, LocalError> {
    if options.is_empty() {
        return Err(LocalError::Constraint {
            kind: "choice",
            reason: "a choice needs at least one option".to_owned(),
        });
    }
    let alternatives: Vec<String> = options
        .iter()
        .map(|o| Value::String(o.clone()).to_string())
        .collect();
    Ok(format!("start: {}\n", alternatives.join(" | ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use geode::llm::request::Message;
    use serde_json::json;

    #[test]
    fn choice_literals_are_json_escaped() {
        let g = choice_grammar(&["a\"b".to_owned(), "x\\y".to_owned()]).unwrap();
        assert_eq!(g, "start: \"a\\\"b\" | \"x\\\\y\"\n");
    }

    #[test]
    fn empty_choice_is_refused() {
        assert!(matches!(
            choice_grammar(&[]),
            Err(LocalError::Constraint { kind: "choice", .. })
        ));
    }

    #[test]
    fn schema_and_text_constraint_together_are_refused() {
        let mut req = AdapterCallRequest::new("", vec![Message::user("hi")]);
        assert_eq!(Constraint::from_request(&req).unwrap(), Constraint::None);
        req.response_schema = Some(ResponseSchema::from_value(json!({"type": "object"})).unwrap());
        assert_eq!(
            Constraint::from_request(&req).unwrap().kind(),
            "json_schema"
        );
        req.text_constraint = Some(TextConstraint::Regex("a+".to_owned()));
        assert!(matches!(
            Constraint::from_request(&req),
            Err(LocalError::Constraint { .. })
        ));
        req.response_schema = None;
        assert_eq!(
            Constraint::from_request(&req).unwrap(),
            Constraint::Regex("a+".to_owned())
        );
    }
}
