//! Secrets: the [`Secret`] newtype and the one scrubber every outgoing string passes through.
//!
//! Contract:
//! - A [`Secret`] never shows its value through `Debug` or `Display` (both print `***`); the value
//!   is reachable only through [`Secret::expose`], which transports call to build a header.
//! - Every secret this process holds is known to [`scrub`]: each [`Secret::new`] registers its
//!   value, and on first use the scrubber also learns, from the environment, every variable whose
//!   name marks a credential (`*_KEY`, `*API_KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*_AUTH`)
//!   and, from the credential files the adapters and CLIs read (`$CODEX_HOME/auth.json`,
//!   `$CLAUDE_CONFIG_DIR/.credentials.json`, defaults under `~`), every token in them. That
//!   covers keys geode never wraps itself: the ones the `claude` and `codex` CLIs read from the
//!   same environment and files. [`learn_env_var`] adds a variable by name (a CLI's own `env_key`).
//! - [`scrub`] replaces every known secret of [`MIN_SECRET_LEN`] or more characters with `***`,
//!   and also any run of key characters of [`MIN_FRAGMENT_LEN`] or more that is a piece of a
//!   secret, so a key cut short by a provider or a truncation never survives in part. It is
//!   idempotent. It runs before any truncation: [`clip`] is the one way provider text is cut
//!   into an error message, and it scrubs first.
//! - Where it runs (the library's exits): [`crate::llm::call::AdapterError`]'s `Display` and
//!   `Debug`, the loop's [`crate::agent::agent_loop::AgenticResult`] and the worker's
//!   [`crate::protocol::WorkerResult`] (answer, summary, error and ledger, by
//!   [`scrub_serde`]), and the CLI's error line.
//!
//! ```
//! use geode::secret::{scrub, Secret};
//! let key = Secret::new("sk-doc-example-0123456789");
//! assert_eq!(format!("{key:?}"), "Secret(***)");
//! assert_eq!(scrub("bad key sk-doc-example-0123456789!"), "bad key ***!");
//! assert_eq!(scrub("key starts sk-doc-example-01…"), "key starts ***…");
//! ```

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasherDefault, DefaultHasher};
use std::path::PathBuf;
use std::sync::{Once, RwLock};

type FixedState = BuildHasherDefault<DefaultHasher>;

/// Shorter values are not registered: scrubbing them would mangle ordinary words.
pub const MIN_SECRET_LEN: usize = 8;
/// A run of key characters this long that is a piece of a known secret is scrubbed too.
pub const MIN_FRAGMENT_LEN: usize = 12;

/// A credential value (API key, access or refresh token). `Debug` and `Display` print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential value and registers it with the scrubber.
    pub fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        register(&value);
        Self(value)
    }

    /// The raw value, for building a header or a refresh body. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when the value is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Known secret values, longest first (so a secret containing another is replaced whole), and
/// every [`MIN_FRAGMENT_LEN`]-character window of them, to find pieces in one look-up per run.
struct Known {
    values: Vec<String>,
    windows: HashSet<String, FixedState>,
}

static KNOWN: RwLock<Known> = RwLock::new(Known {
    values: Vec::new(),
    windows: HashSet::with_hasher(FixedState::new()),
});
static LEARNED_AMBIENT: Once = Once::new();

/// Registers a value the scrubber must hide (ignored when shorter than [`MIN_SECRET_LEN`]).
pub fn register(value: &str) {
    let value = value.trim();
    if value.chars().count() < MIN_SECRET_LEN {
        return;
    }
    let mut known = KNOWN.write().unwrap_or_else(|p| p.into_inner());
    if known.values.iter().any(|k| k == value) {
        return;
    }
    let at = known.values.partition_point(|k| k.len() >= value.len());
    known.values.insert(at, value.to_owned());
    let chars: Vec<char> = value.chars().collect();
    for w in chars.windows(MIN_FRAGMENT_LEN) {
        known.windows.insert(w.iter().collect());
    }
}

/// Registers the value of environment variable `name`, when set (a CLI's own `env_key`).
pub fn learn_env_var(name: &str) {
    if let Ok(v) = std::env::var(name) {
        register(&v);
    }
}

/// True when an environment variable's name marks a credential.
pub fn is_credential_var(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    n.ends_with("_KEY")
        || n.ends_with("_AUTH")
        || ["API_KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"]
            .iter()
            .any(|m| n.contains(m))
}

/// Learns the ambient secrets once: credential variables and credential files.
fn learn_ambient() {
    LEARNED_AMBIENT.call_once(|| {
        for (name, value) in std::env::vars_os() {
            if let (Some(name), Some(value)) = (name.to_str(), value.to_str())
                && is_credential_var(name)
            {
                register(value);
            }
        }
        for path in credential_files() {
            learn_file(&path);
        }
    });
}

/// The credential files the adapters and the CLIs read.
fn credential_files() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let dir = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(default)))
    };
    let mut files = Vec::new();
    if let Some(d) = dir("CODEX_HOME", ".codex") {
        files.push(d.join("auth.json"));
    }
    if let Some(d) = dir("CLAUDE_CONFIG_DIR", ".claude") {
        files.push(d.join(".credentials.json"));
    }
    files
}

