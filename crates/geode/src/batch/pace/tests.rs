use super::*;
use crate::llm::request::Message;
use crate::llm::scripted::ScriptedAdapter;
use crate::vocab::Usage;

fn rate_limited(after: Option<Duration>) -> AdapterError {
    AdapterError::RateLimited {
        adapter: "scripted".into(),
        retry_after: after,
        message: "slow down".into(),
    }
}

fn pacer(rpm: Option<u32>, tpm: Option<u64>) -> Pacer {
    Pacer::new(Limits { rpm, tpm })
}

/// Asserts the time since `start` lies in `range` (paused time: exact up to the pacer's steps).
fn assert_took(start: Instant, range: std::ops::Range<Duration>) {
    let took = start.elapsed();
    assert!(range.contains(&took), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn requests_per_minute_space_the_calls_evenly() {
    let pacer = pacer(Some(60), None);
    let start = Instant::now();
    for _ in 0..5 {
        pacer.acquire(1).await;
    }
    assert_took(start, Duration::from_secs(4)..Duration::from_millis(4100));
}

#[tokio::test(start_paused = true)]
async fn tokens_per_minute_charge_the_estimate_then_the_real_use() {
    let pacer = pacer(None, Some(600));
    let start = Instant::now();
    pacer.acquire(300).await;
    pacer.acquire(300).await;
    assert!(start.elapsed() < Duration::from_millis(10));
    // The second call really used 900 tokens: 600 more than charged.
    pacer.settle(300, 900);
    // The budget is now -600; at 10 tokens/s it takes about 60 s to reach 1 again.
    pacer.acquire(1).await;
    assert_took(start, Duration::from_secs(60)..Duration::from_secs(62));
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_pauses_every_caller_and_halves_the_rate() {
    let pacer = pacer(Some(60), None);
    pacer.acquire(1).await;
    pacer.rate_limited(Some(Duration::from_secs(3)));
    let start = Instant::now();
    let (a, b) = tokio::join!(
        {
            let p = pacer.clone();
            async move {
                p.acquire(1).await;
                Instant::now()
            }
        },
        {
            let p = pacer.clone();
            async move {
                p.acquire(1).await;
                Instant::now()
            }
        }
    );
    for t in [a, b] {
        assert!(t - start >= Duration::from_secs(3), "{:?}", t - start);
    }
    // 60 rpm halved is one request every 2 s: the second caller waits for it.
    let gap = if a > b { a - b } else { b - a };
    assert!(
        gap >= Duration::from_millis(1990) && gap < Duration::from_millis(2100),
        "{gap:?}"
    );
    assert_eq!(pacer.rate_limited_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn without_retry_after_the_pause_doubles() {
    let pacer = Pacer::new(Limits::default());
    let start = Instant::now();
    pacer.rate_limited(None);
    pacer.acquire(1).await;
    assert_eq!(start.elapsed().as_secs(), 1);
    pacer.rate_limited(None);
    pacer.acquire(1).await;
    assert_eq!(start.elapsed().as_secs(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_paced_adapter_waits_out_a_rate_limit_and_retries_the_call() {
    let ok = AdapterResponse {
        usage: Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        },
        ..AdapterResponse::text("{}")
    };
    let inner = Arc::new(ScriptedAdapter::new(vec![
        Err(rate_limited(Some(Duration::from_secs(2)))),
        Ok(ok),
    ]));
    let pacer = Pacer::new(Limits::default());
    let paced = PacedAdapter::new(inner.clone(), pacer.clone());
    let start = Instant::now();
    let req = AdapterCallRequest::new("m", vec![Message::user("hello")]);
    let resp = paced.call(req, &CallCx::new()).await.unwrap();
    assert_eq!(resp.text, "{}");
    assert_eq!(inner.requests().len(), 2);
    assert!(start.elapsed() >= Duration::from_secs(2));
    assert_eq!(pacer.rate_limited_count(), 1);
    assert_eq!(paced.name(), "scripted");
}

#[tokio::test(start_paused = true)]
async fn a_paced_adapter_gives_up_after_its_retries_with_the_providers_error() {
    let script = (0..=MAX_RATE_RETRIES)
        .map(|_| Err(rate_limited(Some(Duration::from_millis(100)))))
        .collect();
    let inner = Arc::new(ScriptedAdapter::new(script));
    let paced = PacedAdapter::new(inner.clone(), Pacer::new(Limits::default()));
    let req = AdapterCallRequest::new("m", vec![Message::user("x")]);
    let err = paced.call(req, &CallCx::new()).await.unwrap_err();
    assert!(matches!(err, AdapterError::RateLimited { .. }), "{err}");
    assert_eq!(inner.requests().len(), MAX_RATE_RETRIES as usize + 1);
}

#[tokio::test(start_paused = true)]
async fn waiting_for_the_pace_respects_the_call_deadline() {
    let pacer = Pacer::new(Limits::default());
    pacer.rate_limited(Some(Duration::from_secs(30)));
    let inner = Arc::new(ScriptedAdapter::new(vec![Ok(AdapterResponse::text("{}"))]));
    let paced = PacedAdapter::new(inner.clone(), pacer);
    let cx = CallCx::new().with_timeout(Duration::from_secs(1));
    let req = AdapterCallRequest::new("m", vec![Message::user("x")]);
    let err = paced.call(req, &cx).await.unwrap_err();
    assert!(matches!(err, AdapterError::Timeout { .. }), "{err}");
    assert!(inner.requests().is_empty());
}

#[test]
fn the_estimate_counts_the_prompt_text() {
    let mut req = AdapterCallRequest::new("m", vec![Message::user("x".repeat(400))]);
    req.system_prompt = "y".repeat(40);
    assert_eq!(estimate_tokens(&req), 111);
}

/// An adapter that is a registry row, to see the wrapper keep its description.
struct Row;

#[async_trait::async_trait]
impl Adapter for Row {
    fn name(&self) -> &str {
        "glm-payg"
    }
    fn spec(&self) -> Option<&'static crate::llm::registry::AdapterSpec> {
        crate::llm::registry::spec("glm-payg")
    }
    async fn call(
        &self,
        _req: AdapterCallRequest,
        _cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        Ok(AdapterResponse::text("{}"))
    }
}

#[test]
fn a_paced_adapter_describes_itself_as_the_adapter_it_wraps() {
    let paced = PacedAdapter::new(Arc::new(Row), Pacer::new(Limits::default()));
    assert_eq!(paced.spec().map(|s| s.name), Some("glm-payg"));
    let schema =
        crate::schema::ResponseSchema::from_value(serde_json::json!({"type": "object"})).unwrap();
    assert_eq!(paced.wire_mode(Some(&schema)), Row.wire_mode(Some(&schema)));
    assert_eq!(paced.supports_tools(), Row.supports_tools());
}
