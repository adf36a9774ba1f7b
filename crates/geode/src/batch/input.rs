//! Reading a batch's input: one task per JSONL line.
//!
//! | line | becomes |
//! |---|---|
//! | blank (only whitespace) | skipped |
//! | `{"task_id": "...", "prompt": "...", ...}` (a `prompt` and no `description`) | the batch's template request with that id, the prompt as its description, and any other field of the line laid over it |
//! | any other JSON object with a `task_id` | a full [`WorkerRequest`] with GEODE's fields and defaults; the template's `adapter` fills an empty one, and its `repair` (`--repair`) turns the line's on |
//! | anything else (not JSON, not an object, no `task_id`, a bad field) | a [`BadLine`] with its 1-based line number; the other lines still run |
//!
//! Task ids must be unique: [`scan_ids`] reads the whole input once before anything runs and
//! names every id that repeats, with the lines it stands on.

use crate::protocol::{WorkerRequest, parse_request_line};
use serde_json::Value;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// One line of the input, read.
#[derive(Debug, Clone, PartialEq)]
pub enum InputLine {
    /// A task to run.
    Task {
        /// The 1-based line number.
        line: usize,
        /// The request.
        request: Box<WorkerRequest>,
    },
    /// A line that is not a task.
    Bad(BadLine),
}

/// A line that could not be read as a task.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct BadLine {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

/// Why a batch's input cannot run at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The input could not be read.
    #[error("cannot read the input: {0}")]
    Io(#[from] std::io::Error),
    /// The input could not be opened.
    #[error("cannot open the input {}: {source}", .path.display())]
    Open {
        /// The path given.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// The input is not a regular file. A batch reads its input twice (once to check the ids,
    /// once to run), and a pipe or FIFO read a second time is empty: every task would be lost
    /// without a word.
    #[error(
        "the input {} is a {kind}, not a regular file: a batch reads its input twice (once to check the task ids); write the tasks to a file first",
        .path.display()
    )]
    NotAFile {
        /// The path given.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// The output is the input: the tasks would be read back as results and skipped.
    #[error(
        "--output {} is the same file as --input: its task lines would be read as results; choose another --output",
        .path.display()
    )]
    SameAsOutput {
        /// The output path given.
        path: PathBuf,
    },
    /// Some task ids stand on more than one line.
    #[error("duplicate task ids in the input: {}", describe_duplicates(.0))]
    DuplicateIds(Vec<(String, Vec<usize>)>),
}

/// Longest task id an error message quotes whole; a longer one is cut (a 1 MB id repeated
/// must not make a 2 MB error line).
const MAX_QUOTED_ID_CHARS: usize = 80;

fn describe_duplicates(dups: &[(String, Vec<usize>)]) -> String {
    let shown: Vec<String> = dups
        .iter()
        .take(10)
        .map(|(id, lines)| {
            let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
            let quoted = match id.char_indices().nth(MAX_QUOTED_ID_CHARS) {
                Some((cut, _)) => format!("{:?}… ({} bytes)", &id[..cut], id.len()),
                None => format!("{id:?}"),
            };
            format!("{quoted} on lines {}", lines.join(", "))
        })
        .collect();
    let more = dups.len().saturating_sub(shown.len());
    let tail = if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    };
    format!("{}{tail}", shown.join("; "))
}

