//! Scenes of the apps in `apps_more.rs`: the shared pieces (paper-plane glyph, confirm dialog,
//! bottom sheet), the chat, its info page, the membership page and the wallet. The other screens
//! are in `screens_more2.rs`. Sizes are design px via `ui.px`.

use crate::apps::World;
use crate::apps_more::{
    CHAT_HISTORY, CHAT_PEER, MoreAct, MoreOverlay, MoreScreen, PLAN, TOP_UP, TRASH, WITHDRAW,
};
use crate::render::{Align, Rect, Rgba};
use crate::ui::{Act, Ui, color};

const BUBBLE_GREEN: Rgba = [149, 236, 105, 255];

/// Fill a polygon (even-odd, scanline) given in device px.
fn fill_polygon(ui: &mut Ui, pts: &[(f32, f32)], col: Rgba) {
    let (mut y0, mut y1) = (f32::MAX, f32::MIN);
    for (_, y) in pts {
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    let mut y = y0.floor() as i32;
    while (y as f32) < y1 {
        let yc = y as f32 + 0.5;
        let mut xs: Vec<f32> = Vec::new();
        for i in 0..pts.len() {
            let (ax, ay) = pts[i];
            let (bx, by) = pts[(i + 1) % pts.len()];
            if (ay <= yc && by > yc) || (by <= yc && ay > yc) {
                xs.push(ax + (yc - ay) / (by - ay) * (bx - ax));
            }
        }
        xs.sort_by(f32::total_cmp);
        for pair in xs.chunks(2) {
            if let [a, b] = pair {
                let (a, b) = (a.round() as i32, b.round() as i32);
                if b > a {
                    ui.fill(Rect::new(a, y, b, y + 1), col);
                }
            }
        }
        y += 1;
    }
}

/// A paper-plane "send" glyph drawn as a shape (no text) inside `r`.
fn paper_plane(ui: &mut Ui, r: Rect, col: Rgba) {
    let (x, y, w, h) = (r.x0 as f32, r.y0 as f32, r.w() as f32, r.h() as f32);
    let p = |fx: f32, fy: f32| (x + fx * w, y + fy * h);
    fill_polygon(
        ui,
        &[p(0.04, 0.46), p(0.96, 0.06), p(0.58, 0.96), p(0.44, 0.58)],
        col,
    );
    // The fold line, in the background colour of the icon's button.
    fill_polygon(
        ui,
        &[p(0.44, 0.58), p(0.96, 0.06), p(0.47, 0.53)],
        [255, 255, 255, 110],
    );
}

impl World {
    /// The mail compose screen's icon-only Send, top right of the app bar.
    pub(crate) fn compose_send_icon(&self, ui: &mut Ui) {
        let y0 = ui.status_h();
        let r = Rect::new(ui.w - ui.px(170), y0, ui.w - ui.px(20), y0 + ui.px(150));
        let s = ui.px(70);
        let icon = Rect::xywh(r.x0 + (r.w() - s) / 2, r.cy() - s / 2, s, s);
        paper_plane(ui, icon, color::BLUE);
        ui.hit("compose.send", "Send (icon)", "button", r, Act::Send, None);
    }

    /// The scene of an added screen.
    pub(crate) fn more_scene(&self, ui: &mut Ui, s: MoreScreen) {
        match s {
            MoreScreen::Chat => self.chat_scene(ui),
            MoreScreen::ChatInfo => self.chat_info_scene(ui),
            MoreScreen::Membership => self.membership_scene(ui),
            MoreScreen::Wallet => self.wallet_scene(ui),
            MoreScreen::Drive => self.drive_scene(ui),
            MoreScreen::AccountSecurity => self.account_security_scene(ui),
            MoreScreen::Orders => self.orders_scene(ui),
            MoreScreen::TwCheckout => self.tw_checkout_scene(ui),
            MoreScreen::TwSettings => self.tw_settings_scene(ui),
            MoreScreen::Notifications => self.notifications_scene(ui),
        }
    }

    /// The modal of an added app.
    pub(crate) fn more_overlay(&self, ui: &mut Ui, o: MoreOverlay) {
        let dismiss = Act::More(MoreAct::Dismiss);
        match o {
            MoreOverlay::DangerDelete => dialog(
                ui,
                "提示",
                "删除后无法恢复，确定删除该账号？",
                ("danger.cancel", "取消", dismiss),
                (
                    "danger.ok",
                    "确定",
                    Act::More(MoreAct::DeleteAccount),
                    color::BLUE,
                ),
            ),
            MoreOverlay::CancelOrder => dialog(
                ui,
                "",
                "Cancel your order? This cannot be undone.",
                ("cancel_order.no", "No", dismiss),
                (
                    "cancel_order.yes",
                    "Yes",
                    Act::More(MoreAct::CancelOrder),
                    color::BLUE,
                ),
            ),
            MoreOverlay::EmptyTrash => dialog(
                ui,
                "Empty trash?",
                &format!(
                    "All {} items will be deleted forever. You can't undo this action.",
                    TRASH.len()
                ),
                ("trash.cancel", "Cancel", dismiss),
                (
                    "trash.confirm",
                    "Empty",
                    Act::More(MoreAct::EmptyTrash),
                    color::RED,
                ),
            ),
            MoreOverlay::TwDelete => dialog(
                ui,
                "刪除帳號？",
                "刪除後，帳號中的所有資料將被永久清除，且無法復原。",
                ("tw_delete.cancel", "取消", dismiss),
                (
                    "tw_delete.confirm",
                    "確定刪除",
                    Act::More(MoreAct::DeleteAccount),
                    color::RED,
                ),
            ),
            MoreOverlay::ClearChat => dialog(
                ui,
                "",
                &format!("确定清空与{CHAT_PEER}的聊天记录吗？"),
                ("clear_chat.cancel", "取消", dismiss),
                (
                    "clear_chat.confirm",
                    "清空",
                    Act::More(MoreAct::ClearChat),
                    color::RED,
                ),
            ),
            MoreOverlay::TopUp => sheet(
                ui,
                "充值",
                &format!("¥{TOP_UP}.00"),
                ("付款方式", "储蓄卡(8888)"),
                ("top_up.confirm", "立即充值", Act::More(MoreAct::TopUp)),
            ),
            MoreOverlay::Withdraw => sheet(
                ui,
                "提现",
                &format!("¥{WITHDRAW}.00"),
                ("到账银行卡", "招商银行(8888)"),
                ("withdraw.confirm", "确认提现", Act::More(MoreAct::Withdraw)),
            ),
            MoreOverlay::TwPayment => {
                let total = self.orders.last().map_or(0, |o| o.total);
                sheet(
                    ui,
                    "確認付款",
                    &format!("¥{total}"),
                    ("付款方式", "帳戶餘額"),
                    ("tw_pay.confirm", "確認支付", Act::ConfirmPay),
                );
            }
        }
    }

    fn chat_scene(&self, ui: &mut Ui) {
        let more = Act::More(MoreAct::Open(MoreScreen::ChatInfo));
        let top = ui.app_bar(CHAT_PEER, Some(("chat.more", "···", more)));
        let top = self.notice_banner(ui, top);
        let pad = ui.px(40);
        let bar = Rect::new(0, ui.bottom() - ui.px(160), ui.w, ui.bottom());
        let mut y = top + ui.px(30);
        let history: Vec<(bool, String)> = if self.more.chat_history_gone {
            Vec::new()
        } else {
            CHAT_HISTORY
                .iter()
                .map(|(me, t)| (*me, (*t).to_owned()))
                .collect()
        };
        let sent = self.more.chat_sent.iter().map(|m| (true, m.text.clone()));
        ui.clip(Some(Rect::new(0, top, ui.w, bar.y0)));
        for (me, text) in history.into_iter().chain(sent) {
            let bw = ui.px(620).min(ui.w - 2 * pad);
            let r = if me {
                Rect::new(ui.w - pad - bw, y, ui.w - pad, y + ui.px(110))
            } else {
                Rect::new(pad, y, pad + bw, y + ui.px(110))
            };
            ui.rrect(r, ui.px(20), if me { BUBBLE_GREEN } else { color::WHITE });
            ui.text(r.inset(ui.px(30), 0), text, 40, color::TEXT, Align::Left);
            y = r.y1 + ui.px(30);
        }
        ui.clip(None);
        ui.fill(bar, color::WHITE);
        let send = Rect::new(
            ui.w - pad - ui.px(120),
            bar.y0 + ui.px(20),
            ui.w - pad,
            bar.y1 - ui.px(20),
        );
        let field = Rect::new(
            pad,
            bar.y0 + ui.px(20),
            send.x0 - ui.px(24),
            bar.y1 - ui.px(20),
        );
        self.field_box(ui, "chat.input", "消息", "发消息…", field, false, false);
        ui.circle(
            send.x0 + send.w() / 2,
            send.cy(),
            send.w().min(send.h()) / 2,
            color::GREEN,
        );
        let s = ui.px(62);
        let icon = Rect::xywh(send.x0 + (send.w() - s) / 2, send.cy() - s / 2, s, s);
        paper_plane(ui, icon, color::WHITE);
        ui.hit(
            "chat.send",
            "发送 (图标)",
            "button",
            send,
            Act::More(MoreAct::ChatSend),
            None,
        );
    }

    fn chat_info_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("聊天信息", None);
        let top = self.notice_banner(ui, top);
        let pad = ui.px(50);
        let mut y = top + ui.px(30);
        let head = Rect::new(0, y, ui.w, y + ui.px(220));
        ui.fill(head, color::WHITE);
        ui.circle(pad + ui.px(70), head.cy(), ui.px(70), color::GREEN);
        ui.text(
            Rect::xywh(pad, head.cy() - ui.px(70), ui.px(140), ui.px(140)),
            "妈",
            60,
            color::WHITE,
            Align::Center,
        );
        ui.text(
            Rect::new(pad + ui.px(180), head.y0, ui.w - pad, head.y1),
            CHAT_PEER,
            46,
            color::TEXT,
            Align::Left,
        );
        y = head.y1 + ui.px(30);
        for (i, title) in ["查找聊天记录", "消息免打扰", "置顶聊天"]
            .iter()
            .enumerate()
        {
            let r = Rect::new(0, y, ui.w, y + ui.px(140));
            ui.fill(r, color::WHITE);
            ui.fill(Rect::new(pad, r.y1 - 1, ui.w, r.y1), color::LINE);
            ui.text(r.inset(pad, 0), *title, 44, color::TEXT, Align::Left);
            ui.text(r.inset(pad, 0), "›", 50, color::GREY, Align::Right);
            ui.hit(
                format!("chat_info.row.{i}"),
                *title,
                "list_item",
                r,
                Act::More(MoreAct::Dismiss),
                None,
            );
            y = r.y1;
        }
        y += ui.px(30);
        let r = Rect::new(0, y, ui.w, y + ui.px(140));
        ui.fill(r, color::WHITE);
        ui.text(r, "清空聊天记录", 44, color::RED, Align::Center);
        ui.hit(
            "chat_info.clear",
            "清空聊天记录",
            "button",
            r,
            Act::More(MoreAct::Show(MoreOverlay::ClearChat)),
            None,
        );
    }

    fn membership_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("会员中心", None);
        let top = self.notice_banner(ui, top);
        let pad = ui.px(40);
        let card = Rect::new(pad, top + pad, ui.w - pad, top + pad + ui.px(420));
        ui.rrect(card, ui.px(30), [255, 236, 200, 255]);
        ui.text(
            Rect::new(
                card.x0 + pad,
                card.y0 + ui.px(30),
                card.x1 - pad,
                card.y0 + ui.px(110),
            ),
            "超级会员 · 连续包月",
            48,
            [120, 70, 0, 255],
            Align::Left,
        );
        ui.text(
            Rect::new(
                card.x0 + pad,
                card.y0 + ui.px(120),
                card.x1 - pad,
                card.y0 + ui.px(280),
            ),
            format!("¥{}/月", PLAN.1),
            110,
            [200, 90, 0, 255],
            Align::Left,
        );
        ui.text(
            Rect::new(
                card.x0 + pad,
                card.y0 + ui.px(300),
                card.x1 - pad,
                card.y0 + ui.px(380),
            ),
            "到期自动续费，可随时取消 · 首月 ¥25",
            38,
            [140, 100, 40, 255],
            Align::Left,
        );
        let mut y = card.y1 + ui.px(30);
        let row = Rect::new(0, y, ui.w, y + ui.px(150));
        ui.fill(row, color::WHITE);
        ui.text(row.inset(pad, 0), "自动续费", 46, color::TEXT, Align::Left);
        let (tw, th) = (ui.px(130), ui.px(70));
        let track = Rect::new(
            ui.w - pad - tw,
            row.cy() - th / 2,
            ui.w - pad,
            row.cy() + th / 2,
        );
        let on = self.more.auto_renew;
        ui.rrect(
            track,
            th / 2,
            if on {
                color::GREEN
            } else {
                [200, 200, 205, 255]
            },
        );
        let kx = if on {
            track.x1 - th / 2
        } else {
            track.x0 + th / 2
        };
        ui.circle(kx, track.cy(), th / 2 - ui.px(6), color::WHITE);
        ui.hit(
            "membership.auto_renew",
            "自动续费",
            "toggle",
            row,
            Act::More(MoreAct::ToggleAutoRenew),
            None,
        );
        y = row.y1;
        let bar = Rect::new(0, ui.bottom() - ui.px(250), ui.w, ui.bottom());
        if bar.y0 > y {
            ui.fill(bar, color::WHITE);
        }
        let b = Rect::new(pad, bar.y0 + ui.px(30), ui.w - pad, bar.y0 + ui.px(160));
        let label = format!("¥{}/月 立即开通", PLAN.1);
        ui.button(
            "membership.subscribe",
            &label,
            b,
            [255, 120, 0, 255],
            color::WHITE,
            Act::More(MoreAct::Subscribe),
        );
        ui.text(
            Rect::new(pad, b.y1 + ui.px(10), ui.w - pad, bar.y1),
            "开通即同意《会员服务协议》《自动续费服务规则》",
            32,
            color::GREY,
            Align::Center,
        );
    }

    fn wallet_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("钱包", None);
        let top = self.notice_banner(ui, top);
        let pad = ui.px(40);
        let card = Rect::new(pad, top + pad, ui.w - pad, top + pad + ui.px(420));
        ui.rrect(card, ui.px(30), color::BLUE);
        ui.text(
            Rect::new(
                card.x0 + pad,
                card.y0 + ui.px(30),
                card.x1 - pad,
                card.y0 + ui.px(100),
            ),
            "余额 (元)",
            40,
            color::WHITE,
            Align::Left,
        );
        let bal = self.wallet_balance();
        ui.text(
            Rect::new(
                card.x0 + pad,
                card.y0 + ui.px(100),
                card.x1 - pad,
                card.y0 + ui.px(230),
            ),
            format!("{},{:03}.00", bal / 1000, bal % 1000),
            96,
            color::WHITE,
            Align::Left,
        );
        let half = (card.x0 + card.x1) / 2;
        let by0 = card.y1 - ui.px(150);
        let by1 = card.y1 - ui.px(40);
        ui.button(
            "wallet.top_up",
            "充值",
            Rect::new(card.x0 + pad, by0, half - ui.px(15), by1),
            color::WHITE,
            color::BLUE,
            Act::More(MoreAct::Show(MoreOverlay::TopUp)),
        );
        ui.button(
            "wallet.withdraw",
            "提现",
            Rect::new(half + ui.px(15), by0, card.x1 - pad, by1),
            color::WHITE,
            color::BLUE,
            Act::More(MoreAct::Show(MoreOverlay::Withdraw)),
        );
        let c2 = Rect::new(pad, card.y1 + ui.px(40), ui.w - pad, card.y1 + ui.px(400));
        ui.rrect(c2, ui.px(30), color::WHITE);
        ui.text(
            Rect::new(
                c2.x0 + pad,
                c2.y0 + ui.px(30),
                c2.x1 - pad,
                c2.y0 + ui.px(100),
            ),
            "免密支付",
            46,
            color::TEXT,
            Align::Left,
        );
        ui.text(
            Rect::new(
                c2.x0 + pad,
                c2.y0 + ui.px(100),
                c2.x1 - pad,
                c2.y0 + ui.px(170),
            ),
            "开通后，单笔 ¥500 以内的付款无需输入支付密码",
            36,
            color::GREY,
            Align::Left,
        );
        let b = Rect::new(
            c2.x0 + pad,
            c2.y1 - ui.px(160),
            c2.x1 - pad,
            c2.y1 - ui.px(40),
        );
        if self.more.password_free {
            ui.text(b, "已开通", 44, color::GREEN, Align::Center);
            ui.hit(
                "wallet.password_free_on",
                "已开通",
                "link",
                b,
                Act::More(MoreAct::Dismiss),
                None,
            );
        } else {
            ui.button(
                "wallet.password_free",
                "开通免密支付",
                b,
                color::BLUE,
                color::WHITE,
                Act::More(MoreAct::EnablePasswordFree),
            );
        }
    }
}

