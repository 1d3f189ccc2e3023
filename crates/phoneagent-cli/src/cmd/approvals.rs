//! `phoneagent approvals RUN_ID`: the approve-for-me ledger of a run (SPEC AR8), and the
//! approval-policy loading `run`/`demo` share (SPEC AR2).

use std::path::Path;

use anyhow::Context;
use phoneagent_protocol::ApprovalReview;
use phoneagent_review::auto::AutoReviewConfig;
use phoneagent_runtime::Lang;

use super::Global;
use super::run::{find_run, open_store};

/// `phoneagent approvals`
#[derive(Debug, clap::Args)]
pub struct ApprovalsArgs {
    /// Run id (or a unique prefix of it, as `phoneagent runs` shows).
    pub run_id: String,
    /// Print the rows as JSON (one `ApprovalReview` object per request).
    #[arg(long)]
    pub json: bool,
    /// Language of the table's labels: zh or en (env PHONE_AGENT_LANG). Reasons keep the
    /// language they were written in.
    #[arg(long, env = "PHONE_AGENT_LANG", default_value = "en", value_parser = parse_lang)]
    pub lang: Lang,
}

/// Parse `zh` / `en` (and their long forms).
pub fn parse_lang(s: &str) -> Result<Lang, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "zh" | "zh-cn" | "zh_cn" | "cn" | "chinese" => Ok(Lang::Zh),
        "en" | "en-us" | "en_us" | "english" => Ok(Lang::En),
        other => Err(format!("unknown language {other:?}: use zh or en")),
    }
}

/// The approve-for-me configuration for a run: `--approval-policy FILE` if given, else
/// `approval-policy.toml` / `.json` in the config dir (`PHONEAGENT_HOME` or the platform config
/// dir), else the defaults. Prints which one is used.
pub fn load_policy(file: Option<&Path>) -> anyhow::Result<AutoReviewConfig> {
    if let Some(f) = file {
        let cfg = AutoReviewConfig::load(f)?;
        eprintln!("approve-for-me: policy from {}", f.display());
        return Ok(cfg);
    }
    let dir = phoneagent_llm::config::EnvOverrides::from_env()
        .config_dir()
        .context("cannot find the config dir for approval-policy.toml")?;
    let (cfg, used) = AutoReviewConfig::load_from_dir(&dir)?;
    match used {
        Some(p) => eprintln!("approve-for-me: policy from {}", p.display()),
        None => eprintln!(
            "approve-for-me: default policy (no approval-policy.toml or .json in {})",
            dir.display()
        ),
    }
    Ok(cfg)
}

fn cut(s: &str, n: usize) -> String {
    let c: String = s.chars().take(n).collect();
    if s.chars().count() > n {
        format!("{c}…")
    } else {
        c
    }
}

