//! Where the value is in an answer the worker's extraction could not read: the whole text,
//! else the Markdown fences, else a bracket in the prose — each read by the lenient reader.
//!
//! | step | candidates | taken when |
//! |---|---|---|
//! | 1 | the whole text, trimmed | it reads as one value (only space or comments after it), of any type: the schema then judges it, and a value of the wrong type is not looked into |
//! | 2 | the content of each fenced block (```` ``` ```` or `~~~`, any tag; an unclosed last fence runs to the end) | exactly one distinct value of an admitted type reads from the fences |
//! | 3 | each `{` (object roots) or `[` (array roots) in the prose, left to right, not inside a value already read, at most [`MAX_STARTS`] | exactly one distinct value of an admitted type reads from them |
//!
//! Two different values at one step are [`NotRepairable::Ambiguous`], and so is a value in the
//! fences beside a different one in the prose around them (an example and the answer: taking
//! either would be choosing). More than one bracket missing at the end is
//! [`NotRepairable::CutOff`], and so is one when the answer's ending is unknown. A scalar root
//! is never looked for in prose.

use super::lenient::{Parsed, SyntaxError, read_prefix, read_whole};
use super::{Ending, NotRepairable, Repair, RepairKind};
use crate::schema::root::{AnswerRoot, TypeSet};
use serde_json::Value;

/// Most bracket positions tried in prose: each try may read to the end of the text.
pub(super) const MAX_STARTS: usize = 64;

/// The value of `text` (already trimmed, non-empty) and the fixes made to read it; a missing
/// final bracket is closed only when the answer is known to have `ending` complete.
pub(super) fn read(
    text: &str,
    root: AnswerRoot,
    ending: Ending,
) -> Result<(Value, Vec<Repair>), NotRepairable> {
    let may_close = usize::from(ending == Ending::Complete);
    let admitted = admitted(root);
    let no_value = |e: &SyntaxError| NotRepairable::NoValue {
        expected: root.describe(),
        detail: e.to_string(),
    };
    // As the worker's extraction does, a whole answer is that value whatever its type: the
    // coercions and the validator judge it (an array where an object is due is not looked into).
    let first_error = match read_whole(text, 0, text.len()) {
        Ok(parsed) => {
            let parsed = bounded(parsed, may_close)?;
            return Ok((parsed.value, parsed.repairs));
        }
        Err(e) => e,
    };
    let blocks = fences(text);
    let fenced: Vec<Parsed> = blocks
        .iter()
        .filter_map(|&(start, end)| read_whole(text, start, end).ok())
        .collect();
    // The prose outside the fences, read too: a fenced example beside the real answer written
    // in the prose is two values, and taking either would be choosing.
    let inside = |at: usize| blocks.iter().any(|&(s, e)| (s..e).contains(&at));
    let mut prose = Vec::new();
    let mut last_error = None;
    let mut from = 0;
    for start in starts(text, admitted) {
        if start < from || inside(start) {
            continue;
        }
        match read_prefix(text, start, text.len()) {
            Ok(parsed) => {
                from = parsed.end;
                prose.push(parsed);
            }
            Err(e) => last_error = Some(e),
        }
    }
    if let Some(found) = one_of(fenced, admitted, may_close)? {
        if one_of(prose, admitted, may_close).is_ok_and(|p| p.is_none_or(|(v, _)| v == found.0)) {
            return Ok(found);
        }
        return Err(NotRepairable::Ambiguous { count: 2 });
    }
    match one_of(prose, admitted, may_close)? {
        Some(found) => Ok(found),
        None => Err(no_value(last_error.as_ref().unwrap_or(&first_error))),
    }
}

/// The types a value read for `root` may have.
fn admitted(root: AnswerRoot) -> TypeSet {
    match root {
        AnswerRoot::Object => TypeSet::OBJECT,
        AnswerRoot::Any => TypeSet::ALL,
        AnswerRoot::Values(t) => t,
    }
}

/// `parsed`, unless more than `may_close` brackets were missing at its end.
fn bounded(parsed: Parsed, may_close: usize) -> Result<Parsed, NotRepairable> {
    if parsed.closed_at_end > may_close {
        return Err(NotRepairable::CutOff {
            missing: parsed.closed_at_end,
        });
    }
    Ok(parsed)
}

/// The one distinct value among `found` of an admitted type, with `fence_or_prose` first among
/// its fixes; `None` when there is none, an error when there are several or one looks cut off.
fn one_of(
    found: Vec<Parsed>,
    admitted: TypeSet,
    may_close: usize,
) -> Result<Option<(Value, Vec<Repair>)>, NotRepairable> {
    let mut kept: Vec<Parsed> = found
        .into_iter()
        .filter(|p| admitted.admits(&p.value))
        .collect();
    let distinct = {
        let mut values: Vec<&Value> = Vec::new();
        for p in &kept {
            if !values.contains(&&p.value) {
                values.push(&p.value);
            }
        }
        values.len()
    };
    if distinct > 1 {
        return Err(NotRepairable::Ambiguous { count: distinct });
    }
    let Some(parsed) = kept.pop() else {
        return Ok(None);
    };
    let parsed = bounded(parsed, may_close)?;
    let mut repairs = vec![Repair::new(RepairKind::FenceOrProse, "")];
    repairs.extend(parsed.repairs);
    Ok(Some((parsed.value, repairs)))
}

/// The byte ranges of the fenced blocks' contents, in order.
fn fences(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, &str)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start_matches(' ');
        let marker = ["```", "~~~"]
            .into_iter()
            .find(|m| line.len() - trimmed.len() <= 3 && trimmed.starts_with(m));
        match (open, marker) {
            (None, Some(m)) => open = Some((offset, m)),
            (Some((body, m)), Some(close)) if close == m && trimmed.trim() == m => {
                out.push((body, start));
                open = None;
            }
            _ => {}
        }
    }
    if let Some((body, _)) = open {
        out.push((body, text.len()));
    }
    out
}

/// Where a value of an admitted container type may start in prose.
fn starts(text: &str, admitted: TypeSet) -> impl Iterator<Item = usize> + '_ {
    let objects = admitted.contains(TypeSet::OBJECT);
    let arrays = admitted.contains(TypeSet::ARRAY);
    text.bytes()
        .enumerate()
        .filter(move |&(_, b)| (b == b'{' && objects) || (b == b'[' && arrays))
        .map(|(i, _)| i)
        .take(MAX_STARTS)
}
