//! Several sessions at once, one per phone (issue #13): which phone's runtime session a control
//! reaches. A start on a phone makes that phone's session (a start on a phone that is busy is
//! refused, another phone's run goes on); stop, pause, the approve-for-me controls and the
//! status commands take an optional `serial` — a phone's serial or a run id — and without one
//! reach the selected phone's session when it is busy, else the only busy one, else the
//! selected phone's; answers go to the session holding the request.

use phoneagent_protocol::Op;
use phoneagent_runtime::{Ack, Session, SessionError, Submitter};

use crate::console::{Console, PhoneSession, lock};
use crate::dto::PhoneRunView;
use crate::error::{AppError, AppResult};
use crate::runs::session_error;

impl PhoneSession {
    /// True when `target` names this phone (its serial) or one of its runs (active or last).
    fn is(&self, target: &str) -> bool {
        if self.device.serial == target {
            return true;
        }
        let st = self.session.status();
        st.run_id.as_deref() == Some(target) || st.last.as_ref().is_some_and(|o| o.run_id == target)
    }
}

impl Console {
    /// Every phone's session, in serial order.
    pub(crate) fn phone_sessions(&self) -> Vec<PhoneSession> {
        let mut v: Vec<PhoneSession> = lock(&self.sessions).values().cloned().collect();
        v.sort_by(|a, b| a.device.serial.cmp(&b.device.serial));
        v
    }

    /// The session a control without a target reaches: the selected phone's when it is busy,
    /// else the only busy one, else the selected phone's, else the only one.
    fn default_session(&self) -> Option<PhoneSession> {
        let all = self.phone_sessions();
        let selected = lock(&self.selected).clone().map(|s| s.serial);
        let of_selected = all
            .iter()
            .find(|p| Some(&p.device.serial) == selected.as_ref())
            .cloned();
        if let Some(p) = of_selected.as_ref().filter(|p| p.session.is_busy()) {
            return Some(p.clone());
        }
        let busy: Vec<&PhoneSession> = all.iter().filter(|p| p.session.is_busy()).collect();
        if let [only] = busy.as_slice() {
            return Some((*only).clone());
        }
        if of_selected.is_some() {
            return of_selected;
        }
        match all.as_slice() {
            [only] => Some(only.clone()),
            _ => None,
        }
    }

    /// The session `target` (a serial or a run id; `None` or empty: see the module docs)
    /// names, if any.
    pub(crate) fn session_of(&self, target: Option<&str>) -> Option<PhoneSession> {
        match target.filter(|t| !t.is_empty()) {
            None => self.default_session(),
            Some(t) => self.phone_sessions().into_iter().find(|p| p.is(t)),
        }
    }

    /// The session of phone `serial` itself (no fallback), if a run was started there.
    pub(crate) fn session_on(&self, serial: &str) -> Option<Session> {
        lock(&self.sessions).get(serial).map(|p| p.session.clone())
    }

    /// The session holding pending request `id`, if one does.
    pub(crate) fn session_holding(&self, id: &str) -> Option<Session> {
        self.phone_sessions()
            .into_iter()
            .map(|p| p.session)
            .find(|s| s.pending().iter().any(|r| r.id == id))
    }

    /// Submit `op` to the session `target` names ([`Console::session_of`]) as the person at
    /// the window.
    ///
    /// # Errors
    /// `not_running` when no such session exists; the session's refusal ([`session_error`]).
    pub(crate) fn submit_to(&self, target: Option<&str>, op: Op) -> AppResult<Ack> {
        let p = self.session_of(target).ok_or_else(|| match target {
            Some(t) if !t.is_empty() => AppError::new(
                "not_running",
                format!("no run on the phone or with the id {t:?}"),
            ),
            _ => session_error(SessionError::NotRunning),
        })?;
        p.session
            .submit_as(Submitter::Person, op)
            .map_err(session_error)
    }

    /// Every phone that has a run (running, or its last one finished), in serial order
    /// (command `active_runs`): what the Run view shows a panel for.
    pub fn active_runs(&self) -> Vec<PhoneRunView> {
        self.phone_sessions()
            .into_iter()
            .map(|p| {
                let st = p.session.status();
                PhoneRunView {
                    adb_addr: p.device.adb_addr,
                    serial: p.device.serial,
                    busy: p.session.is_busy(),
                    paused: st.paused,
                    run_id: st
                        .run_id
                        .or_else(|| st.last.as_ref().map(|o| o.run_id.clone())),
                    pending: st.pending.len() as u32,
                }
            })
            .collect()
    }
}
