//! The results file: one [`WorkerResult`] per line, appended as each task ends.
//!
//! | promise | how |
//! |---|---|
//! | no partial line | each result is serialised first and written with one `write_all` of the whole line (newline included) to a file opened for appending, then flushed |
//! | a torn last line is dropped | [`ResultLog::open`] reads what is there; bytes after the last newline (a crash mid-write) are cut off before anything is appended |
//! | resume | the task ids already in the file are returned, so a re-run skips them |
//! | nothing twice | [`ResultLog::append`] refuses an id the file already holds |
//!
//! A complete line that is not a result (edited by hand, say) is counted in
//! [`ResultLog::unreadable_lines`] and left alone: its task runs again.

use crate::agent::protocol::WorkerResult;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Why the results file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// Reading, cutting or writing the file failed.
    #[error("results file {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A result could not be serialised.
    #[error("cannot serialise the result of {task_id}: {message}")]
    Serialise {
        /// The task.
        task_id: String,
        /// What went wrong.
        message: String,
    },
}

/// The results file of a batch, open for appending.
#[derive(Debug)]
pub struct ResultLog {
    path: PathBuf,
    file: File,
    done: HashSet<String>,
    torn_bytes: u64,
    unreadable: usize,
}

impl ResultLog {
    /// Opens (or creates) `path`, reads the task ids it holds and cuts a torn last line.
    pub fn open(path: &Path) -> Result<Self, OutputError> {
        let io = |source| OutputError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let torn_bytes = (bytes.len() - whole) as u64;
        if torn_bytes > 0 {
            file.set_len(whole as u64).map_err(io)?;
            file.seek(SeekFrom::End(0)).map_err(io)?;
        }
        let mut done = HashSet::new();
        let mut unreadable = 0;
        for line in bytes[..whole].split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match task_id_of(line) {
                Some(id) => {
                    done.insert(id);
                }
                None => unreadable += 1,
            }
        }
        Ok(Self {
            path: path.to_owned(),
            file,
            done,
            torn_bytes,
            unreadable,
        })
    }

    /// Whether the file already holds a result for `task_id`.
    pub fn contains(&self, task_id: &str) -> bool {
        self.done.contains(task_id)
    }

    /// How many results the file holds.
    pub fn len(&self) -> usize {
        self.done.len()
    }

    /// Whether the file holds no result.
    pub fn is_empty(&self) -> bool {
        self.done.is_empty()
    }

    /// The bytes of a torn last line cut off by [`ResultLog::open`] (0 when none).
    pub fn torn_bytes(&self) -> u64 {
        self.torn_bytes
    }

    /// Complete lines that were not results.
    pub fn unreadable_lines(&self) -> usize {
        self.unreadable
    }

    /// Appends `result` as one whole line and flushes it. Returns `false` (and writes nothing)
    /// when the file already holds that task id.
    pub fn append(&mut self, result: &WorkerResult) -> Result<bool, OutputError> {
        if self.done.contains(&result.task_id) {
            return Ok(false);
        }
        let mut line = serde_json::to_vec(result).map_err(|e| OutputError::Serialise {
            task_id: result.task_id.clone(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        let io = |source| OutputError::Io {
            path: self.path.clone(),
            source,
        };
        self.file.write_all(&line).map_err(io)?;
        self.file.flush().map_err(io)?;
        self.done.insert(result.task_id.clone());
        Ok(true)
    }
}

fn task_id_of(line: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        task_id: String,
    }
    serde_json::from_slice::<IdOnly>(line)
        .ok()
        .map(|i| i.task_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str) -> WorkerResult {
        WorkerResult {
            task_id: id.to_owned(),
            success: true,
            ..WorkerResult::default()
        }
    }

    #[test]
    fn results_are_whole_lines_and_resume_sees_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let mut log = ResultLog::open(&path).unwrap();
        assert!(log.is_empty());
        assert!(log.append(&result("a")).unwrap());
        assert!(log.append(&result("b")).unwrap());
        assert!(!log.append(&result("a")).unwrap(), "a second result for a");
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with('\n'));
        let log = ResultLog::open(&path).unwrap();
        assert_eq!(log.len(), 2);
        assert!(log.contains("a") && log.contains("b") && !log.contains("c"));
        assert_eq!(log.torn_bytes(), 0);
    }

    #[test]
    fn a_torn_last_line_is_cut_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let whole = serde_json::to_string(&result("a")).unwrap();
        std::fs::write(&path, format!("{whole}\n{{\"task_id\":\"b\",\"succ")).unwrap();
        let mut log = ResultLog::open(&path).unwrap();
        assert_eq!(log.torn_bytes(), 20);
        assert!(log.contains("a") && !log.contains("b"));
        log.append(&result("b")).unwrap();
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        let ids: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<WorkerResult>(l).unwrap().task_id)
            .collect();
        assert_eq!(ids, ["a", "b"]);
    }

    #[test]
    fn an_unreadable_complete_line_is_counted_and_its_task_runs_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        std::fs::write(&path, "garbage\n\n").unwrap();
        let log = ResultLog::open(&path).unwrap();
        assert_eq!((log.len(), log.unreadable_lines()), (0, 1));
    }

    #[test]
    fn an_unwritable_path_is_a_typed_error_naming_it() {
        let err = ResultLog::open(Path::new("/nonexistent-dir/out.jsonl")).unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent-dir/out.jsonl"),
            "{err}"
        );
    }
}