/// Opens the input, refusing what cannot be read twice (see [`InputError::NotAFile`]) and an
/// `output` that is the same file (checked before the output is opened, which would cut the
/// input's unterminated last line as a torn result).
pub fn open_input(path: &Path, output: &Path) -> Result<std::fs::File, InputError> {
    use std::os::unix::fs::MetadataExt;
    let open = |source| InputError::Open {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(open)?;
    let meta = file.metadata().map_err(open)?;
    if !meta.is_file() {
        return Err(InputError::NotAFile {
            path: path.to_owned(),
            kind: crate::batch::output::file_kind(meta.file_type()),
        });
    }
    if let Ok(out) = std::fs::metadata(output)
        && (out.dev(), out.ino()) == (meta.dev(), meta.ino())
    {
        return Err(InputError::SameAsOutput {
            path: output.to_owned(),
        });
    }
    Ok(file)
}

/// Reads one line (1-based `line`) against the batch's `template`; `None` for a blank line.
pub fn read_line(text: &str, line: usize, template: &WorkerRequest) -> Option<InputLine> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let bad = |message: String| Some(InputLine::Bad(BadLine { line, message }));
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return bad(format!("not JSON: {e}")),
    };
    let Some(obj) = value.as_object() else {
        return bad("not a JSON object".to_owned());
    };
    let request = if obj.contains_key("prompt") && !obj.contains_key("description") {
        let (Some(id), Some(prompt)) = (
            obj.get("task_id").and_then(Value::as_str),
            obj.get("prompt").and_then(Value::as_str),
        ) else {
            return bad("a shorthand line needs string task_id and prompt".to_owned());
        };
        if obj.len() == 2 {
            let mut req = template.clone();
            req.task_id = id.to_owned();
            req.description = prompt.to_owned();
            req
        } else {
            match overlay(template, obj) {
                Ok(req) => req,
                Err(e) => return bad(e),
            }
        }
    } else {
        match parse_request_line(text) {
            Ok(mut req) => {
                if req.adapter.is_empty() {
                    req.adapter.clone_from(&template.adapter);
                }
                // `--repair` asks for the tier on every task; a line may ask for it alone.
                req.repair |= template.repair;
                req
            }
            Err(e) => return bad(e.to_string()),
        }
    };
    if request.task_id.is_empty() {
        return bad("empty task_id".to_owned());
    }
    Some(InputLine::Task {
        line,
        request: Box::new(request),
    })
}

/// The template with a shorthand line's other fields laid over it (`prompt` as the
/// description), so `{"task_id", "prompt", "adapter": ...}` routes as it says.
fn overlay(
    template: &WorkerRequest,
    line: &serde_json::Map<String, Value>,
) -> Result<WorkerRequest, String> {
    let mut merged = match serde_json::to_value(template) {
        Ok(Value::Object(m)) => m,
        _ => return Err("the batch's template request does not serialize".to_owned()),
    };
    for (key, value) in line {
        let key = if key == "prompt" { "description" } else { key };
        merged.insert(key.to_owned(), value.clone());
    }
    parse_request_line(&Value::Object(merged).to_string()).map_err(|e| e.to_string())
}

/// The task id of a line, without reading the rest of it (`None` when it has none).
fn line_task_id(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        task_id: String,
    }
    serde_json::from_str::<IdOnly>(text.trim())
        .ok()
        .map(|i| i.task_id)
}