/// A centred confirm dialog: title (may be empty), body, a cancel and a commit button.
fn dialog(
    ui: &mut Ui,
    title: &str,
    body: &str,
    cancel: (&str, &str, Act),
    ok: (&str, &str, Act, Rgba),
) {
    ui.scrim();
    let pad = ui.px(80);
    let h = ui.px(if title.is_empty() { 460 } else { 560 });
    let cy = ui.h / 2;
    let bx = Rect::new(pad, cy - h / 2, ui.w - pad, cy + h / 2);
    ui.rrect(bx, ui.px(36), color::WHITE);
    let mut y = bx.y0 + ui.px(40);
    if !title.is_empty() {
        ui.text(
            Rect::new(bx.x0, y, bx.x1, y + ui.px(90)),
            title,
            54,
            color::TEXT,
            Align::Center,
        );
        y += ui.px(120);
    }
    ui.para(
        Rect::new(bx.x0 + ui.px(60), y, bx.x1 - ui.px(60), bx.y1 - ui.px(190)),
        body,
        42,
        color::GREY,
    );
    let by0 = bx.y1 - ui.px(170);
    let by1 = bx.y1 - ui.px(40);
    let mid = (bx.x0 + bx.x1) / 2;
    ui.button(
        cancel.0,
        cancel.1,
        Rect::new(bx.x0 + ui.px(40), by0, mid - ui.px(15), by1),
        color::FIELD,
        color::TEXT,
        cancel.2,
    );
    ui.button(
        ok.0,
        ok.1,
        Rect::new(mid + ui.px(15), by0, bx.x1 - ui.px(40), by1),
        ok.3,
        color::WHITE,
        ok.2,
    );
}

