//! Writing one chat answer: the JSON body or an SSE stream, with the entry's delays and faults
//! (truncation, slow chunks), and recording the outcome.

use super::*;

pub(super) async fn respond_answer(
    shared: &Arc<Shared>,
    guard: OutcomeGuard,
    meta: &Meta,
    answer: Answer,
    entry: &ScriptEntry,
    stream: bool,
) -> Response {
    if let Some(ms) = entry.delay_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if stream {
        return stream_response(shared, guard, meta, &answer, entry);
    }
    let body = if let Some(m) = &entry.malformed_body
        && entry.is_malformed()
    {
        match m {
            script::MalformedBody::Body(s) => s.clone(),
            script::MalformedBody::Flag(_) => openai::BROKEN_BODY.to_string(),
        }
    } else {
        let mut v = openai::completion(meta, &answer);
        openai::remove_paths(&mut v, &entry.missing_fields);
        v.to_string()
    };
    if entry.truncated {
        let full_len = body.len();
        let mut cut = full_len / 2;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        let half = Bytes::from(body.as_bytes()[..cut].to_vec());
        // Send the first half, give the socket time to flush it, then abort the connection.
        let parts = futures::stream::unfold(0u8, move |step| {
            let half = half.clone();
            async move {
                match step {
                    0 => Some((Ok(half), 1)),
                    1 => {
                        tokio::time::sleep(TRUNCATION_FLUSH).await;
                        Some((
                            Err(std::io::Error::new(
                                std::io::ErrorKind::ConnectionAborted,
                                "scripted truncation",
                            )),
                            2,
                        ))
                    }
                    _ => None,
                }
            }
        });
        guard.done("truncated");
        let mut resp = Response::new(Body::from_stream(parts));
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Ok(v) = HeaderValue::from_str(&full_len.to_string()) {
            h.insert(header::CONTENT_LENGTH, v);
        }
        return resp;
    }
    guard.done("completed");
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

fn stream_response(
    shared: &Arc<Shared>,
    guard: OutcomeGuard,
    meta: &Meta,
    answer: &Answer,
    entry: &ScriptEntry,
) -> Response {
    let chunks = openai::stream_chunks(meta, answer, shared.config.stream_chunk_chars);
    let mut lines: Vec<String> = chunks
        .into_iter()
        .map(|mut c| {
            openai::remove_paths(&mut c, &entry.missing_fields);
            format!("data: {c}\n\n")
        })
        .collect();
    if entry.is_malformed() {
        let broken = match &entry.malformed_body {
            Some(script::MalformedBody::Body(s)) => s.clone(),
            _ => r#"{"id":"chatcmpl-broken","choices":[{"delta":{"content":"do(act"#.to_string(),
        };
        let mid = lines.len() / 2;
        lines.insert(mid, format!("data: {broken}\n\n"));
    }
    let truncated = entry.truncated;
    if truncated {
        let keep = (lines.len() / 2).max(1);
        lines.truncate(keep);
    } else {
        lines.push("data: [DONE]\n\n".to_string());
    }
    let delay = entry.chunk_delay_ms.map(Duration::from_millis);
    struct St {
        lines: std::collections::VecDeque<String>,
        guard: Option<OutcomeGuard>,
        delay: Option<Duration>,
        truncated: bool,
        first: bool,
    }
    let st = St {
        lines: lines.into(),
        guard: Some(guard),
        delay,
        truncated,
        first: true,
    };
    let s = futures::stream::unfold(st, |mut st| async move {
        if let Some(line) = st.lines.pop_front() {
            if !st.first
                && let Some(d) = st.delay
            {
                tokio::time::sleep(d).await;
            }
            st.first = false;
            return Some((Ok::<Bytes, std::io::Error>(Bytes::from(line)), st));
        }
        let g = st.guard.take()?;
        if st.truncated {
            g.done("truncated");
            tokio::time::sleep(TRUNCATION_FLUSH).await;
            Some((
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "scripted truncation",
                )),
                st,
            ))
        } else {
            g.done("completed");
            None
        }
    });
    let mut resp = Response::new(Body::from_stream(s));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}
