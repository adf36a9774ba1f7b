//! `WorkerRequest` parsing (`geode::protocol::parse_request_line`) and the `WorkerResult`
//! JSON shape.

use geode::protocol::{WorkerResult, parse_request_line};

/// Reads `data` (invalid UTF-8 replaced) as a request line and as a result.
///
/// Invariants: a request that parses has a `task_id` and survives a JSON round trip unchanged
/// (unknown fields aside, which are not written back); a result that parses survives a round
/// trip unchanged; parse errors render as one line.
pub fn run(data: &[u8]) {
    let line = String::from_utf8_lossy(data);
    match parse_request_line(&line) {
        Ok(mut req) => {
            req.unknown.clear();
            let Ok(json) = serde_json::to_string(&req) else {
                panic!("a parsed request does not serialise: {req:?}");
            };
            match parse_request_line(&json) {
                Ok(back) => assert_eq!(back, req, "request round trip through {json}"),
                Err(e) => panic!("a serialised request does not parse: {e}: {json}"),
            }
        }
        Err(e) => super::check::one_line(&e),
    }
    if let Ok(result) = serde_json::from_str::<WorkerResult>(&line) {
        let Ok(json) = serde_json::to_string(&result) else {
            panic!("a parsed result does not serialise: {result:?}");
        };
        match serde_json::from_str::<WorkerResult>(&json) {
            Ok(back) => assert_eq!(back, result, "result round trip through {json}"),
            Err(e) => panic!("a serialised result does not parse: {e}: {json}"),
        }
    }
}
