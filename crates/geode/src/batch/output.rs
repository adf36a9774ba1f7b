//! The results file: one [`WorkerResult`] per line, appended as each task ends.
//!
//! | promise | how |
//! |---|---|
//! | no partial line | each result is serialised first and written with one `write_all` of the whole line (newline included) to a file opened for appending, then flushed |
//! | a torn last line is dropped | [`ResultLog::open`] reads what is there; bytes after the last newline (a crash mid-write) are cut off before anything is appended |
//! | resume | the task ids already in the file are returned, so a re-run skips them |
//! | nothing twice | [`ResultLog::append`] refuses an id the file already holds |
//! | one writer | the file is locked (`flock`, exclusive) while open: a second batch on the same file is refused with [`OutputError::Locked`] instead of running every task again beside the first |
//! | a failed write leaves no partial line | the file is cut back to its last whole line before the error is returned (a full disk, a size limit) |
//! | only a regular file | a device (`/dev/full` reads zeros forever), a FIFO or a socket is refused with [`OutputError::NotAFile`]: a results file must be read back to resume |
//!
//! A complete line that is not a result (edited by hand, garbage from a disk fault, a line
//! without `task_id` and `success`) is left alone and its task runs again;
//! [`ResultLog::unreadable_lines`] names it by line number so the caller can say so.

use crate::protocol::WorkerResult;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Why the results file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// Opening, reading or cutting the file failed.
    #[error("results file {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// Appending a result failed (a full disk, say). The partial line was cut off, so the file
    /// holds whole results only, and a re-run resumes from them.
    #[error(
        "cannot append to results file {}: {source}; the results already written are kept and a re-run resumes from them",
        .path.display()
    )]
    Write {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// Another process (another `geode batch` on the same file) holds the file's lock.
    #[error(
        "results file {} is in use by another geode batch (it holds the file's lock); wait for it to end or choose another --output",
        .path.display()
    )]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The path is not a regular file (a device, a FIFO, a socket): results cannot be read back.
    #[error(
        "results file {} is a {kind}, not a regular file: a batch reads its results file back to resume",
        .path.display()
    )]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
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
    /// Bytes of whole lines in the file: where a failed append is cut back to.
    len: u64,
    done: HashSet<String>,
    torn_bytes: u64,
    /// 1-based numbers of complete lines that are not results.
    unreadable: Vec<usize>,
}

impl ResultLog {
    /// Opens (or creates) `path`, locks it, reads the task ids it holds and cuts a torn last
    /// line.
    pub fn open(path: &Path) -> Result<Self, OutputError> {
        use fs4::fs_std::FileExt;
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
        // Checked on the open file, not the path, so nothing can swap it in between.
        let kind = file.metadata().map_err(io)?.file_type();
        if !kind.is_file() {
            return Err(OutputError::NotAFile {
                path: path.to_owned(),
                kind: file_kind(kind),
            });
        }
        // Before reading: a second batch must not take the first one's line being written for
        // a torn one and cut it.
        if !FileExt::try_lock_exclusive(&file).map_err(io)? {
            return Err(OutputError::Locked {
                path: path.to_owned(),
            });
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let torn_bytes = (bytes.len() - whole) as u64;
        if torn_bytes > 0 {
            file.set_len(whole as u64).map_err(io)?;
            file.seek(SeekFrom::End(0)).map_err(io)?;
        }
        let mut done = HashSet::new();
        let mut unreadable = Vec::new();
        for (i, line) in bytes[..whole].split(|b| *b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match task_id_of(line) {
                Some(id) => {
                    done.insert(id);
                }
                None => unreadable.push(i + 1),
            }
        }
        Ok(Self {
            path: path.to_owned(),
            file,
            len: whole as u64,
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

    /// The 1-based numbers of complete lines that are not results (left in the file as they
    /// are; their tasks, if any, run again).
    pub fn unreadable_lines(&self) -> &[usize] {
        &self.unreadable
    }

    /// Appends `result` as one whole line and flushes it. Returns `false` (and writes nothing)
    /// when the file already holds that task id.
    pub fn append(&mut self, result: &WorkerResult) -> Result<bool, OutputError> {
        if self.done.contains(&result.task_id) {
            return Ok(false);
        }
        let mut line = result
            .to_json_line()
            .map_err(|e| OutputError::Serialise {
                task_id: result.task_id.clone(),
                message: e.to_string(),
            })?
            .into_bytes();
        line.push(b'\n');
        let written = self.file.write_all(&line).and_then(|()| self.file.flush());
        if let Err(source) = written {
            // A write may stop part-way (a full disk); cut what it left so no torn line sits
            // in the middle of the file if a later append succeeds. Best effort: a file that
            // cannot be cut either has its torn line cut on the next open.
            let _ = self.file.set_len(self.len);
            return Err(OutputError::Write {
                path: self.path.clone(),
                source,
            });
        }
        self.len += line.len() as u64;
        self.done.insert(result.task_id.clone());
        Ok(true)
    }
}

/// The task id of a result line; `None` for anything else. A result has a string `task_id`
/// and a boolean `success` (both required by [`WorkerResult`]): a stray input line or a
/// fragment holding only a `task_id` is not taken for a finished task.
fn task_id_of(line: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head {
        task_id: String,
        #[serde(rename = "success")]
        _success: bool,
    }
    serde_json::from_slice::<Head>(line).ok().map(|h| h.task_id)
}

/// What a file type is, for the errors that refuse anything but a regular file.
pub(crate) fn file_kind(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "directory"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_fifo() {
        "FIFO"
    } else if kind.is_socket() {
        "socket"
    } else {
        "special file"
    }
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
        std::fs::write(&path, "garbage\n\n{\"task_id\":\"x\"}\n").unwrap();
        let log = ResultLog::open(&path).unwrap();
        assert_eq!((log.len(), log.unreadable_lines()), (0, &[1, 3][..]));
    }

    #[test]
    fn a_second_open_is_refused_while_the_first_holds_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let first = ResultLog::open(&path).unwrap();
        let err = ResultLog::open(&path).unwrap_err();
        assert!(matches!(err, OutputError::Locked { .. }), "{err}");
        drop(first);
        ResultLog::open(&path).unwrap();
    }

    #[test]
    fn a_device_is_refused_before_it_is_read() {
        let err = ResultLog::open(Path::new("/dev/zero")).unwrap_err();
        assert!(
            matches!(
                err,
                OutputError::NotAFile {
                    kind: "character device",
                    ..
                }
            ),
            "{err}"
        );
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
