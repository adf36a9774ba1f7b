use super::pipes::LineSplitter;
use super::*;

#[test]
fn tail_buffer_keeps_the_last_bytes_and_counts_the_rest() {
    let mut t = TailBuffer::new(4);
    for chunk in [b"abc".as_slice(), b"defg", b"hij"] {
        t.push(chunk);
    }
    let (tail, dropped) = t.into_tail();
    assert_eq!(tail, b"ghij");
    assert_eq!(dropped, 6);
}

#[test]
fn tail_cut_inside_a_character_drops_the_partial_character() {
    let mut t = TailBuffer::new(5);
    // x x [c3 a9] [e2 82 ac]: the last 5 bytes start on a character boundary.
    t.push("xxé€".as_bytes());
    let (tail, dropped) = t.into_tail();
    assert_eq!(String::from_utf8(tail).unwrap(), "é€");
    assert_eq!(dropped, 2);

    // The last 4 bytes start with the continuation byte a9, which is dropped.
    let mut t = TailBuffer::new(4);
    t.push("xxé€".as_bytes());
    let (tail, dropped) = t.into_tail();
    assert_eq!(String::from_utf8(tail).unwrap(), "€");
    assert_eq!(dropped, 4);
}

#[test]
fn spec_debug_never_shows_variable_values() {
    let spec = ProcessSpec::new("x").env("API_KEY", "sk-secret-value");
    let dbg = format!("{spec:?}");
    assert!(dbg.contains("API_KEY"));
    assert!(!dbg.contains("sk-secret-value"));
}

#[test]
fn last_line_skips_blank_lines_and_is_bounded() {
    let c = Captured {
        text: "first\nsecond line here\n\n  \n".into(),
        dropped_bytes: 0,
    };
    assert_eq!(c.last_line(100), "second line here");
    assert_eq!(c.last_line(6), "second");
}

#[tokio::test]
async fn a_child_that_exits_right_after_passing_the_budget_is_still_over_it() {
    let spec = ProcessSpec::new("sh")
        .args(["-c", "head -c 5000 /dev/zero"])
        .stdout_budget(4096);
    let out = run(&spec, &CancellationToken::new(), None).await.unwrap();
    assert_eq!(out.ending, Ending::OutputTooLarge { limit: 4096 });
}

/// A sink collecting every line it is handed.
fn collector() -> (TextSink, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let got = got.clone();
        TextSink::new(move |line| got.lock().unwrap().push(line.to_owned()))
    };
    (sink, got)
}

/// A fresh splitter handing its lines to a [`collector`].
fn splitter() -> (LineSplitter, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let (sink, got) = collector();
    (LineSplitter::new(sink), got)
}

#[test]
fn lines_split_across_chunks_arrive_whole_and_the_unfinished_one_waits() {
    let (mut split, got) = splitter();
    for chunk in [b"{\"a\":".as_slice(), b"1}\n{\"b\"", b":2}\n\n{\"c\":3"] {
        split.push(chunk);
    }
    assert_eq!(*got.lock().unwrap(), ["{\"a\":1}", "{\"b\":2}"]);
}

#[test]
fn a_line_past_the_limit_is_skipped_and_the_next_one_arrives() {
    let (mut split, got) = splitter();
    let long = vec![b'x'; MAX_STREAMED_LINE / 2 + 1];
    split.push(&long);
    split.push(&long);
    split.push(b"tail of the long line\nnext\n");
    let exact = vec![b'y'; MAX_STREAMED_LINE];
    split.push(&exact);
    split.push(b"\n");
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], "next");
    assert_eq!(got[1].len(), MAX_STREAMED_LINE);
}

#[tokio::test]
async fn stdout_lines_reach_the_sink_while_stdout_is_still_captured() {
    let (sink, got) = collector();
    let spec = ProcessSpec::new("sh")
        .args(["-c", "echo one; sleep 0.1; echo two; printf unfinished"])
        .stdout_lines(sink);
    let out = run(&spec, &CancellationToken::new(), None).await.unwrap();
    assert_eq!(*got.lock().unwrap(), ["one", "two"]);
    assert_eq!(out.stdout.text, "one\ntwo\nunfinished");
}