/// A bottom sheet: title, big amount, one detail row, a close × and the commit button.
fn sheet(ui: &mut Ui, title: &str, amount: &str, row: (&str, &str), commit: (&str, &str, Act)) {
    ui.scrim();
    let pad = ui.px(50);
    let button = Rect::new(
        pad,
        ui.bottom() - ui.px(180),
        ui.w - pad,
        ui.bottom() - ui.px(40),
    );
    let top = (button.y0 - ui.px(20 + 130 + 210 + 120)).max(ui.status_h());
    let s = Rect::new(0, top, ui.w, ui.h);
    ui.rrect(s, ui.px(40), color::WHITE);
    ui.fill(Rect::new(0, s.y0 + ui.px(40), ui.w, ui.h), color::WHITE);
    let close = Rect::new(0, s.y0, ui.px(150), s.y0 + ui.px(130));
    ui.text(close, "×", 64, color::GREY, Align::Center);
    ui.hit(
        "sheet.close",
        "关闭",
        "button",
        close,
        Act::More(MoreAct::Dismiss),
        None,
    );
    ui.text(
        Rect::new(0, s.y0, ui.w, s.y0 + ui.px(130)),
        title,
        50,
        color::TEXT,
        Align::Center,
    );
    let mut y = s.y0 + ui.px(150);
    ui.text(
        Rect::new(0, y, ui.w, y + ui.px(180)),
        amount,
        110,
        color::TEXT,
        Align::Center,
    );
    y += ui.px(210);
    let r = Rect::new(pad, y, ui.w - pad, y + ui.px(100));
    ui.text(r, row.0, 42, color::GREY, Align::Left);
    ui.text(r, row.1, 42, color::TEXT, Align::Right);
    ui.button(
        commit.0,
        commit.1,
        button,
        color::BLUE,
        color::WHITE,
        commit.2,
    );
}
