//! A hostile pass over `geode batch`, through the real binary against a loopback fake provider.
//!
//! What it proves, each case bounded in time and checked for a panic on stderr:
//! - a 50 MB line (garbage, a wrongly typed field, a prompt) and lines nested 100,000 deep are a
//!   bad line named by number or a task like any other, and no error, summary or result quotes
//!   the 50 MB back;
//! - task ids holding newlines and control characters round-trip through the results, one line
//!   per result, and errors quote them escaped and cut;
//! - an `--output` that is a directory, a device (`/dev/full`, `/dev/zero` behind a symlink), a
//!   FIFO, read-only, the input itself, or that fills up mid-run is refused or stopped with a
//!   typed error and exit 2, before any call when it can be, leaving only whole lines; a
//!   symlink to a file is followed; a piped `--input` is refused instead of read as empty;
//! - garbage in the middle of an existing output is reported by line number and left alone, and
//!   the resume neither loses nor doubles a result (a fragment holding only a `task_id`, or an
//!   input line, is not taken for a result);
//! - a second batch on an output in use is refused while the first finishes alone;
//! - SIGKILL at seeded moments, then a resume: every task ends with exactly one whole line.

use crate::support;

use geode_fakes::Reply;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::batch::{batch_args, sandbox, shorthand};
use support::{Outcome, RUN_BOUND, Sandbox, glm_answering, good_answer, model_calls};

/// `geode batch ... --summary-json summary.json EXTRA` in `sb`, bounded.
async fn batch(sb: &Sandbox, extra: &[&str]) -> Outcome {
    let mut args = vec!["--summary-json", "summary.json"];
    args.extend_from_slice(extra);
    let args = batch_args(&args);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.geode(&args, "").await
}

/// `batch_args` with `--output` replaced by `output`.
fn args_with_output(output: &str, extra: &[&str]) -> Vec<String> {
    let mut args = batch_args(extra);
    let at = args.iter().position(|a| a == "--output").unwrap() + 1;
    args[at] = output.to_owned();
    args
}

async fn geode(sb: &Sandbox, args: &[String]) -> Outcome {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.geode(&args, "").await
}

/// Fails when the run panicked (a typed error is expected everywhere).
#[track_caller]
fn assert_no_panic(out: &Outcome) {
    assert!(
        !out.stderr.contains("panicked") && !out.stdout.contains("panicked"),
        "{}",
        out.dump()
    );
}

/// Runs a prepared command with stderr captured, bounded by [`RUN_BOUND`].
fn run_std(mut cmd: Command) -> Outcome {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out_pipe = child.stdout.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let (code, stderr) = finish(child);
    Outcome {
        code,
        stdout: out.join().unwrap(),
        stderr,
    }
}

/// Every line of the results file, parsed; fails on a torn (unterminated) last line.
fn lines(dir: &Path, file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a torn line: {text}"
    );
    text.split_terminator('\n')
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect()
}

