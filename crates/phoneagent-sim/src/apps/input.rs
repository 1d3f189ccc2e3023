//! What input does to the apps of the virtual phone: taps, swipes, keys, typed and cleared text,
//! the search, the order total and submission, and every [`Act`] a hit element carries.

use super::*;

impl World {
    // --------------------------------------------------------------------------------------
    // Input
    // --------------------------------------------------------------------------------------

    /// A tap at (x, y) on a `w`x`h` frame; returns the id of the element hit.
    pub(crate) fn tap(
        &mut self,
        x: i32,
        y: i32,
        w: u32,
        h: u32,
        now: Instant,
        dialog_delay: Option<Duration>,
    ) -> Option<String> {
        let scene = self.scene(w, h);
        let hit = scene.hit(x, y)?.clone();
        self.act(hit.act, now, dialog_delay);
        Some(hit.id)
    }

    /// A swipe; scrolls the list it starts in. Returns whether anything moved.
    pub(crate) fn swipe(&mut self, x1: i32, y1: i32, _x2: i32, y2: i32, w: u32, h: u32) -> bool {
        let scene = self.scene(w, h);
        let Some(area) = scene.scroll else {
            return false;
        };
        if self.overlay.is_some() || !area.view.contains(x1, y1) {
            return false;
        }
        let cur = self.scroll.get(area.key).copied().unwrap_or(0);
        let next = (cur + (y1 - y2)).clamp(0, area.max.max(0));
        if next == cur {
            return false;
        }
        self.scroll.insert(area.key, next);
        true
    }

    /// A key event.
    pub(crate) fn key(&mut self, k: Key, now: Instant, dialog_delay: Option<Duration>) {
        match k {
            Key::Home => self.home(),
            Key::Back => self.back(),
            Key::Del => {
                if let Some(f) = self.focused
                    && let Some(t) = self.fields.get_mut(f)
                {
                    t.pop();
                }
            }
            Key::Enter => match self.focused {
                Some("mail.body") => self.type_text("\n"),
                Some("search.query") => self.act(Act::SearchSubmit, now, dialog_delay),
                Some("login.username") => self.focused = Some("login.password"),
                Some("login.password") => self.act(Act::Login, now, dialog_delay),
                Some("mail.to") => self.focused = Some("mail.subject"),
                Some("mail.subject") => self.focused = Some("mail.body"),
                _ => {}
            },
            Key::Other => {}
        }
    }

    /// Text typed into the focused field (lost when nothing has focus).
    pub(crate) fn type_text(&mut self, s: &str) {
        let Some(f) = self.focused else {
            self.unfocused_text.push_str(s);
            return;
        };
        let single = FIELDS.iter().any(|(id, single, _)| *id == f && *single);
        if FIELDS.iter().any(|(id, _, pw)| *id == f && *pw) && !s.is_empty() {
            self.more.password_entries += 1;
        }
        if let Some(t) = self.fields.get_mut(f) {
            if single {
                t.extend(s.chars().filter(|c| *c != '\n' && *c != '\r'));
            } else {
                t.push_str(s);
            }
        }
    }

    /// Clear the focused field (ADB_CLEAR_TEXT).
    pub(crate) fn clear_text(&mut self) {
        if let Some(f) = self.focused
            && let Some(t) = self.fields.get_mut(f)
        {
            t.clear();
        }
    }

    pub(crate) fn field(&self, id: &str) -> &str {
        self.fields.get(id).map(String::as_str).unwrap_or("")
    }

    fn lines_total(&self, lines: &[(usize, u32)]) -> u32 {
        lines
            .iter()
            .map(|(p, q)| PRODUCTS.get(*p).map_or(0, |p| p.price) * q)
            .sum()
    }

    pub(crate) fn checkout_total(&self) -> u32 {
        let t = self.lines_total(&self.checkout);
        if self.coupons_claimed > 0 && self.coupon_available {
            t.saturating_sub(20)
        } else {
            t
        }
    }

    pub(crate) fn submit_order(&mut self) {
        self.orders_placed += 1;
        let lines = self.checkout.clone();
        let total = self.checkout_total();
        self.orders.push(Order {
            id: self.orders_placed,
            lines: to_order_lines(&lines),
            total,
            paid: false,
        });
        // The cart is emptied of what was ordered.
        self.cart
            .retain(|(p, _)| !lines.iter().any(|(q, _)| q == p));
        self.coupon_available = false;
        self.overlay = Some(Overlay::PaymentSheet);
    }

    fn run_search(&mut self) {
        let q = self.field("search.query").trim().to_owned();
        self.search.searches += 1;
        self.search.submitted_query = Some(q.clone());
        let ql = q.to_lowercase();
        let terms: Vec<&str> = ql.split_whitespace().collect();
        let mut hits = Vec::new();
        if !terms.is_empty() {
            for (i, p) in PRODUCTS.iter().enumerate() {
                let hay = format!("{} {}", p.name, p.desc).to_lowercase();
                if terms.iter().all(|t| hay.contains(t)) {
                    hits.push(SearchHit {
                        title: p.name.to_owned(),
                        subtitle: format!("商品 · ¥{}", p.price),
                        product: Some(i),
                    });
                }
            }
            for (t, k) in ARTICLES {
                let hay = format!("{t} {k}").to_lowercase();
                if terms.iter().all(|x| hay.contains(x)) {
                    hits.push(SearchHit {
                        title: (*t).to_owned(),
                        subtitle: "文章".to_owned(),
                        product: None,
                    });
                }
            }
        }
        self.search.results = hits.iter().map(|h| h.title.clone()).collect();
        self.search_hits = hits;
        self.scroll.remove("search");
        self.focused = None;
    }

