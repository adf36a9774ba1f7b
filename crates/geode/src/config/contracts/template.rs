//! A contract's prompt template: text with `{name}` placeholders, each one of the contract's
//! inputs. `{{` and `}}` stand for literal braces. Anything else between braces is refused when
//! the file is loaded, so that a JSON example pasted into a prompt (`{"a": 1}`) is an error that
//! says how to write it, not a placeholder nobody can fill.

/// The longest input name: a name is a key of the tool's `inputSchema` and of `--input`.
pub const MAX_INPUT_NAME_CHARS: usize = 64;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Text as written (braces unescaped).
    Text(String),
    /// The value of the input of this name.
    Input(String),
}

/// A parsed prompt template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

/// Why a template does not parse: where (a 1-based character position) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at character {at}: {message}")]
pub struct TemplateError {
    /// The 1-based character position of the brace at fault.
    pub at: usize,
    /// What is wrong.
    pub message: String,
}

/// Whether `name` may name an input: an identifier of ASCII letters, digits and `_`, not
/// starting with a digit, at most [`MAX_INPUT_NAME_CHARS`] long.
pub fn is_input_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= MAX_INPUT_NAME_CHARS
}

impl Template {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().enumerate().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().is_some_and(|(_, n)| *n == '{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek().is_some_and(|(_, n)| *n == '}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => {
                    return Err(TemplateError {
                        at: i + 1,
                        message: "a `}` with no `{` before it: write `}}` for a literal brace"
                            .to_owned(),
                    });
                }
                '{' => {
                    let mut name = String::new();
                    let closed = loop {
                        match chars.next() {
                            Some((_, '}')) => break true,
                            Some((_, ch)) if name.len() <= MAX_INPUT_NAME_CHARS => name.push(ch),
                            Some(_) => {}
                            None => break false,
                        }
                    };
                    if !closed || !is_input_name(&name) {
                        return Err(TemplateError {
                            at: i + 1,
                            message: format!(
                                "a `{{` must open an input name such as `{{diff}}` (ASCII letters, \
                                 digits and _, at most {MAX_INPUT_NAME_CHARS}): write `{{{{` for a \
                                 literal brace"
                            ),
                        });
                    }
                    if !literal.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    }
                    pieces.push(Piece::Input(name));
                }
                other => literal.push(other),
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Self { pieces })
    }

    /// The input names, each once, in the order they first appear.
    pub fn inputs(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for piece in &self.pieces {
            if let Piece::Input(n) = piece
                && !names.contains(&n.as_str())
            {
                names.push(n);
            }
        }
        names
    }

    /// The prompt with each input replaced by `value(name)`'s text.
    pub fn render<'v>(&self, value: impl Fn(&str) -> &'v str) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Input(n) => out.push_str(value(n)),
            }
        }
        out
    }
}
