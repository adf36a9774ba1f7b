//! The matrix as data: every fault scenario, and for each adapter the typed outcome it must end
//! in (`None`: the scenario does not apply to that adapter).
//!
//! An outcome is the kind of the typed error the last adapter call ended in
//! (`AdapterError::kind`, as the ledger records it), else `ok` (a valid answer) or `invalid` (the
//! answer failed its check), with the exit code `geode run` gives the whole run
//! (`geode::protocol::exit`).

use geode::vocab::ErrorKind;

/// The adapters, in column order.
pub const ADAPTERS: [&str; 10] = [
    "openai-payg",
    "codex-oauth",
    "anthropic-payg",
    "anthropic-oauth",
    "glm-payg",
    "glm-coding-plan",
    "claude-cli",
    "codex-cli",
    "local",
    "openai-compatible",
];

/// One misbehaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The provider answers this HTTP status with its usual error body.
    Status(u16),
    /// HTTP 429 with this `retry-after` (seconds), if any.
    RateLimited(Option<u64>),
    /// Nothing listens on the port.
    ConnectionRefused,
    /// Half the answer, then the connection is aborted.
    ResetMidStream,
    /// Half the answer, then a clean end before the terminal event.
    TruncatedStream,
    /// The request is read and never answered.
    HangBeforeHeaders,
    /// Headers and half the answer, then silence.
    HangMidBody,
    /// A 200 whose body never ends.
    EndlessStream,
    /// A complete 200 answer of 17 MiB.
    OversizedBody,
    /// A 200 of binary garbage.
    GarbageBody,
    /// A 200 HTML page instead of the answer.
    NonJsonBody,
    /// A server that ignores `"stream": true` and answers one JSON body.
    JsonToStreamRequest,
    /// A provider failure reported inside a 200 answer.
    InBandError,
    /// A 401 whose message quotes the credential.
    SecretInErrorBody,
    /// A 401 whose message quotes the credential after 250 characters of padding.
    SecretAfterPadding,
    /// An in-band error whose message quotes the credential.
    SecretInBandError,
    /// A valid answer that quotes the credential.
    SecretInAnswer,
    /// The CLI prints the credential on stderr and exits 1.
    SecretOnStderr,
    /// The CLI exits 1 with an error on stderr.
    CliCrash,
    /// The CLI starts a background child and both hang.
    CliHangWithChild,
    /// The CLI prints 64 MiB of non-JSON lines.
    CliGiantOutput,
    /// The CLI prints prose instead of JSON.
    CliNonJson,
    /// The CLI prints a valid answer, then hangs.
    CliAnswerThenHang,
    /// The CLI is killed by SIGKILL (exit 137).
    CliExit137,
    /// Eight concurrent calls with an expired access token.
    RefreshRace,
    /// The expired access token's refresh is refused (revoked refresh token).
    RefreshFails,
    /// The model file does not exist.
    ModelMissing,
    /// The model file is not a valid GGUF.
    ModelCorrupt,
    /// A schema llguidance cannot compile.
    UncompilableConstraint,
    /// The caller cancels while the model generates.
    CancelMidGeneration,
}

/// The budget a row relies on (marked ¹ and ² in the printout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// The response size budget (`AdapterError::ResponseTooLarge`).
    SizeBudget,
    /// The process-wide secret scrubber (`geode::secret::scrub`).
    Scrubber,
}

/// The outcome a cell must end in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expect {
    /// How the run must end.
    pub outcome: Outcome,
    /// The exit code of `geode run`.
    pub exit: u8,
}

/// One scenario and its expected outcome per adapter (in [`ADAPTERS`] order).
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The row label.
    pub id: &'static str,
    /// The misbehaviour.
    pub fault: Fault,
    /// The budget the row relies on, if any.
    pub guard: Option<Guard>,
    /// Expected outcome per adapter.
    pub cells: [Option<Expect>; 10],
}

/// How a run ended: a valid answer, an answer that failed its check, or the typed error of the
/// last adapter call. Shown as `ok`, `invalid` or the kind's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A successful result without an adapter error.
    Ok,
    /// The answer failed its check.
    Invalid,
    /// The last adapter call failed with this kind.
    Failed(ErrorKind),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ok => f.write_str("ok"),
            Self::Invalid => f.write_str("invalid"),
            Self::Failed(kind) => f.write_str(kind.as_str()),
        }
    }
}

const fn e(outcome: Outcome, exit: u8) -> Option<Expect> {
    Some(Expect { outcome, exit })
}

const fn fail(kind: ErrorKind, exit: u8) -> Option<Expect> {
    e(Outcome::Failed(kind), exit)
}

