//! The engine protocol both ways: `serve` over in-memory pipes with a scripted adapter, and
//! [`EngineProcess`] against real processes (small shell engines speaking the protocol).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::llm::adapter::Adapter;
use crate::llm::call::{CallCx, TextSink};
use crate::llm::request::{AdapterCallRequest, AdapterResponse, Message};
use crate::llm::scripted::ScriptedAdapter;
use crate::vocab::ErrorKind;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn request() -> AdapterCallRequest {
    AdapterCallRequest::new("m", vec![Message::user("hi")])
}

fn answer(text: &str) -> AdapterResponse {
    AdapterResponse {
        text: text.to_owned(),
        ..AdapterResponse::default()
    }
}

fn call_line(stream: bool) -> String {
    let call = EngineCall {
        id: None,
        request: request(),
        max_response_bytes: 1 << 20,
        timeout_ms: None,
        stream,
    };
    serde_json::to_string(&call).unwrap() + "\n"
}

/// Serves `input` with `adapter` and returns the lines written.
async fn served(adapter: ScriptedAdapter, input: &str) -> Vec<EngineLine> {
    let mut out = Vec::new();
    serve(&adapter, input.as_bytes(), &mut out).await.unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn serve_streams_deltas_then_the_answer_and_answers_each_call_in_turn() {
    let adapter = ScriptedAdapter::new(vec![
        Ok(answer("{\"a\": 1}")),
        Err(AdapterError::Timeout {
            adapter: "local".into(),
        }),
    ])
    .streaming(3);
    let input = call_line(true) + "\n" + &call_line(false);
    let lines = served(adapter, &input).await;
    let (last, first) = lines.split_last().unwrap();
    assert!(
        matches!(last, EngineLine::Failed { error } if error.kind() == ErrorKind::Timeout),
        "{last:?}"
    );
    let (done, deltas) = first.split_last().unwrap();
    assert!(matches!(done, EngineLine::Done { response } if response.text == "{\"a\": 1}"));
    let text: String = deltas
        .iter()
        .map(|l| match l {
            EngineLine::Text { text } => text.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(text, "{\"a\": 1}");
    assert!(deltas.len() > 1);
}

#[tokio::test]
async fn a_line_that_is_not_a_call_is_a_protocol_error_and_serving_goes_on() {
    let adapter = ScriptedAdapter::new(vec![Ok(answer("ok"))]);
    let input = "{\"nope\": true}\n".to_owned() + &call_line(false);
    let lines = served(adapter, &input).await;
    assert_eq!(lines.len(), 2);
    assert!(
        matches!(&lines[0], EngineLine::Failed { error } if error.kind() == ErrorKind::Protocol)
    );
    assert!(matches!(&lines[1], EngineLine::Done { response } if response.text == "ok"));
}

#[test]
fn errors_cross_the_protocol_with_their_kind_and_fields() {
    let error = AdapterError::RateLimited {
        adapter: "local".into(),
        retry_after: Some(Duration::from_secs(3)),
        message: "slow down".into(),
    };
    let line = serde_json::to_string(&EngineLine::Failed { error }).unwrap();
    let EngineLine::Failed { error: back } = serde_json::from_str(&line).unwrap() else {
        panic!("{line}");
    };
    assert_eq!(back.kind(), ErrorKind::RateLimited);
    assert_eq!(
        back.to_string(),
        "local: rate limited (HTTP 429), retry after 3s: slow down"
    );
}

/// A shell engine: `body` runs once per call line read (`$line` holds it).
fn shell_engine(dir: &tempfile::TempDir, body: &str) -> std::path::PathBuf {
    let path = dir.path().join("engine.sh");
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho engine starting >&2\nwhile read -r line; do\n{body}\ndone\n"),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms).unwrap();
    path
}

const ANSWER: &str = r#"echo '{"line":"text","text":"{\"a\":"}'; echo '{"line":"text","text":" 1}"}'; echo '{"line":"done","response":{"text":"{\"a\": 1}"}}'"#;

fn collecting_cx() -> (CallCx, Arc<Mutex<String>>) {
    let got = Arc::new(Mutex::new(String::new()));
    let mut cx = CallCx::new();
    let sink = got.clone();
    cx.on_text = Some(TextSink::new(move |d| sink.lock().unwrap().push_str(d)));
    (cx, got)
}

#[tokio::test]
async fn a_process_engine_streams_and_answers_and_is_kept_for_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    // Each call also appends to a file: one process serving both calls writes two lines.
    let body = format!("echo call >> {}/calls; {ANSWER}", dir.path().display());
    let engine = EngineProcess::new("local", shell_engine(&dir, &body));
    let (cx, got) = collecting_cx();
    let resp = engine.call(request(), &cx).await.unwrap();
    assert_eq!(resp.text, "{\"a\": 1}");
    assert_eq!(*got.lock().unwrap(), "{\"a\": 1}");
    engine.call(request(), &CallCx::new()).await.unwrap();
    let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
    assert_eq!(calls.lines().count(), 2);
    assert_eq!(engine.spec().map(|s| s.name), Some("local"));
}

#[tokio::test]
async fn an_engine_that_dies_mid_call_is_a_transport_error_and_the_next_call_starts_another() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("died-once");
    let body = format!(
        "if [ ! -e {m} ]; then touch {m}; echo '{{\"line\":\"text\",\"text\":\"{{\"}}'; echo 'model file is corrupt' >&2; exit 1; fi; {ANSWER}",
        m = marker.display()
    );
    let engine = EngineProcess::new("local", shell_engine(&dir, &body));
    let err = engine.call(request(), &CallCx::new()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "{err}");
    assert!(err.to_string().contains("model file is corrupt"), "{err}");
    let resp = engine.call(request(), &CallCx::new()).await.unwrap();
    assert_eq!(resp.text, "{\"a\": 1}");
}

#[tokio::test]
async fn a_cancelled_call_kills_the_engine_and_a_missing_one_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let body = format!("echo $$ > {}; sleep 30", pid_file.display());
    let engine = EngineProcess::new("local", shell_engine(&dir, &body));
    let cx = CallCx::new().with_timeout(Duration::from_millis(300));
    let err = engine.call(request(), &cx).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = async {
        while nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .expect("the engine outlived its cancelled call");

    let missing = EngineProcess::new("local", dir.path().join("no-such-engine"));
    let err = missing.call(request(), &CallCx::new()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains(ENGINE_BIN_ENV), "{err}");
}

#[tokio::test]
async fn an_engine_streaming_past_the_budget_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let body = "while true; do echo '{\"line\":\"text\",\"text\":\"xxxxxxxxxxxxxxxx\"}'; done";
    let engine = EngineProcess::new("local", shell_engine(&dir, body));
    let cx = CallCx::new().with_max_response_bytes(1000);
    let err = tokio::time::timeout(Duration::from_secs(10), engine.call(request(), &cx))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ResponseTooLarge);
}