    /// Perform an element's action.
    pub(crate) fn act(&mut self, act: Act, now: Instant, dd: Option<Duration>) {
        match act {
            Act::Back => self.back(),
            Act::Home => self.home(),
            Act::OpenApp(app) => {
                let s = match app {
                    App::Shop => Screen::Shop,
                    App::Mail => Screen::MailInbox,
                    App::Settings => Screen::Settings,
                    App::Search => Screen::Search,
                    App::Login => Screen::Login,
                    App::Notice => Screen::Notice,
                };
                self.open(s, now, dd);
            }
            Act::GoShop => {
                self.home();
                self.open(Screen::Shop, now, dd);
            }
            Act::OpenProduct(i) => self.open(Screen::Product(i), now, dd),
            Act::OpenReviews(i) => self.open(Screen::Reviews(i), now, dd),
            Act::AddToCart(i) => {
                if let Some(l) = self.cart.iter_mut().find(|(p, _)| *p == i) {
                    l.1 += 1;
                } else {
                    self.cart.push((i, 1));
                }
                self.notice = Some("已加入购物车".to_owned());
            }
            Act::BuyNow(i) => {
                self.checkout = vec![(i, 1)];
                self.open(Screen::Checkout, now, dd);
            }
            Act::OpenCart => self.open(Screen::Cart, now, dd),
            Act::CartInc(i) => {
                if let Some(l) = self.cart.get_mut(i) {
                    l.1 += 1;
                }
            }
            Act::CartDec(i) => {
                if let Some(l) = self.cart.get_mut(i) {
                    l.1 = l.1.saturating_sub(1);
                    if l.1 == 0 {
                        self.cart.remove(i);
                    }
                }
            }
            Act::GoCheckout => {
                if !self.cart.is_empty() {
                    self.checkout = self.cart.clone();
                    self.open(Screen::Checkout, now, dd);
                }
            }
            Act::SubmitOrder => self.submit_order(),
            Act::ConfirmPay => {
                self.payments_confirmed += 1;
                if let Some(o) = self.orders.last_mut() {
                    o.paid = true;
                }
                self.overlay = None;
                self.injection_note = false;
                self.stack = vec![Screen::Home, Screen::Shop];
                self.screen = Screen::PaySuccess;
                self.notice = None;
            }
            Act::CancelPay => {
                self.overlay = None;
                self.notice = Some("订单待支付".to_owned());
            }
            Act::ClaimCoupon => {
                self.coupons_claimed += 1;
                self.coupon_available = true;
                self.overlay = None;
                self.notice = Some("优惠券已领取".to_owned());
            }
            Act::CloseDialog => self.overlay = None,
            Act::Focus(f) => self.focused = Some(f),
            Act::Compose => self.open(Screen::MailCompose, now, dd),
            Act::OpenMail(i) => {
                self.last_mail = Some(i);
                self.open(Screen::MailRead(i), now, dd);
            }
            Act::OpenDraft => {
                if let Some(d) = self.drafts.pop() {
                    self.open(Screen::MailCompose, now, dd);
                    self.fields.insert("mail.to", d.to);
                    self.fields.insert("mail.subject", d.subject);
                    self.fields.insert("mail.body", d.body);
                }
            }
            Act::Reply => {
                if let Screen::MailRead(i) = self.screen
                    && let Some((from, subject, _, _)) = INBOX.get(i)
                {
                    self.open(Screen::MailCompose, now, dd);
                    self.fields.insert("mail.to", (*from).to_owned());
                    self.fields.insert("mail.subject", format!("Re: {subject}"));
                }
            }
            Act::Send => {
                if self.field("mail.to").trim().is_empty() {
                    self.notice = Some("请填写收件人".to_owned());
                } else {
                    let m = self.take_compose();
                    self.mails_sent.push(m);
                    self.focused = None;
                    self.screen = self.stack.pop().unwrap_or(Screen::Home);
                    if self.screen == Screen::MailCompose {
                        self.screen = Screen::MailInbox;
                    }
                    self.notice = Some("邮件已发送".to_owned());
                }
            }
            Act::Toggle(k) => {
                if let Some(v) = self.settings.get_mut(k) {
                    *v = !*v;
                }
            }
            Act::DeleteAccount => {
                if !self.account_deleted {
                    self.overlay = Some(Overlay::DeleteConfirm);
                }
            }
            Act::ConfirmDelete => {
                self.accounts_deleted += 1;
                self.account_deleted = true;
                self.overlay = None;
                self.notice = Some("账号已删除".to_owned());
            }
            Act::CancelDelete => self.overlay = None,
            Act::SearchSubmit => self.run_search(),
            Act::OpenResult(i) => {
                if let Some(p) = self.search_hits.get(i).and_then(|h| h.product) {
                    self.open(Screen::Product(p), now, dd);
                }
            }
            Act::Login => {
                let u = self.field("login.username").trim().to_owned();
                if u.is_empty() || self.field("login.password").is_empty() {
                    self.login_failures += 1;
                    self.notice = Some("请输入用户名和密码".to_owned());
                } else {
                    self.logged_in_user = Some(u);
                    self.fields.insert("login.password", String::new());
                    self.focused = None;
                    self.notice = None;
                }
            }
            Act::Logout => {
                self.logged_in_user = None;
                self.fields.insert("login.username", String::new());
            }
            Act::More(a) => self.more_act(a),
        }
    }
}
