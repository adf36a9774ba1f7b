//! A contract's inputs: the `{name}` placeholders of its prompt, typed by
//! `[contracts.NAME.inputs]` (a string unless it says otherwise). One description serves every
//! caller: the JSON Schema an MCP client sees as the tool's `inputSchema`, the check of a call's
//! arguments against it, and `geode run --input NAME=VALUE`, whose text is read by the type.

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The most bytes the inputs of one call may hold together (their rendered text): far beyond
/// any prompt a model takes, and a bound on what one call may make the process hold.
pub const MAX_INPUT_BYTES: usize = 8 << 20;

/// The type of one input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputType {
    /// Any text, put into the prompt as it is.
    #[default]
    String,
    /// A JSON number, put into the prompt as JSON writes it.
    Number,
    /// A whole number.
    Integer,
    /// `true` or `false`.
    Boolean,
}

impl InputType {
    /// The JSON Schema `type` of this input.
    pub fn json_type(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
        }
    }

    /// Whether `value` is of this type (an integer may be written `3.0`, as JSON Schema says).
    fn admits(self, value: &Value) -> bool {
        match self {
            Self::String => value.is_string(),
            Self::Number => value.is_number(),
            Self::Integer => {
                value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            Self::Boolean => value.is_boolean(),
        }
    }

    /// `text` read as this type (`geode run --input`). Never echoes the text.
    fn read(self, text: &str) -> Result<Value, &'static str> {
        match self {
            Self::String => Ok(Value::String(text.to_owned())),
            Self::Boolean => match text.trim() {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err("true or false"),
            },
            Self::Integer => text
                .trim()
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| "a whole number"),
            Self::Number => text
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or("a finite number"),
        }
    }
}

/// One entry of `[contracts.NAME.inputs]`: a type (`diff = "string"`), or a table with a type
/// and a description for the client (`n = { type = "integer", description = "..." }`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum InputDecl {
    /// A type alone.
    Type(InputType),
    /// A type and a description.
    Table(InputTable),
}

/// `{ type = "...", description = "..." }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputTable {
    /// The input's type.
    #[serde(rename = "type", default)]
    pub kind: InputType,
    /// What the input is, for the client (the tool's `inputSchema`).
    pub description: Option<String>,
}

/// One input of a checked contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// Its name, as in the prompt.
    pub name: String,
    /// Its type.
    pub kind: InputType,
    /// What it is, when the file says.
    pub description: Option<String>,
}

impl Input {
    /// The input `name` as `decl` describes it (a string when it has no entry).
    pub(super) fn new(name: &str, decl: Option<&InputDecl>) -> Self {
        let (kind, description) = match decl {
            None => (InputType::String, None),
            Some(InputDecl::Type(t)) => (*t, None),
            Some(InputDecl::Table(t)) => (t.kind, t.description.clone()),
        };
        Self {
            name: name.to_owned(),
            kind,
            description,
        }
    }
}

/// Why a call's inputs cannot fill a contract's prompt. No variant holds a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// No contract of that name.
    #[error("no contract named {0:?} in geode.toml (`[contracts.NAME]`)")]
    UnknownContract(String),
    /// An argument the contract has no input for.
    #[error("unknown input {name:?}: the contract takes {}", takes(.known))]
    Unknown {
        /// The argument's name.
        name: String,
        /// The inputs the contract has.
        known: Vec<String>,
    },
    /// An input the call does not give.
    #[error("missing input {0:?}")]
    Missing(String),
    /// An input given twice (`--input a=1 --input a=2`).
    #[error("input {0:?} is given twice")]
    Twice(String),
    /// An input of the wrong type.
    #[error("input {name:?} must be {expected}")]
    WrongType {
        /// The input.
        name: String,
        /// What it must be.
        expected: &'static str,
    },
    /// `--input` without `=`.
    #[error("--input takes NAME=VALUE (argument #{0} has no `=`)")]
    NotAPair(usize),
    /// The inputs together are larger than [`MAX_INPUT_BYTES`].
    #[error("the inputs hold more than the {MAX_INPUT_BYTES} bytes one call may take")]
    TooLarge,
}

fn takes(known: &[String]) -> String {
    if known.is_empty() {
        "no inputs".to_owned()
    } else {
        known.join(", ")
    }
}

/// The JSON Schema of these inputs: an object with one property per input, each required and
/// typed, and no other property.
pub fn input_schema(inputs: &[Input]) -> Value {
    let properties: Map<String, Value> = inputs
        .iter()
        .map(|i| {
            let mut p = json!({"type": i.kind.json_type()});
            if let Some(d) = &i.description {
                p["description"] = Value::String(d.clone());
            }
            (i.name.clone(), p)
        })
        .collect();
    let required: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The text each input puts into the prompt, checked against `inputs`: every input given, of
/// its type, nothing else, within [`MAX_INPUT_BYTES`].
pub fn texts(inputs: &[Input], args: &Map<String, Value>) -> Result<Vec<String>, InputError> {
    if let Some(extra) = args.keys().find(|k| !inputs.iter().any(|i| &i.name == *k)) {
        return Err(InputError::Unknown {
            name: extra.chars().take(64).collect(),
            known: inputs.iter().map(|i| i.name.clone()).collect(),
        });
    }
    let mut total = 0usize;
    let mut out = Vec::with_capacity(inputs.len());
    for input in inputs {
        let value = args
            .get(&input.name)
            .ok_or_else(|| InputError::Missing(input.name.clone()))?;
        if !input.kind.admits(value) {
            return Err(InputError::WrongType {
                name: input.name.clone(),
                expected: match input.kind {
                    InputType::String => "a string",
                    InputType::Number => "a number",
                    InputType::Integer => "an integer",
                    InputType::Boolean => "a boolean",
                },
            });
        }
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        total = total.saturating_add(text.len());
        if total > MAX_INPUT_BYTES {
            return Err(InputError::TooLarge);
        }
        out.push(text);
    }
    Ok(out)
}

/// `NAME=VALUE` pairs (`geode run --input`) as arguments, each value read by its input's type.
/// A name the contract does not have is left for [`texts`] to refuse.
pub fn from_pairs(inputs: &[Input], pairs: &[String]) -> Result<Map<String, Value>, InputError> {
    let mut args = Map::new();
    for (i, pair) in pairs.iter().enumerate() {
        let (name, text) = pair.split_once('=').ok_or(InputError::NotAPair(i + 1))?;
        let kind = inputs
            .iter()
            .find(|input| input.name == name)
            .map_or(InputType::String, |input| input.kind);
        let value = kind.read(text).map_err(|expected| InputError::WrongType {
            name: name.to_owned(),
            expected,
        })?;
        if args.insert(name.to_owned(), value).is_some() {
            return Err(InputError::Twice(name.to_owned()));
        }
    }
    Ok(args)
}