/// Reads every task id once and refuses the input when any repeats.
pub fn scan_ids(input: impl BufRead) -> Result<usize, InputError> {
    let mut seen: HashMap<String, Vec<usize>> = HashMap::new();
    let mut lines = 0;
    for (i, text) in input.lines().enumerate() {
        let text = text?;
        lines = i + 1;
        if let Some(id) = line_task_id(&text) {
            seen.entry(id).or_default().push(i + 1);
        }
    }
    let mut dups: Vec<(String, Vec<usize>)> =
        seen.into_iter().filter(|(_, l)| l.len() > 1).collect();
    if dups.is_empty() {
        return Ok(lines);
    }
    dups.sort_by_key(|(_, l)| l[0]);
    Err(InputError::DuplicateIds(dups))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> WorkerRequest {
        let mut t = WorkerRequest::new("", "");
        t.adapter = "glm-payg".into();
        t.model = "m".into();
        t
    }

    #[test]
    fn a_shorthand_line_fills_the_template() {
        let Some(InputLine::Task { line, request }) =
            read_line(r#"{"task_id":"a","prompt":"hi"}"#, 3, &template())
        else {
            panic!("not a task")
        };
        assert_eq!(line, 3);
        assert_eq!(
            (request.task_id.as_str(), request.description.as_str()),
            ("a", "hi")
        );
        assert_eq!(
            (request.adapter.as_str(), request.model.as_str()),
            ("glm-payg", "m")
        );
    }

    #[test]
    fn a_shorthand_line_lays_its_other_fields_over_the_template() {
        let line = r#"{"task_id":"a","prompt":"hi","adapter":"router","max_rounds":2}"#;
        let Some(InputLine::Task { request, .. }) = read_line(line, 1, &template()) else {
            panic!("not a task")
        };
        assert_eq!(
            (
                request.adapter.as_str(),
                request.model.as_str(),
                request.max_rounds
            ),
            ("router", "m", 2)
        );
        assert_eq!(request.description, "hi");
        let bad = r#"{"task_id":"a","prompt":"hi","max_rounds":"two"}"#;
        assert!(
            matches!(read_line(bad, 4, &template()), Some(InputLine::Bad(b)) if b.line == 4 && b.message.contains("max_rounds")),
            "a bad overlaid field is a bad line: {:?}",
            read_line(bad, 4, &template())
        );
    }

    #[test]
    fn the_batch_repair_flag_reaches_every_kind_of_line_and_a_line_may_ask_alone() {
        let repairing = WorkerRequest {
            repair: true,
            ..template()
        };
        let repair = |line: &str, t: &WorkerRequest| match read_line(line, 1, t) {
            Some(InputLine::Task { request, .. }) => request.repair,
            other => panic!("not a task: {other:?}"),
        };
        let full = r#"{"task_id":"b","description":"d"}"#;
        let short = r#"{"task_id":"a","prompt":"hi"}"#;
        let overlaid = r#"{"task_id":"a","prompt":"hi","max_rounds":2}"#;
        for line in [full, short, overlaid] {
            assert!(repair(line, &repairing), "{line}");
            assert!(!repair(line, &template()), "{line}");
        }
        assert!(repair(
            r#"{"task_id":"b","description":"d","repair":true}"#,
            &template()
        ));
    }

    #[test]
    fn a_full_request_keeps_its_fields_and_takes_the_adapter_when_it_names_none() {
        let line = r#"{"task_id":"b","description":"d","model":"x","subagent_max_tokens":7}"#;
        let Some(InputLine::Task { request, .. }) = read_line(line, 1, &template()) else {
            panic!("not a task")
        };
        assert_eq!(request.model, "x");
        assert_eq!(request.subagent_max_tokens, 7);
        assert_eq!(request.adapter, "glm-payg");
        let named = r#"{"task_id":"c","description":"d","adapter":"local"}"#;
        let Some(InputLine::Task { request, .. }) = read_line(named, 1, &template()) else {
            panic!("not a task")
        };
        assert_eq!(request.adapter, "local");
    }

    #[test]
    fn blank_lines_are_skipped_and_bad_lines_name_their_number() {
        assert_eq!(read_line("   ", 1, &template()), None);
        for (text, needle) in [
            ("{not json", "not JSON"),
            ("[1,2]", "not a JSON object"),
            (r#"{"prompt":"no id"}"#, "task_id"),
            (r#"{"task_id":"", "prompt":"p"}"#, "empty task_id"),
            (r#"{"task_id":"x","description":3}"#, "bad request field"),
        ] {
            match read_line(text, 9, &template()) {
                Some(InputLine::Bad(b)) => {
                    assert_eq!(b.line, 9);
                    assert!(b.message.contains(needle), "{text}: {}", b.message);
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn duplicate_ids_are_named_with_their_lines() {
        let input = "{\"task_id\":\"a\",\"prompt\":\"1\"}\n{\"task_id\":\"b\",\"prompt\":\"2\"}\n\n{\"task_id\":\"a\",\"prompt\":\"3\"}\n";
        let err = scan_ids(input.as_bytes()).unwrap_err();
        assert!(err.to_string().contains(r#""a" on lines 1, 4"#), "{err}");
        assert_eq!(scan_ids("{\"task_id\":\"a\"}\n".as_bytes()).unwrap(), 1);
    }
}