/// The table of a run's ledger (one block per request).
pub fn render_table(rows: &[ApprovalReview], lang: Lang) -> String {
    let l = |en: &'static str, zh: &'static str| if lang == Lang::Zh { zh } else { en };
    if rows.is_empty() {
        return l(
            "no approve-for-me requests in this run (it ran in another access mode, or nothing needed approval)\n",
            "本次运行没有“替我审批”的请求（使用了其他访问模式，或没有需要审批的操作）\n",
        )
        .to_string();
    }
    let mut out = format!(
        "{:<3} {:<6} {:<8} {:<14} {:<9} {:<7} {:<8} {:<22} {:>7} {:>6}  {}\n",
        "#",
        l("tool", "工具"),
        l("outcome", "结果"),
        l("decided by", "裁决者"),
        l("risk", "风险"),
        l("auth", "授权"),
        l("policy", "策略"),
        l("gate", "闸门"),
        l("ms", "耗时ms"),
        l("left", "剩余"),
        l("target", "目标"),
    );
    for (i, r) in rows.iter().enumerate() {
        let by = serde_json::to_value(r.decided_by)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        out.push_str(&format!(
            "{:<3} {:<6} {:<8} {:<14} {:<9} {:<7} {:<8} {:<22} {:>7} {:>6}  {}\n",
            i + 1,
            cut(&r.tool, 6),
            r.outcome.as_str(),
            by,
            r.risk.map_or("-", |x| x.as_str()),
            r.user_authorization.map_or("-", |x| x.as_str()),
            r.policy.as_str(),
            cut(r.gate.as_deref().unwrap_or("-"), 22),
            r.latency_ms,
            r.reviews_left,
            cut(&r.target, 40),
        ));
        out.push_str(&format!("    {}: {}\n", l("reason", "理由"), r.reason));
        if let Some(s) = &r.suggestion {
            out.push_str(&format!("    {}: {s}\n", l("suggestion", "建议")));
        }
        out.push_str(&format!(
            "    {}: {} · {}: {} · {}: {}{}{}\n",
            l("policy source", "策略来源"),
            r.policy_source,
            l("reviewer", "复核路由"),
            match (&r.reviewer_profile, &r.reviewer_model) {
                (Some(p), Some(m)) => format!("{p}/{m}"),
                _ => "-".into(),
            },
            l("breaker", "熔断"),
            format_args!(
                "{} {}/{} {}",
                if r.breaker.open {
                    l("OPEN", "已打开")
                } else {
                    l("closed", "关闭")
                },
                r.breaker.window_denials,
                r.breaker.window_reviews,
                format_args!(
                    "({} {})",
                    r.breaker.consecutive_denials,
                    l("in a row", "连续")
                )
            ),
            if r.override_used {
                l(" · one-time override used", " · 使用了一次性放行")
            } else {
                ""
            },
            r.reviewer_error
                .as_deref()
                .map(|e| format!(" · {}: {e}", l("reviewer error", "复核失败")))
                .unwrap_or_default(),
        ));
    }
    out
}

/// Print a run's approve-for-me ledger.
pub async fn approvals(_g: &Global, a: ApprovalsArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let id = find_run(&store, &a.run_id)?;
    let rows = store.approval_reviews(id)?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        out!("{}", render_table(&rows, a.lang));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use phoneagent_protocol::event::DecidedBy;
    use phoneagent_protocol::{
        ApprovalOutcome, ApprovalPolicy, BreakerState, ReviewDecision, ReviewRisk, RiskTier,
        UserAuthorization,
    };

    fn row() -> ApprovalReview {
        ApprovalReview {
            request_id: "ar-1".into(),
            tool: "tap".into(),
            target: "提交订单".into(),
            arguments: serde_json::json!({"element": [500, 900]}),
            arguments_truncated: false,
            tier: RiskTier::Hard,
            reasons: vec![],
            policy: ApprovalPolicy::Ai,
            policy_source: "default".into(),
            outcome: ApprovalOutcome::Denied,
            decided_by: DecidedBy::AutoReviewer,
            delegated: false,
            verdict: Some(ReviewDecision::Deny),
            risk: Some(ReviewRisk::High),
            user_authorization: Some(UserAuthorization::None),
            reason: "the task does not ask to buy".into(),
            suggestion: Some("go back".into()),
            gate: Some("breaker_tripped".into()),
            reviewer_error: None,
            reviewer_profile: Some("cloud".into()),
            reviewer_model: Some("gpt-x".into()),
            review_latency_ms: Some(12),
            latency_ms: 15,
            reviews_left: 17,
            failures_left: 10,
            breaker: BreakerState {
                consecutive_denials: 3,
                window_denials: 3,
                window_reviews: 3,
                open: true,
            },
            override_used: false,
            cached: false,
            human_request_id: None,
        }
    }

    #[test]
    fn table_in_both_languages() {
        let en = render_table(&[row()], Lang::En);
        for want in [
            "denied",
            "auto_reviewer",
            "high",
            "breaker_tripped",
            "the task does not ask to buy",
            "go back",
            "cloud/gpt-x",
            "OPEN 3/3",
            "提交订单",
        ] {
            assert!(en.contains(want), "{want} missing:\n{en}");
        }
        let zh = render_table(&[row()], Lang::Zh);
        assert!(zh.contains("理由") && zh.contains("已打开"), "{zh}");
        assert!(render_table(&[], Lang::En).contains("no approve-for-me requests"));
        assert_eq!(parse_lang("ZH"), Ok(Lang::Zh));
        assert!(parse_lang("fr").is_err());
    }
}
