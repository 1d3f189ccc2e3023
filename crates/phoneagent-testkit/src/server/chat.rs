//! `POST /v1/chat/completions` of the scripted model server (SPEC V5): authentication, recording,
//! choosing the answer (the role's script queue with label placeholders resolved against the
//! sim's ground truth, the oracle for calibration probes, or a scripted HTTP error) and the
//! estimated usage.

use super::*;

/// What the chat handler decided to send.
enum Plan {
    Error {
        status: u16,
        message: String,
        retry_after: Option<u64>,
        retry_after_ms: Option<u64>,
    },
    Answer {
        answer: Answer,
        entry: Box<ScriptEntry>,
    },
}

pub(super) async fn chat(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (seq, req, is_json) = record(&shared, &method, &uri, &headers, &body);
    let guard = OutcomeGuard {
        shared: shared.clone(),
        seq,
        armed: true,
    };
    if !auth_ok(&shared, &headers) {
        return server_error(
            &shared,
            guard,
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "Incorrect or missing API key (the scripted model was started with a required key)."
                .into(),
        );
    }
    if !is_json || req.get("messages").and_then(Value::as_array).is_none() {
        return server_error(
            &shared,
            guard,
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "The request body must be a JSON chat-completions request with a `messages` array."
                .into(),
        );
    }
    let system = request::system_text(&req);
    let all = request::all_text(&req);
    let role_header = headers
        .get(script::ROLE_HEADER)
        .and_then(|v| v.to_str().ok());
    let routed = {
        let q = lock(&shared.queues);
        script::route(&q.rules, role_header, &system, &all)
    };
    let stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let images = request::image_urls(&req);
    let model = req
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| shared.config.models.first().cloned())
        .unwrap_or_else(|| "scripted-model".into());
    let meta = Meta {
        id: format!("chatcmpl-scripted-{seq}"),
        model,
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };

    // Oracle first: a calibration probe is answered from the image.
    let mut decoded_image: Option<(u32, u32)> = None;
    if let (Some(cfg), Some(url)) = (shared.config.oracle, images.last()) {
        match oracle_answer(&shared, &req, url, &routed, &cfg, seq) {
            Ok((Some(answer), _)) => {
                shared.update(seq, |r| {
                    r.queue = Some(routed.clone());
                    r.answered_by = Some("oracle".into());
                    r.response_status = 200;
                });
                return respond_answer(
                    &shared,
                    guard,
                    &meta,
                    answer,
                    &ScriptEntry::default(),
                    stream,
                )
                .await;
            }
            Ok((None, size)) => decoded_image = Some(size),
            Err(e) if routed == "calibration" => {
                return server_error(
                    &shared,
                    guard,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "oracle_failed",
                    e.to_string(),
                );
            }
            Err(e) => tracing::debug!("oracle: request #{seq} is not a probe: {e}"),
        }
    }

    let queue = {
        let q = lock(&shared.queues);
        q.effective_queue(&routed)
    };
    shared.update(seq, |r| r.queue = Some(queue.clone()));
    let taken = lock(&shared.queues).take(&queue);
    let entry = match taken {
        Take::Entry(e) => *e,
        Take::Exhausted(msg) => {
            let msg = if shared.config.oracle.is_some() {
                format!(
                    "{msg}. (Oracle mode answers only coordinate probes: one saturated red disc on a plain background.)"
                )
            } else {
                msg
            };
            return server_error(
                &shared,
                guard,
                StatusCode::INTERNAL_SERVER_ERROR,
                "script_exhausted",
                msg,
            );
        }
    };
    let plan = match plan_entry(&shared, &req, &entry, &images, decoded_image, seq).await {
        Ok(p) => p,
        Err(e) => {
            return server_error(
                &shared,
                guard,
                StatusCode::INTERNAL_SERVER_ERROR,
                "placeholder_unresolved",
                e.to_string(),
            );
        }
    };
    match plan {
        Plan::Error {
            status,
            message,
            retry_after,
            retry_after_ms,
        } => {
            shared.update(seq, |r| {
                r.answered_by = Some("script".into());
                r.response_status = status;
            });
            if let Some(ms) = entry.delay_ms {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = json_response(code, &openai::error_body(status, &message, None));
            if let Some(s) = retry_after
                && let Ok(v) = HeaderValue::from_str(&s.to_string())
            {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
            if let Some(ms) = retry_after_ms
                && let Ok(v) = HeaderValue::from_str(&ms.to_string())
            {
                resp.headers_mut().insert("retry-after-ms", v);
            }
            guard.done("completed");
            resp
        }
        Plan::Answer { answer, entry } => {
            shared.update(seq, |r| {
                r.answered_by = Some("script".into());
                r.response_status = 200;
            });
            respond_answer(&shared, guard, &meta, answer, &entry, stream).await
        }
    }
}

/// Try to answer as the oracle. `Ok((None, size))` = not a probe.
fn oracle_answer(
    shared: &Shared,
    req: &Value,
    url: &str,
    routed: &str,
    cfg: &OracleConfig,
    seq: u64,
) -> Result<(Option<Answer>, (u32, u32))> {
    let bytes = oracle::decode_data_url(url)?;
    let img = oracle::decode_image(&bytes)?;
    let size = img.dimensions();
    let forced = routed == "calibration";
    let Some(target) = oracle::find_target(&img) else {
        if forced {
            return Err(Error::Oracle(format!(
                "calibration request #{seq}: the image ({}x{}) has no saturated red target",
                size.0, size.1
            )));
        }
        return Ok((None, size));
    };
    if !target.is_probe(forced) {
        if forced {
            return Err(Error::Oracle(format!(
                "calibration request #{seq}: no single distinct red disc (largest red area {} px, second {} px)",
                target.area, target.second_area
            )));
        }
        return Ok((None, size));
    }
    let (x, y) = oracle::answer_point(&target, shared.config.space, cfg)?;
    let answer = match oracle::tap_form(req) {
        TapForm::DoText => Answer {
            content: Some(format!("do(action=\"Tap\", element=[{x},{y}])")),
            reasoning: None,
            tool_calls: vec![],
            finish_reason: "stop".into(),
            usage: None,
        },
        TapForm::Tool { name, shape } => Answer {
            content: None,
            reasoning: None,
            tool_calls: vec![(
                format!("call_{seq}_0"),
                name,
                oracle::tap_arguments(shape, x, y).to_string(),
            )],
            finish_reason: "tool_calls".into(),
            usage: None,
        },
    };
    let usage = estimated_usage(req, &answer);
    Ok((
        Some(Answer {
            usage: Some(usage),
            ..answer
        }),
        size,
    ))
}

fn estimated_usage(req: &Value, a: &Answer) -> Value {
    let prompt = openai::estimate_tokens(
        request::all_text(req).chars().count(),
        request::image_urls(req).len(),
    );
    let out_chars = a.content.as_deref().map_or(0, |s| s.chars().count())
        + a.reasoning.as_deref().map_or(0, |s| s.chars().count())
        + a.tool_calls
            .iter()
            .map(|(_, n, args)| n.len() + args.chars().count())
            .sum::<usize>();
    let completion = openai::estimate_tokens(out_chars, 0);
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

/// Read the current screen's ground truth through `phoneagent_sim::client::fetch_state` (the
/// sim-only `host:sim-state` service), bounded to 5 s.
async fn fetch_truth(target: &SimTarget) -> Result<ScreenTruth> {
    let err = |message: String| Error::GroundTruth {
        port: target.port,
        message,
    };
    let gt = tokio::time::timeout(
        Duration::from_secs(5),
        phoneagent_sim::client::fetch_state(target.port, target.serial.as_deref()),
    )
    .await
    .map_err(|_| err("host:sim-state did not answer within 5 s".into()))?
    .map_err(|e| {
        err(format!(
            "cannot read the ground truth: {e} (is `phoneagent sim serve` running on this port?)"
        ))
    })?;
    let v = serde_json::to_value(&gt)
        .map_err(|e| err(format!("ground truth does not serialize: {e}")))?;
    ScreenTruth::from_ground_truth(&v, target.port)
}

async fn plan_entry(
    shared: &Shared,
    req: &Value,
    entry: &ScriptEntry,
    images: &[String],
    decoded_image: Option<(u32, u32)>,
    seq: u64,
) -> Result<Plan> {
    if let Some(status) = entry.status {
        return Ok(Plan::Error {
            status,
            message: entry
                .error_message
                .clone()
                .unwrap_or_else(|| openai::default_error_message(status)),
            retry_after: entry.retry_after,
            retry_after_ms: entry.retry_after_ms,
        });
    }
    let needs = entry.content.as_deref().is_some_and(has_placeholders)
        || entry
            .reasoning_content
            .as_deref()
            .is_some_and(has_placeholders)
        || entry
            .tool_calls
            .iter()
            .any(|t| has_placeholders(&t.arguments.to_string()));
    let space = match entry.space.as_deref() {
        Some("image_pixels") => CoordinateSpace::ImagePixels,
        Some(_) => CoordinateSpace::Relative0999,
        None => shared.config.space,
    };
    let mut truth = None;
    let mut image_size = decoded_image;
    if needs {
        if let Some(t) = &shared.config.sim {
            truth = Some(fetch_truth(t).await?);
        }
        if image_size.is_none()
            && let Some(url) = images.last()
        {
            image_size = Some(oracle::image_size(&oracle::decode_data_url(url)?)?);
        }
    }
    let ctx = ResolveContext {
        truth: truth.as_ref(),
        space,
        image_size,
    };
    let content = entry
        .content
        .as_deref()
        .map(|c| ctx.resolve_text(c))
        .transpose()?;
    let reasoning = entry
        .reasoning_content
        .as_deref()
        .map(|c| ctx.resolve_text(c))
        .transpose()?;
    let mut tool_calls = Vec::new();
    for (i, tc) in entry.tool_calls.iter().enumerate() {
        let args = match &tc.arguments {
            Value::String(s) => ctx.resolve_text(s)?,
            other => ctx.resolve_value(other)?.to_string(),
        };
        tool_calls.push((
            tc.id.clone().unwrap_or_else(|| format!("call_{seq}_{i}")),
            tc.name.clone(),
            args,
        ));
    }
    let finish_reason = entry.finish_reason.clone().unwrap_or_else(|| {
        if tool_calls.is_empty() {
            "stop".into()
        } else {
            "tool_calls".into()
        }
    });
    let mut answer = Answer {
        content,
        reasoning,
        tool_calls,
        finish_reason,
        usage: None,
    };
    answer.usage = match &entry.usage {
        None => Some(estimated_usage(req, &answer)),
        Some(Value::Null) => None,
        Some(u) => Some(openai::complete_usage(u.clone())),
    };
    Ok(Plan::Answer {
        answer,
        entry: Box::new(entry.clone()),
    })
}
