//! The per-run handle's operations (SPEC AR4, AR7, AR8): one-time overrides of a recent
//! denial, the approve-for-me switch and the live status (breaker, budgets, pending grants,
//! recent denials) that front ends show. The state itself is defined in `auto/mod.rs`.

use super::*;

impl AutoReviewHandle {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Approve the `n`-th most recent denial of the current run (1 = most recent) once: the next
    /// request with exactly the same tool and arguments within `override.ttl_ms` carries the
    /// grant to the reviewer, which still decides (critical stays denied). In memory only.
    ///
    /// # Errors
    /// [`AutoReviewError::NoSuchDenial`] when `n` is 0 or beyond the recent denials.
    pub fn grant_override(&self, n: usize) -> Result<OverrideGrant, AutoReviewError> {
        self.grant_override_at(n, now_ms())
    }

    /// Like [`Self::grant_override`], naming the denial by its request id (what a front end
    /// showed the user), so a newer denial arriving meanwhile cannot shift the grant to another
    /// action.
    ///
    /// # Errors
    /// [`AutoReviewError::UnknownDenial`] when `request_id` is not among the recent denials.
    pub fn grant_override_for(&self, request_id: &str) -> Result<OverrideGrant, AutoReviewError> {
        self.grant_at(DenialRef::Id(request_id), now_ms())
    }

    fn grant_override_at(&self, n: usize, now: u64) -> Result<OverrideGrant, AutoReviewError> {
        self.grant_at(DenialRef::Nth(n), now)
    }

    /// Register a one-time grant for the denial `which` names, under one lock (the choice and
    /// the grant see the same list).
    fn grant_at(&self, which: DenialRef<'_>, now: u64) -> Result<OverrideGrant, AutoReviewError> {
        let max = self.cfg.override_grant.max_pending.max(1);
        let mut st = self.lock();
        let recent = st.recent_denials(max);
        let picked = match which {
            DenialRef::Nth(n) => n.checked_sub(1).and_then(|i| recent.get(i)),
            DenialRef::Id(id) => recent.iter().find(|d| d.request_id == id),
        }
        .cloned();
        let err = || match which {
            DenialRef::Nth(n) => AutoReviewError::NoSuchDenial {
                n,
                available: recent.len(),
                max,
            },
            DenialRef::Id(id) => AutoReviewError::UnknownDenial {
                request_id: id.to_string(),
                available: recent.len(),
            },
        };
        let Some(summary) = picked else {
            return Err(err());
        };
        let Some(d) = st
            .denials
            .iter()
            .find(|d| d.request_id == summary.request_id)
            .cloned()
        else {
            return Err(err());
        };
        let ttl = self.cfg.override_grant.ttl_ms;
        let expires_at_ms = (ttl > 0).then(|| now + ttl);
        st.grants.push(Grant {
            tool: d.tool.clone(),
            args_key: d.args_key.clone(),
            expires_at_ms,
            note: format!(
                "after the reviewer denied it ({}), the user approved this exact action once",
                d.reason
            ),
        });
        Ok(OverrideGrant {
            denial: summary,
            expires_at_ms,
        })
    }

    /// Switch the reviewer off (`true`) or back on (`false`) for the rest of this agent's runs
    /// (the app's on/off switch, SPEC AR8). While off, a request the policy routes to `ai` goes
    /// to the human through the normal approval path (gate `suspended_by_user`) instead of the
    /// reviewer model — after the code gates: `never` rules, an open breaker, an exhausted
    /// review or failure budget still decide as configured (a `deny` stays a denial). A review
    /// already in flight finishes. In memory only.
    pub fn set_suspended(&self, suspended: bool) {
        self.suspended.store(suspended, Ordering::SeqCst);
    }

    /// True while the reviewer is switched off ([`Self::set_suspended`]).
    pub fn is_suspended(&self) -> bool {
        self.suspended.load(Ordering::SeqCst)
    }

    /// Live status.
    pub fn status(&self) -> AutoReviewStatus {
        let st = self.lock();
        let now = now_ms();
        AutoReviewStatus {
            run_id: st.run_id.clone(),
            reviews_used: st.reviews_used,
            reviews_left: self.cfg.budget.max_reviews.saturating_sub(st.reviews_used),
            failures_left: self.cfg.max_failures.saturating_sub(st.failures_used),
            breaker: st.breaker(),
            pending_overrides: st
                .grants
                .iter()
                .filter(|g| g.expires_at_ms.is_none_or(|e| e >= now))
                .count(),
            recent_denials: st.recent_denials(self.cfg.override_grant.max_pending.max(1)),
            suspended: self.is_suspended(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(cfg: AutoReviewConfig) -> AutoReview {
        AutoReview::new(cfg, None).unwrap()
    }

    fn deny(h: &AutoReviewHandle, id: &str, tool: &str, args: &str) {
        h.lock().denials.push(Denial {
            request_id: id.into(),
            tool: tool.into(),
            target: "t".into(),
            args_key: format!("{tool}\u{1f}{args}"),
            reason: "no".into(),
            at_ms: 1,
        });
    }

    #[test]
    fn override_points_at_the_nth_most_recent_denial_and_expires() {
        let e = engine(AutoReviewConfig {
            override_grant: OverrideConfig {
                ttl_ms: 1000,
                max_pending: 2,
            },
            ..AutoReviewConfig::default()
        });
        e.begin_run("r1");
        let h = e.handle();
        assert!(matches!(
            h.grant_override(1),
            Err(AutoReviewError::NoSuchDenial { available: 0, .. })
        ));
        deny(&h, "a", "tap", "1");
        deny(&h, "b", "tap", "2");
        deny(&h, "c", "tap", "3");
        assert!(h.grant_override(0).is_err());
        assert!(matches!(
            h.grant_override(3),
            Err(AutoReviewError::NoSuchDenial { max: 2, .. })
        ));
        let g = h.grant_override_at(2, 10_000).unwrap();
        assert_eq!(g.denial.request_id, "b");
        assert_eq!(g.expires_at_ms, Some(11_000));
        assert_eq!(h.lock().grants[0].args_key, "tap\u{1f}2");
        // A new run forgets grants and denials.
        e.begin_run("r2");
        assert_eq!(h.status().pending_overrides, 0);
        assert!(h.status().recent_denials.is_empty());
    }
}