#[tokio::test]
async fn the_engine_ends_when_its_input_closes() {
    let (mut to_engine, input) = tokio::io::duplex(1024);
    let (output, from_engine) = tokio::io::duplex(1024);
    let adapter = ScriptedAdapter::new(vec![Ok(answer("ok"))]);
    let server = tokio::spawn(async move { serve(&adapter, input, output).await });
    to_engine
        .write_all(call_line(false).as_bytes())
        .await
        .unwrap();
    let mut lines = BufReader::new(from_engine).lines();
    let first = lines.next_line().await.unwrap().unwrap();
    assert!(first.contains("\"done\""), "{first}");
    closes_and_ends(to_engine, server).await;
}

/// Closes the engine's input and waits (5 s at most) for `server` to end cleanly.
async fn closes_and_ends<T, E: std::fmt::Debug>(
    to_engine: tokio::io::DuplexStream,
    server: tokio::task::JoinHandle<Result<T, E>>,
) {
    drop(to_engine);
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

async fn next_reply(
    lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
) -> EngineReply {
    let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .expect("the engine answers")
        .unwrap()
        .unwrap();
    serde_json::from_str(&line).unwrap()
}

fn call_line_with_id(id: u64) -> String {
    let call = EngineCall {
        id: Some(id),
        request: request(),
        max_response_bytes: 1 << 20,
        timeout_ms: None,
        stream: false,
    };
    serde_json::to_string(&call).unwrap() + "\n"
}

#[tokio::test]
async fn calls_with_ids_run_together_and_a_cancel_line_ends_only_its_call() {
    use crate::llm::scripted::Step;
    let (mut to_engine, input) = tokio::io::duplex(4096);
    let (output, from_engine) = tokio::io::duplex(4096);
    let adapter = ScriptedAdapter::with_steps(vec![
        Step {
            outcome: Ok(answer("slow")),
            delay: Duration::from_secs(30),
        },
        Step {
            outcome: Ok(answer("fast")),
            delay: Duration::ZERO,
        },
    ]);
    let server = tokio::spawn(async move { serve(&adapter, input, output).await });
    let mut lines = BufReader::new(from_engine).lines();
    let both = call_line_with_id(1) + &call_line_with_id(2);
    to_engine.write_all(both.as_bytes()).await.unwrap();
    // The second call is answered while the first still runs.
    let first = next_reply(&mut lines).await;
    assert_eq!(first.id, Some(2));
    assert!(matches!(&first.line, EngineLine::Done { response } if response.text == "fast"));
    to_engine
        .write_all(b"{\"cancel\": 1}\n{\"cancel\": 99}\n")
        .await
        .unwrap();
    let second = next_reply(&mut lines).await;
    assert_eq!(second.id, Some(1));
    assert!(
        matches!(&second.line, EngineLine::Failed { error } if error.kind() == ErrorKind::Cancelled),
        "{second:?}"
    );
    closes_and_ends(to_engine, server).await;
}

#[tokio::test]
async fn a_call_the_engine_cancels_in_time_leaves_it_serving_the_others() {
    let dir = tempfile::tempdir().unwrap();
    // Answers a call at once unless its prompt says "slow"; answers a cancel line with the
    // cancelled call's failure. Each start appends to `starts`.
    let script = dir.path().join("engine.sh");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
echo start >> {starts}
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  cancel=$(printf '%s' "$line" | sed -n 's/.*"cancel":\([0-9]*\).*/\1/p')
  if [ -n "$cancel" ]; then
    echo '{{"id":'$cancel',"line":"failed","error":{{"error":"cancelled","adapter":"local"}}}}'
  elif printf '%s' "$line" | grep -q slow; then
    :
  else
    echo '{{"id":'$id',"line":"done","response":{{"text":"ok '$id'"}}}}'
  fi
done
"#,
            starts = dir.path().join("starts").display()
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    let engine = Arc::new(EngineProcess::new("local", &script));
    let slow = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let req = AdapterCallRequest::new("m", vec![Message::user("slow")]);
            let cx = CallCx::new().with_timeout(Duration::from_millis(300));
            engine.call(req, &cx).await
        })
    };
    let fast = engine.call(request(), &CallCx::new()).await.unwrap();
    assert!(fast.text.starts_with("ok "), "{}", fast.text);
    let err = slow.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    // Past the grace period: the engine that ended the call in time is still the one serving.
    tokio::time::sleep(CANCEL_GRACE + Duration::from_millis(500)).await;
    let again = engine.call(request(), &CallCx::new()).await.unwrap();
    assert!(again.text.starts_with("ok "), "{}", again.text);
    let starts = std::fs::read_to_string(dir.path().join("starts")).unwrap();
    assert_eq!(starts.lines().count(), 1, "the engine was restarted");
}