const NA: Option<Expect> = None;
const OK: Option<Expect> = e(Outcome::Ok, 0);
const AUTH: Option<Expect> = fail(ErrorKind::Auth, 3);
const BAD: Option<Expect> = fail(ErrorKind::BadRequest, 3);
const RATE: Option<Expect> = fail(ErrorKind::RateLimited, 3);
const SERVER: Option<Expect> = fail(ErrorKind::Server, 3);
const TRANSPORT: Option<Expect> = fail(ErrorKind::Transport, 3);
const TRUNC: Option<Expect> = fail(ErrorKind::Truncated, 3);
const PROTO: Option<Expect> = fail(ErrorKind::Protocol, 3);
const TIMEOUT: Option<Expect> = fail(ErrorKind::Timeout, 3);
const RUN: Option<Expect> = fail(ErrorKind::RunFailed, 3);
const TOO_LARGE: Option<Expect> = fail(ErrorKind::ResponseTooLarge, 3);
const CONFIG: Option<Expect> = fail(ErrorKind::Config, 2);
const UNSUPPORTED: Option<Expect> = fail(ErrorKind::Unsupported, 2);
/// A cancel is a typed `cancelled` error from the adapter, which the worker turns into the
/// reference's intended `user_cancelled` ending ("Interrupted.", a success: exit 0).
const CANCELLED: Option<Expect> = fail(ErrorKind::Cancelled, 0);

/// The same outcome for the seven HTTP adapters, none for the others.
const fn http(x: Option<Expect>) -> [Option<Expect>; 10] {
    family(x, x, x)
}

/// The HTTP adapters' outcome, then `claude-cli`'s and `codex-cli`'s.
const fn http_cli(
    x: Option<Expect>,
    claude: Option<Expect>,
    codex: Option<Expect>,
) -> [Option<Expect>; 10] {
    with_cli(http(x), claude, codex)
}

/// Per wire family: Responses (openai-payg, codex-oauth), Messages (anthropic-*), Chat (glm-*,
/// openai-compatible).
const fn family(
    responses: Option<Expect>,
    messages: Option<Expect>,
    chat: Option<Expect>,
) -> [Option<Expect>; 10] {
    [
        responses, responses, messages, messages, chat, chat, NA, NA, NA, chat,
    ]
}

/// The two CLI adapters.
const fn cli(claude: Option<Expect>, codex: Option<Expect>) -> [Option<Expect>; 10] {
    with_cli([NA; 10], claude, codex)
}

/// `cells` with `claude-cli`'s and `codex-cli`'s outcomes set.
const fn with_cli(
    mut cells: [Option<Expect>; 10],
    claude: Option<Expect>,
    codex: Option<Expect>,
) -> [Option<Expect>; 10] {
    cells[6] = claude;
    cells[7] = codex;
    cells
}

const fn only(index: usize, x: Option<Expect>) -> [Option<Expect>; 10] {
    let mut cells = [NA; 10];
    cells[index] = x;
    cells
}

const fn row(id: &'static str, fault: Fault, cells: [Option<Expect>; 10]) -> Row {
    Row {
        id,
        fault,
        guard: None,
        cells,
    }
}

const fn guarded(id: &'static str, fault: Fault, guard: Guard, cells: [Option<Expect>; 10]) -> Row {
    Row {
        id,
        fault,
        guard: Some(guard),
        cells,
    }
}