/// Registers every token-like string of a JSON credential file (missing or unreadable: nothing).
pub fn learn_file(path: &std::path::Path) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) {
        learn_json(&doc, false);
    }
}

fn learn_json(v: &serde_json::Value, secret_key: bool) {
    match v {
        serde_json::Value::String(s) if secret_key => register(s),
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let k = k.to_ascii_lowercase();
                let secret = ["token", "key", "secret"].iter().any(|m| k.contains(m));
                learn_json(v, secret);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| learn_json(v, secret_key)),
        _ => {}
    }
}

/// Characters keys and tokens are made of (base64, base64url, JWT dots, dashes).
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '/' | '~')
}

/// Replaces every known secret (and every long piece of one) in `text` with `***`.
///
/// Idempotent: `scrub(&scrub(t)) == scrub(t)`.
pub fn scrub(text: &str) -> String {
    learn_ambient();
    let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
    if known.values.is_empty() {
        return text.to_owned();
    }
    let mut out = text.to_owned();
    for s in &known.values {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "***");
        }
    }
    scrub_fragments(&out, &known)
}

/// Replaces, in each maximal run of key characters, a piece of a known secret at either end of
/// the run (the shape a cut-off key takes) with `***`, keeping the rest of the run.
fn scrub_fragments(text: &str, known: &Known) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(is_key_char) {
        out.push_str(&rest[..start]);
        let run_len = rest[start..]
            .find(|c: char| !is_key_char(c))
            .unwrap_or(rest.len() - start);
        scrub_run(&rest[start..start + run_len], known, &mut out);
        rest = &rest[start + run_len..];
    }
    out.push_str(rest);
    out
}

/// One run of (ASCII) key characters: its longest secret piece at the start, then at the end,
/// becomes `***`. A run whose end windows are not pieces costs two set look-ups.
fn scrub_run(run: &str, known: &Known, out: &mut String) {
    let is_piece = |p: &str| known.values.iter().any(|k| k.contains(p));
    let n = run.len();
    if n >= MIN_FRAGMENT_LEN && known.windows.contains(&run[..MIN_FRAGMENT_LEN]) {
        let mut len = MIN_FRAGMENT_LEN;
        while len < n && is_piece(&run[..=len]) {
            len += 1;
        }
        out.push_str("***");
        return scrub_run(&run[len..], known, out);
    }
    if n > MIN_FRAGMENT_LEN && known.windows.contains(&run[n - MIN_FRAGMENT_LEN..]) {
        let mut len = MIN_FRAGMENT_LEN;
        while len < n && is_piece(&run[n - len - 1..]) {
            len += 1;
        }
        out.push_str(&run[..n - len]);
        out.push_str("***");
        return;
    }
    out.push_str(run);
}

/// The longest run of non-space text a [`StreamScrub`] holds back: beyond any key or token, and
/// a bound on what one stream keeps waiting.
const MAX_HELD: usize = 4096;

/// Scrubs text that arrives in pieces (a stream's deltas), so that a secret cut across two pieces
/// is still found: the trailing run of non-space characters is held back until the next piece
/// (or [`Self::finish`]) shows where it ends. A run longer than `MAX_HELD` (4 KiB) is let go,
/// scrubbed, rather than held without end.
#[derive(Debug, Default)]
pub struct StreamScrub {
    held: String,
}

impl StreamScrub {
    /// The scrubbed text that `piece` completes (possibly empty).
    pub fn push(&mut self, piece: &str) -> String {
        self.held.push_str(piece);
        let run_start = self
            .held
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        let cut = if self.held.len() - run_start > MAX_HELD {
            self.held.len()
        } else {
            run_start
        };
        let ready: String = self.held.drain(..cut).collect();
        scrub(&ready)
    }

    /// What is still held, scrubbed: the end of the stream.
    pub fn finish(&mut self) -> String {
        scrub(&std::mem::take(&mut self.held))
    }
}

/// Scrubs `text` ([`scrub`]), folds it to one line (whitespace runs become one space) and cuts it
/// at `max` characters, marked with `…`: the one way provider text becomes an error message.
/// Scrubbing comes first, so a cut can never leave the start of a key behind.
pub fn clip(text: &str, max: usize) -> String {
    let one_line = scrub(text).split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// Scrubs every string (and map key) inside a serialisable value: answers, ledgers, results.
/// Runs the walk only when the serialised form holds a secret, so a clean value costs one
/// serialisation. The walk changes strings only, so the value's shape always survives.
pub fn scrub_serde<T: Serialize + DeserializeOwned>(value: T) -> T {
    let Ok(json) = serde_json::to_string(&value) else {
        return value;
    };
    if scrub(&json) == json {
        return value;
    }
    let Ok(mut tree) = serde_json::from_str::<serde_json::Value>(&json) else {
        return value;
    };
    scrub_value(&mut tree);
    serde_json::from_value(tree).unwrap_or(value)
}

/// Scrubs every string and object key of a JSON value in place.
pub fn scrub_value(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => *s = scrub(s),
        Value::Array(a) => a.iter_mut().for_each(scrub_value),
        Value::Object(m) => {
            let old = std::mem::take(m);
            for (k, mut v) in old {
                scrub_value(&mut v);
                m.insert(scrub(&k), v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