/// task id → how many result lines it has, over the lines that are results (`task_id` and a
/// boolean `success`).
fn result_ids(dir: &Path) -> BTreeMap<String, usize> {
    let text = String::from_utf8_lossy(&std::fs::read(dir.join("out.jsonl")).unwrap_or_default())
        .into_owned();
    let mut ids = BTreeMap::new();
    for line in text.split_terminator('\n') {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let (Some(id), Some(_)) = (v["task_id"].as_str(), v["success"].as_bool()) {
            *ids.entry(id.to_owned()).or_insert(0) += 1;
        }
    }
    ids
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

fn task(id: &str) -> String {
    json!({"task_id": id, "prompt": "Decide."}).to_string() + "\n"
}

const MIB_50: usize = 50 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mb_line_is_a_bad_line_or_a_task_and_no_output_quotes_it_back() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let big = "x".repeat(MIB_50);
    let typed = json!({"task_id": "typed", "description": "d", "max_rounds": big}).to_string();
    let huge_prompt = json!({"task_id": "huge", "prompt": format!("Decide. {big}")}).to_string();
    let input = [
        task("t000"),
        format!("{big}\n"),
        task("t001"),
        format!("{typed}\n"),
        format!("{huge_prompt}\n"),
    ]
    .concat();
    drop(big);
    let sb = sandbox(&server, &input);
    drop(input);
    let out = batch(&sb, &[]).await;
    assert_no_panic(&out);
    out.assert_exit(2); // two bad lines
    let ids = result_ids(sb.cwd.path());
    assert_eq!(ids.keys().collect::<Vec<_>>(), ["huge", "t000", "t001"]);
    let s = summary(sb.cwd.path());
    let bad: Vec<u64> = s["bad_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["line"].as_u64().unwrap())
        .collect();
    assert_eq!(bad, [2, 4]);
    assert!(
        s["bad_lines"][1]["message"]
            .as_str()
            .unwrap()
            .contains("max_rounds"),
        "{s}"
    );
    // Neither stderr nor the summary quotes the 50 MB value back (it was 52 MB of each).
    assert!(
        out.stderr.len() < 16 << 10,
        "stderr: {} bytes",
        out.stderr.len()
    );
    let summary_len = std::fs::metadata(sb.cwd.path().join("summary.json"))
        .unwrap()
        .len();
    assert!(summary_len < 16 << 10, "summary.json: {summary_len} bytes");
    // The 50 MB prompt went to the provider whole, as one task.
    assert_eq!(model_calls(&server).len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_nested_100000_deep_are_bad_lines_and_a_deep_schema_still_runs() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let mut schema = json!({"type": "string"});
    for _ in 0..120 {
        schema = json!({"type": "array", "items": schema});
    }
    let deep_schema = json!({"task_id": "deep-schema", "description": "Decide.",
        "response_schema": schema});
    let input = [
        "[".repeat(100_000) + "\n",
        format!(
            r#"{{"task_id":"deep","prompt":"p","metadata":{}"#,
            "[".repeat(100_000)
        ) + "\n",
        format!("{deep_schema}\n"),
        task("t000"),
    ]
    .concat();
    let sb = sandbox(&server, &input);
    let out = batch(&sb, &[]).await;
    assert_no_panic(&out);
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("bad input line 1: not JSON: recursion limit exceeded")
            && out
                .stderr
                .contains("bad input line 2: not JSON: recursion limit exceeded"),
        "{}",
        out.dump()
    );
    let ids = result_ids(sb.cwd.path());
    assert_eq!(ids.keys().collect::<Vec<_>>(), ["deep-schema", "t000"]);
    assert!(ids.values().all(|n| *n == 1));
}

/// Task ids with every kind of line break and control character.
fn hostile_ids() -> Vec<String> {
    [
        "new\nline",
        "carriage\rreturn",
        "crlf\r\n",
        "tab\there",
        "nul\u{0}byte",
        "esc\u{1b}[31mred\u{1b}[0m",
        "bell\u{7}",
        "del\u{7f}",
        "nel\u{85}",
        "line-sep\u{2028}para-sep\u{2029}",
        "quote\"and\\backslash",
        " ",
        "{\"task_id\":\"inner\"}",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_ids_with_newlines_and_control_characters_round_trip_one_line_each() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let ids = hostile_ids();
    let input: String = ids.iter().map(|id| task(id)).collect();
    let sb = sandbox(&server, &input);
    let out = batch(&sb, &[]).await;
    assert_no_panic(&out);
    out.assert_exit(0);
    for raw in ['\u{1b}', '\u{0}', '\r', '\u{7}'] {
        assert!(!out.stderr.contains(raw), "raw {raw:?} on stderr");
    }
    // No Unicode line break is written raw (a reader splitting on them, as Python's
    // `splitlines` does, would cut the line); one '\n'-terminated line per result, each parsing
    // back to its exact id.
    let text = std::fs::read_to_string(sb.cwd.path().join("out.jsonl")).unwrap();
    for raw in ['\u{85}', '\u{2028}', '\u{2029}'] {
        assert!(!text.contains(raw), "raw {raw:?} in out.jsonl");
    }
    let written = lines(sb.cwd.path(), "out.jsonl");
    assert_eq!(written.len(), ids.len());
    let mut got: Vec<String> = written
        .iter()
        .map(|r| r["task_id"].as_str().unwrap().to_owned())
        .collect();
    let mut want = ids.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(summary(sb.cwd.path())["valid"], ids.len());
    // The resume reads the same ids back: nothing runs twice, nothing is appended.
    let again = batch(&sb, &[]).await;
    again.assert_exit(0);
    assert_eq!(summary(sb.cwd.path())["skipped"], ids.len());
    assert_eq!(lines(sb.cwd.path(), "out.jsonl").len(), ids.len());
    assert_eq!(model_calls(&server).len(), ids.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_ids_are_quoted_escaped_and_cut() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let control = "dup\u{1b}[2J\n";
    let long = "i".repeat(1 << 20);
    let input = [
        task(control),
        task("ok"),
        task(control),
        task(&long),
        task(&long),
    ]
    .concat();
    let sb = sandbox(&server, &input);
    let out = batch(&sb, &[]).await;
    assert_no_panic(&out);
    out.assert_exit(2);
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("duplicate"))
        .unwrap();
    assert!(
        line.contains(r#""dup\u{1b}[2J\n" on lines 1, 3"#),
        "{}",
        out.dump()
    );
    assert!(!out.stderr.contains('\u{1b}'), "raw ESC: {}", out.dump());
    // The 1 MB id is cut in the message, with its size (it was 1 MB of stderr).
    assert!(
        line.contains("… (1048576 bytes) on lines 4, 5"),
        "{line:.300}"
    );
    assert!(
        out.stderr.len() < 4096,
        "stderr: {} bytes",
        out.stderr.len()
    );
    assert!(model_calls(&server).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_that_is_a_directory_a_device_or_a_fifo_is_refused_before_any_call() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let sb = sandbox(&server, &shorthand(0..3));
    let dir = sb.cwd.path();
    std::fs::create_dir(dir.join("a-dir")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero-link")).unwrap();
    std::os::unix::fs::symlink(dir.join("a-dir"), dir.join("dir-link")).unwrap();
    let mkfifo = Command::new("mkfifo")
        .arg(dir.join("a-fifo"))
        .status()
        .unwrap();
    assert!(mkfifo.success());
    for (output, needle) in [
        ("a-dir", "Is a directory"),
        ("dir-link", "Is a directory"),
        // Reading /dev/full or /dev/zero back never ends: before the fix, a hang that ate memory.
        ("/dev/full", "is a character device, not a regular file"),
        ("zero-link", "is a character device, not a regular file"),
        ("a-fifo", "is a FIFO, not a regular file"),
    ] {
        let out = geode(&sb, &args_with_output(output, &[])).await;
        assert_no_panic(&out);
        out.assert_exit(2);
        assert!(
            out.stderr.contains(output) && out.stderr.contains(needle),
            "{output}: {}",
            out.dump()
        );
    }
    assert!(model_calls(&server).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_output_is_followed_and_resumes() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let sb = sandbox(&server, &shorthand(0..4));
    let dir = sb.cwd.path();
    std::fs::create_dir(dir.join("real")).unwrap();
    // Dangling at first: the run creates the file it points to, like a shell redirection.
    std::os::unix::fs::symlink(dir.join("real/results.jsonl"), dir.join("out.jsonl")).unwrap();
    batch(&sb, &[]).await.assert_exit(0);
    assert!(
        std::fs::symlink_metadata(dir.join("out.jsonl"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(lines(&dir.join("real"), "results.jsonl").len(), 4);
    let again = batch(&sb, &[]).await;
    again.assert_exit(0);
    assert_eq!(summary(dir)["skipped"], 4);
    assert_eq!(model_calls(&server).len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_output_is_refused_with_its_path_and_left_untouched() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let server = glm_answering(Reply::Json(good_answer())).await;
    let sb = sandbox(&server, &shorthand(0..3));
    let dir = sb.cwd.path();
    let before = "{\"task_id\":\"t000\",\"success\":true}\n";
    std::fs::write(dir.join("out.jsonl"), before).unwrap();
    std::fs::set_permissions(dir.join("out.jsonl"), PermissionsExt::from_mode(0o444)).unwrap();
    let mut args = batch_args(&[]);
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(dir).unwrap()) == 0;
    let cmd = if root {
        // Root writes through a read-only mode: run the binary as `nobody` then, so the file is
        // read-only to it whoever runs the tests. The checkout may sit in a folder only its
        // owner can enter (`mktemp -d`), so the binary and the schema are copied in.
        for d in [dir, sb.home()] {
            std::fs::set_permissions(d, PermissionsExt::from_mode(0o777)).unwrap();
        }
        let geode = dir.join("geode");
        std::fs::copy(env!("CARGO_BIN_EXE_geode"), &geode).unwrap();
        let at = args.iter().position(|a| a == "--schema").unwrap() + 1;
        std::fs::copy(&args[at], dir.join("decision.schema.json")).unwrap();
        args[at] = "decision.schema.json".to_owned();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = sb.wrapped_binary(&[], &geode, &args);
        cmd.uid(65534).gid(65534);
        cmd
    } else {
        sb.command(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let out = run_std(cmd);
    assert_no_panic(&out);
    out.assert_exit(2);
    assert!(
        out.stderr.contains("out.jsonl") && out.stderr.contains("Permission denied"),
        "{}",
        out.dump()
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("out.jsonl")).unwrap(),
        before
    );
    assert!(model_calls(&server).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_fills_mid_batch_leaves_whole_lines_and_a_rerun_finishes() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let sb = sandbox(&server, &shorthand(0..1));
    // The size of one result line, from a one-task run.
    geode(&sb, &args_with_output("probe.jsonl", &[]))
        .await
        .assert_exit(0);
    let line_len = std::fs::metadata(sb.cwd.path().join("probe.jsonl"))
        .unwrap()
        .len();
    std::fs::write(sb.cwd.path().join("in.jsonl"), shorthand(0..20)).unwrap();
    // No tmpfs without privileges: RLIMIT_FSIZE makes writes past ~3.5 lines fail (EFBIG)
    // the way a full disk does (ENOSPC), part-way through a line. SIGXFSZ is ignored so the
    // write fails instead of killing the process.
    let blocks = (line_len * 7 / 2).div_ceil(512);
    let args = batch_args(&["--concurrency", "1"]);
    let script = format!("trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\"");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_std(sb.wrapped(&["sh", "-c", &script], &args));
    assert_no_panic(&out);
    out.assert_exit(2);
    // Only whole lines: the partial write was cut back (no torn line to cut next time).
    let kept = lines(sb.cwd.path(), "out.jsonl");
    assert!((1..20).contains(&kept.len()), "{} lines", kept.len());
    assert!(
        out.stderr
            .contains("cannot append to results file out.jsonl")
            && out.stderr.contains("File too large")
            && out.stderr.contains("a re-run resumes"),
        "{}",
        out.dump()
    );
    assert_eq!(
        out.stderr.matches("File too large").count(),
        1,
        "{}",
        out.dump()
    );
    let again = batch(&sb, &[]).await;
    again.assert_exit(0);
    assert!(!again.stderr.contains("torn"), "{}", again.dump());
    let ids = result_ids(sb.cwd.path());
    assert_eq!(ids.len(), 20, "{ids:?}");
    assert!(ids.values().all(|n| *n == 1), "{ids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_on_a_full_device_is_an_error_and_the_results_stay() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let sb = sandbox(&server, &shorthand(0..3));
    let args = batch_args(&["--summary-json", "/dev/full"]);
    let out = geode(&sb, &args).await;
    assert_no_panic(&out);
    out.assert_exit(2);
    assert!(
        out.stderr.contains("cannot write /dev/full")
            && out.stderr.contains("No space left on device"),
        "{}",
        out.dump()
    );
    assert_eq!(lines(sb.cwd.path(), "out.jsonl").len(), 3);
    let again = batch(&sb, &[]).await;
    again.assert_exit(0);
    assert_eq!(summary(sb.cwd.path())["skipped"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_input_given_as_the_output_is_refused_and_left_untouched() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    // An unterminated last line, which opening it as results would have cut as a torn line.
    let input = shorthand(0..3) + r#"{"task_id":"t003","prompt":"Decide."}"#;
    let sb = sandbox(&server, &input);
    std::os::unix::fs::symlink("in.jsonl", sb.cwd.path().join("alias.jsonl")).unwrap();
    for output in ["in.jsonl", "alias.jsonl"] {
        let out = geode(&sb, &args_with_output(output, &[])).await;
        assert_no_panic(&out);
        out.assert_exit(2);
        assert!(
            out.stderr
                .contains(&format!("--output {output} is the same file as --input")),
            "{}",
            out.dump()
        );
    }
    assert_eq!(
        std::fs::read_to_string(sb.cwd.path().join("in.jsonl")).unwrap(),
        input
    );
    assert!(model_calls(&server).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piped_or_directory_input_is_refused_not_read_as_empty() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let sb = sandbox(&server, "");
    std::fs::create_dir(sb.cwd.path().join("tasks")).unwrap();
    let mut args = batch_args(&[]);
    let at = args.iter().position(|a| a == "--input").unwrap() + 1;
    // Read twice (ids first), a pipe is empty the second time: it ran nothing and exited 0.
    args[at] = "/dev/stdin".to_owned();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sb.geode(&argv, &shorthand(0..3)).await;
    assert_no_panic(&out);
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("the input /dev/stdin is a FIFO, not a regular file"),
        "{}",
        out.dump()
    );
    args[at] = "tasks".to_owned();
    let out = geode(&sb, &args).await;
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("the input tasks is a directory, not a regular file"),
        "{}",
        out.dump()
    );
    assert!(model_calls(&server).is_empty());
    assert!(!sb.cwd.path().join("out.jsonl").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_the_middle_of_the_output_is_reported_and_nothing_is_lost_or_doubled() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let sb = sandbox(&server, &shorthand(0..6));
    batch(&sb, &[]).await.assert_exit(0);
    let path = sb.cwd.path().join("out.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let by_id: BTreeMap<String, String> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["task_id"].as_str().unwrap().to_owned(), l.to_owned())
        })
        .collect();
    let half = &by_id["t002"][..by_id["t002"].len() / 2];
    let mut corrupt: Vec<u8> = Vec::new();
    for line in [
        by_id["t000"].as_bytes(),
        b"\x00\x00\xff\xfe binary garbage",
        by_id["t001"].as_bytes(),
        format!("{half}{}", by_id["t003"]).as_bytes(), // two lines run together
        br#"{"task_id":"t004"}"#,                      // a fragment with only an id
        b"[1,2,3]",
        br#"{"task_id":"t002","prompt":"Decide."}"#, // an input line
        by_id["t005"].as_bytes(),
    ] {
        corrupt.extend_from_slice(line);
        corrupt.push(b'\n');
    }
    std::fs::write(&path, &corrupt).unwrap();
    std::fs::write(sb.cwd.path().join("in.jsonl"), shorthand(0..8)).unwrap();
    let out = batch(&sb, &[]).await;
    assert_no_panic(&out);
    out.assert_exit(0);
    assert!(
        out.stderr.contains(
            "out.jsonl: 5 line(s) are not results (line 2, 4, 5, 6, 7); they are left as they are"
        ),
        "{}",
        out.dump()
    );
    let s = summary(sb.cwd.path());
    assert_eq!(
        (
            s["skipped"].as_u64(),
            s["valid"].as_u64(),
            s["unreadable_lines"].as_u64()
        ),
        (Some(3), Some(5), Some(5)),
        "{s}"
    );
    // Every task has exactly one result line; the garbage is still there, byte for byte.
    let ids = result_ids(sb.cwd.path());
    assert_eq!(ids.len(), 8, "{ids:?}");
    assert!(ids.values().all(|n| *n == 1), "{ids:?}");
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&corrupt));
    assert_eq!(model_calls(&server).len(), 6 + 5);
}

#[test]
fn a_second_batch_on_an_output_in_use_is_refused_and_the_first_finishes_alone() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::slow(200, Reply::Json(good_answer()))));
    let sb = sandbox(&server, &shorthand(0..10));
    let args = batch_args(&["--concurrency", "1"]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let first = sb.spawn(&argv);
    let path = sb.cwd.path().join("out.jsonl");
    let deadline = Instant::now() + RUN_BOUND;
    while std::fs::read_to_string(&path).map_or(0, |t| t.lines().count()) < 1 {
        assert!(Instant::now() < deadline, "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = rt.block_on(sb.geode(&argv, ""));
    assert_no_panic(&second);
    second.assert_exit(2);
    assert!(
        second
            .stderr
            .contains("results file out.jsonl is in use by another geode batch"),
        "{}",
        second.dump()
    );
    let (code, stderr) = finish(first);
    assert_eq!(code, Some(0), "{stderr}");
    let ids = result_ids(sb.cwd.path());
    assert_eq!(ids.len(), 10);
    assert!(ids.values().all(|n| *n == 1), "{ids:?}");
    // The second batch made no call: every call is the first's, one per task.
    assert_eq!(model_calls(&server).len(), 10);
}

/// Waits (bounded) for a spawned child and returns its exit code and stderr.
fn finish(mut child: std::process::Child) -> (Option<i32>, String) {
    let mut pipe = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + RUN_BOUND;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("a geode process exceeded {RUN_BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), err.join().unwrap())
}

/// A small deterministic generator (xorshift64*), so a failing kill schedule can be replayed.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[test]
fn sigkill_at_seeded_moments_then_a_resume_leaves_one_whole_line_per_task() {
    const TASKS: usize = 60;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::slow(100, Reply::Json(good_answer()))));
    let sb = sandbox(&server, &shorthand(0..TASKS));
    let args = batch_args(&["--concurrency", "4"]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut rng = Seeded(0x05ee_d0f6_e0de);
    // The first kill lands during start-up (opening, locking, reading), the others mid-run.
    let mut delays = vec![rng.below(30)];
    delays.extend((0..5).map(|_| 50 + rng.below(1200)));
    for (round, ms) in delays.iter().enumerate() {
        let mut child = sb.spawn(&argv);
        std::thread::sleep(Duration::from_millis(*ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(!err.contains("panicked"), "round {round} ({ms} ms): {err}");
        // Between kills: complete lines are results, none twice (a torn tail is allowed; the
        // next start cuts it).
        let text = std::fs::read_to_string(sb.cwd.path().join("out.jsonl")).unwrap_or_default();
        let whole = text.rfind('\n').map_or("", |i| &text[..=i]);
        let mut seen = std::collections::HashSet::new();
        for line in whole.lines() {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("round {round} ({ms} ms): {e}: {line}"));
            let id = v["task_id"].as_str().unwrap().to_owned();
            assert!(seen.insert(id), "round {round} ({ms} ms): a second line");
        }
    }
    let out = rt.block_on(batch(&sb, &["--concurrency", "4"]));
    assert_no_panic(&out);
    out.assert_exit(0);
    let all = lines(sb.cwd.path(), "out.jsonl");
    assert_eq!(all.len(), TASKS, "kills at {delays:?} ms");
    let ids = result_ids(sb.cwd.path());
    assert_eq!(ids.len(), TASKS, "kills at {delays:?} ms");
    assert!(ids.values().all(|n| *n == 1), "{ids:?}");
    assert!(all.iter().all(|r| r["success"] == true));
}