/// Every scenario, in the order the matrix prints them.
pub const ROWS: &[Row] = &[
    row("http 400", Fault::Status(400), http_cli(BAD, RUN, RUN)),
    row("http 401", Fault::Status(401), http_cli(AUTH, AUTH, AUTH)),
    row("http 403", Fault::Status(403), http_cli(AUTH, AUTH, AUTH)),
    row("http 404", Fault::Status(404), http(BAD)),
    row("http 408", Fault::Status(408), http(BAD)),
    row("http 409", Fault::Status(409), http(BAD)),
    row(
        "http 429",
        Fault::RateLimited(None),
        http_cli(RATE, RATE, RATE),
    ),
    row(
        "http 429 + retry-after 1 s",
        Fault::RateLimited(Some(1)),
        http(RATE),
    ),
    row(
        "http 429 + retry-after past the deadline",
        Fault::RateLimited(Some(3600)),
        http(RATE),
    ),
    row(
        "http 500",
        Fault::Status(500),
        http_cli(SERVER, SERVER, SERVER),
    ),
    row("http 502", Fault::Status(502), http(SERVER)),
    row(
        "http 503",
        Fault::Status(503),
        http_cli(SERVER, SERVER, SERVER),
    ),
    row(
        "http 529",
        Fault::Status(529),
        http_cli(SERVER, SERVER, SERVER),
    ),
    row(
        "connection refused",
        Fault::ConnectionRefused,
        http(TRANSPORT),
    ),
    row("reset mid-stream", Fault::ResetMidStream, http(TRUNC)),
    row("truncated stream", Fault::TruncatedStream, http(TRUNC)),
    row(
        "hang before headers",
        Fault::HangBeforeHeaders,
        http_cli(TIMEOUT, TIMEOUT, TIMEOUT),
    ),
    row("hang mid-body", Fault::HangMidBody, http(TIMEOUT)),
    guarded(
        "endless stream",
        Fault::EndlessStream,
        Guard::SizeBudget,
        http(TOO_LARGE),
    ),
    guarded(
        "oversized body (17 MiB)",
        Fault::OversizedBody,
        Guard::SizeBudget,
        http(TOO_LARGE),
    ),
    // Responses skips events of unknown type (forward compatibility), garbage included, so the
    // stream ends without its terminal event.
    row(
        "garbage body",
        Fault::GarbageBody,
        family(TRUNC, PROTO, PROTO),
    ),
    row("non-JSON (HTML) body", Fault::NonJsonBody, http(PROTO)),
    // The ChatGPT backend always streams (codex-oauth's fake cannot answer otherwise).
    row(
        "JSON body to a stream request",
        Fault::JsonToStreamRequest,
        [OK, NA, OK, OK, OK, OK, NA, NA, NA, OK],
    ),
    row(
        "in-band error event",
        Fault::InBandError,
        family(RUN, SERVER, RUN),
    ),
    guarded(
        "secret in an error body",
        Fault::SecretInErrorBody,
        Guard::Scrubber,
        http_cli(AUTH, AUTH, AUTH),
    ),
    guarded(
        "secret after 250 chars of padding",
        Fault::SecretAfterPadding,
        Guard::Scrubber,
        http(AUTH),
    ),
    guarded(
        "secret in an in-band error",
        Fault::SecretInBandError,
        Guard::Scrubber,
        family(RUN, SERVER, RUN),
    ),
    guarded(
        "secret quoted in the answer",
        Fault::SecretInAnswer,
        Guard::Scrubber,
        http(OK),
    ),
    guarded(
        "secret on the CLI's stderr",
        Fault::SecretOnStderr,
        Guard::Scrubber,
        cli(RUN, RUN),
    ),
    row("CLI crash", Fault::CliCrash, cli(RUN, RUN)),
    row(
        "CLI hang with a background child",
        Fault::CliHangWithChild,
        cli(TIMEOUT, TIMEOUT),
    ),
    guarded(
        "CLI giant output (64 MiB)",
        Fault::CliGiantOutput,
        Guard::SizeBudget,
        cli(TOO_LARGE, TOO_LARGE),
    ),
    row("CLI non-JSON output", Fault::CliNonJson, cli(TRUNC, TRUNC)),
    row(
        "CLI valid answer, then a hang",
        Fault::CliAnswerThenHang,
        cli(TIMEOUT, TIMEOUT),
    ),
    row("CLI exit 137 (SIGKILL)", Fault::CliExit137, cli(RUN, RUN)),
    row(
        "oauth refresh race (8 calls)",
        Fault::RefreshRace,
        only(1, OK),
    ),
    row("oauth refresh refused", Fault::RefreshFails, only(1, AUTH)),
    row("model file missing", Fault::ModelMissing, only(8, CONFIG)),
    row("model file corrupt", Fault::ModelCorrupt, only(8, CONFIG)),
    row(
        "uncompilable constraint",
        Fault::UncompilableConstraint,
        only(8, UNSUPPORTED),
    ),
    row(
        "cancel mid-generation",
        Fault::CancelMidGeneration,
        only(8, CANCELLED),
    ),
];

/// The expected outcomes as a markdown table (the fault matrix in `docs/reliability.md`).
pub fn markdown() -> String {
    let mut out = String::from("| scenario |");
    for a in ADAPTERS {
        out.push_str(&format!(" {a} |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(ADAPTERS.len()));
    out.push('\n');
    for r in ROWS {
        let mark = match r.guard {
            Some(Guard::SizeBudget) => " ¹",
            Some(Guard::Scrubber) => " ²",
            None => "",
        };
        out.push_str(&format!("| {}{mark} |", r.id));
        for cell in r.cells {
            match cell {
                Some(x) => out.push_str(&format!(" {} ({}) |", x.outcome, x.exit)),
                None => out.push_str(" · |"),
            }
        }
        out.push('\n');
    }
    out
}

/// Applicable cells.
pub fn applicable() -> usize {
    ROWS.iter().map(|r| r.cells.iter().flatten().count()).sum()
}
