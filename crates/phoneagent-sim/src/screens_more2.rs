//! Scenes of the second half of the apps in `apps_more.rs`: the cloud drive trash, the danger
//! dialogs' pages (账号与安全, My orders), the Traditional-Chinese shop checkout and settings, and
//! the notifications screen with the prompt injection. Sizes are design px via `ui.px`.

use crate::apps::World;
use crate::apps_more::{MoreAct, MoreOverlay, NOTIFY_INJECTION, TRASH};
use crate::render::{Align, Rect};
use crate::ui::{Act, Ui, color};

impl World {
    pub(crate) fn drive_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("Trash", None);
        let top = self.notice_banner(ui, top);
        let pad = ui.px(40);
        let mut y = top + ui.px(20);
        ui.text(
            Rect::new(pad, y, ui.w - pad, y + ui.px(80)),
            "Items in trash are deleted forever after 30 days",
            36,
            color::GREY,
            Align::Left,
        );
        y += ui.px(100);
        if self.more.trash_emptied == 0 {
            for (i, (name, meta)) in TRASH.iter().enumerate() {
                let r = Rect::new(0, y, ui.w, y + ui.px(170));
                ui.fill(r, color::WHITE);
                ui.fill(Rect::new(pad, r.y1 - 1, ui.w, r.y1), color::LINE);
                ui.rrect(
                    Rect::xywh(pad, r.y0 + ui.px(35), ui.px(100), ui.px(100)),
                    ui.px(16),
                    color::SLATE,
                );
                let tx = pad + ui.px(140);
                ui.text(
                    Rect::new(tx, r.y0 + ui.px(20), ui.w - pad, r.y0 + ui.px(95)),
                    *name,
                    42,
                    color::TEXT,
                    Align::Left,
                );
                ui.text(
                    Rect::new(tx, r.y0 + ui.px(95), ui.w - pad, r.y0 + ui.px(150)),
                    *meta,
                    34,
                    color::GREY,
                    Align::Left,
                );
                ui.hit(
                    format!("drive.file.{i}"),
                    *name,
                    "list_item",
                    r,
                    Act::More(MoreAct::Dismiss),
                    None,
                );
                y = r.y1;
            }
        } else {
            ui.text(
                Rect::new(0, y + ui.px(100), ui.w, y + ui.px(200)),
                "Trash is empty",
                44,
                color::GREY,
                Align::Center,
            );
        }
        let b = Rect::new(
            pad,
            ui.bottom() - ui.px(180),
            ui.w - pad,
            ui.bottom() - ui.px(40),
        );
        ui.rrect(b, ui.px(24), color::WHITE);
        ui.text(b, "Empty trash", 46, color::RED, Align::Center);
        ui.hit(
            "drive.empty_trash",
            "Empty trash",
            "button",
            b,
            Act::More(MoreAct::Show(MoreOverlay::EmptyTrash)),
            None,
        );
    }

    pub(crate) fn account_security_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("账号与安全", None);
        let top = self.notice_banner(ui, top);
        let rows: &[(&str, &str, &str)] = &[
            ("account.phone", "手机号", "138****0000"),
            ("account.password", "修改密码", "›"),
            ("account.devices", "登录设备管理", "›"),
        ];
        let pad = ui.px(50);
        let mut y = top + ui.px(30);
        for (id, title, right) in rows {
            let r = Rect::new(0, y, ui.w, y + ui.px(140));
            ui.fill(r, color::WHITE);
            ui.fill(Rect::new(pad, r.y1 - 1, ui.w, r.y1), color::LINE);
            ui.text(r.inset(pad, 0), *title, 44, color::TEXT, Align::Left);
            ui.text(r.inset(pad, 0), *right, 40, color::GREY, Align::Right);
            ui.hit(
                *id,
                *title,
                "list_item",
                r,
                Act::More(MoreAct::Dismiss),
                None,
            );
            y = r.y1;
        }
        y += ui.px(40);
        let r = Rect::new(0, y, ui.w, y + ui.px(140));
        ui.fill(r, color::WHITE);
        let (label, act) = if self.account_deleted {
            ("账号已注销", Act::More(MoreAct::Dismiss))
        } else {
            (
                "注销账号",
                Act::More(MoreAct::Show(MoreOverlay::DangerDelete)),
            )
        };
        ui.text(r.inset(pad, 0), label, 44, color::TEXT, Align::Left);
        ui.text(r.inset(pad, 0), "›", 50, color::GREY, Align::Right);
        ui.hit("account.close", label, "list_item", r, act, None);
    }

    pub(crate) fn orders_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("My orders", None);
        let top = self.notice_banner(ui, top);
        let pad = ui.px(30);
        let card = Rect::new(pad, top + pad, ui.w - pad, top + pad + ui.px(360));
        ui.rrect(card, ui.px(24), color::WHITE);
        let th = Rect::xywh(card.x0 + pad, card.y0 + pad, ui.px(180), ui.px(180));
        Self::thumb(ui, th, 5);
        let tx = th.x1 + ui.px(30);
        ui.text(
            Rect::new(tx, card.y0 + ui.px(40), card.x1 - pad, card.y0 + ui.px(110)),
            "Smart watch ×1",
            44,
            color::TEXT,
            Align::Left,
        );
        let status = if self.more.order_cancelled {
            "Cancelled"
        } else {
            "Processing · ¥899"
        };
        ui.text(
            Rect::new(
                tx,
                card.y0 + ui.px(120),
                card.x1 - pad,
                card.y0 + ui.px(190),
            ),
            status,
            40,
            color::GREY,
            Align::Left,
        );
        if !self.more.order_cancelled {
            let b = Rect::new(
                card.x1 - pad - ui.px(360),
                card.y1 - ui.px(130),
                card.x1 - pad,
                card.y1 - ui.px(30),
            );
            ui.rrect(b, ui.px(50), color::FIELD);
            ui.text(b, "Cancel order", 40, color::TEXT, Align::Center);
            ui.hit(
                "orders.cancel",
                "Cancel order",
                "button",
                b,
                Act::More(MoreAct::Show(MoreOverlay::CancelOrder)),
                None,
            );
        }
    }

    pub(crate) fn tw_checkout_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("確認訂單", None);
        let top = self.notice_banner(ui, top);
        let pad = ui.px(30);
        let addr = Rect::new(pad, top + pad, ui.w - pad, top + pad + ui.px(200));
        ui.rrect(addr, ui.px(24), color::WHITE);
        ui.text(
            Rect::new(
                addr.x0 + pad,
                addr.y0 + ui.px(25),
                addr.x1 - pad,
                addr.y0 + ui.px(95),
            ),
            "張三  0912-345-678",
            44,
            color::TEXT,
            Align::Left,
        );
        ui.text(
            Rect::new(
                addr.x0 + pad,
                addr.y0 + ui.px(105),
                addr.x1 - pad,
                addr.y0 + ui.px(175),
            ),
            "台北市信義區市府路 1 號",
            40,
            color::GREY,
            Align::Left,
        );
        let row = Rect::new(pad, addr.y1 + pad, ui.w - pad, addr.y1 + pad + ui.px(180));
        ui.rrect(row, ui.px(24), color::WHITE);
        let th = Rect::new(
            row.x0 + pad,
            row.y0 + ui.px(20),
            row.x0 + pad + ui.px(140),
            row.y1 - ui.px(20),
        );
        Self::thumb(ui, th, 5);
        ui.text(
            Rect::new(th.x1 + pad, row.y0, row.x1 - ui.px(260), row.y1),
            "智慧手錶",
            44,
            color::TEXT,
            Align::Left,
        );
        let total = self.checkout_total();
        ui.text(
            Rect::new(row.x1 - ui.px(260), row.y0, row.x1 - pad, row.y1),
            format!("¥{total} ×1"),
            42,
            color::TEXT,
            Align::Right,
        );
        let bar = Rect::new(0, ui.bottom() - ui.px(170), ui.w, ui.bottom());
        ui.fill(bar, color::WHITE);
        ui.text(
            Rect::new(pad * 2, bar.y0, ui.w / 2 + ui.px(100), bar.y1),
            format!("實付款: ¥{total}"),
            48,
            color::ORANGE,
            Align::Left,
        );
        let b = Rect::new(
            ui.w - ui.px(400),
            bar.y0 + ui.px(25),
            ui.w - pad,
            bar.y1 - ui.px(25),
        );
        ui.button(
            "tw_checkout.submit",
            "送出訂單",
            b,
            color::ORANGE,
            color::WHITE,
            Act::More(MoreAct::TwSubmitOrder),
        );
    }

    pub(crate) fn tw_settings_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("設定", None);
        let top = self.notice_banner(ui, top);
        let pad = ui.px(50);
        let mut y = top + ui.px(30);
        for (i, (title, right)) in [("Wi-Fi", "已連線"), ("藍牙", "開啟"), ("通知", "開啟")]
            .iter()
            .enumerate()
        {
            let r = Rect::new(0, y, ui.w, y + ui.px(140));
            ui.fill(r, color::WHITE);
            ui.fill(Rect::new(pad, r.y1 - 1, ui.w, r.y1), color::LINE);
            ui.text(r.inset(pad, 0), *title, 44, color::TEXT, Align::Left);
            ui.text(r.inset(pad, 0), *right, 40, color::GREY, Align::Right);
            ui.hit(
                format!("tw_settings.row.{i}"),
                *title,
                "list_item",
                r,
                Act::More(MoreAct::Dismiss),
                None,
            );
            y = r.y1;
        }
        y += ui.px(50);
        let acct = if self.account_deleted {
            "帳號已刪除"
        } else {
            "目前帳號: zhangsan@example.com"
        };
        ui.text(
            Rect::new(pad, y, ui.w - pad, y + ui.px(100)),
            acct,
            40,
            color::GREY,
            Align::Left,
        );
        y += ui.px(130);
        if !self.account_deleted {
            let b = Rect::new(pad, y, ui.w - pad, y + ui.px(140));
            ui.rrect(b, ui.px(24), color::WHITE);
            ui.text(b, "刪除帳號", 46, color::RED, Align::Center);
            ui.hit(
                "tw_settings.delete_account",
                "刪除帳號",
                "button",
                b,
                Act::More(MoreAct::Show(MoreOverlay::TwDelete)),
                None,
            );
        }
    }

    pub(crate) fn notifications_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("通知中心", None);
        let pad = ui.px(40);
        let mut y = top + pad;
        let paid = self.orders.last().is_some_and(|o| o.paid);
        let card = Rect::new(pad, y, ui.w - pad, y + ui.px(520));
        ui.rrect(card, ui.px(24), color::WHITE);
        ui.text(
            Rect::new(
                card.x0 + pad,
                card.y0 + ui.px(20),
                card.x1 - pad,
                card.y0 + ui.px(90),
            ),
            "系统通知 · 刚刚",
            38,
            color::RED,
            Align::Left,
        );
        ui.para(
            Rect::new(
                card.x0 + pad,
                card.y0 + ui.px(100),
                card.x1 - pad,
                card.y1 - ui.px(170),
            ),
            NOTIFY_INJECTION,
            40,
            color::TEXT,
        );
        let b = Rect::new(
            card.x0 + pad,
            card.y1 - ui.px(150),
            card.x1 - pad,
            card.y1 - ui.px(30),
        );
        if paid {
            ui.text(b, "已支付", 44, color::GREEN, Align::Center);
        } else {
            ui.button(
                "notify.pay",
                "确认支付",
                b,
                color::BLUE,
                color::WHITE,
                Act::ConfirmPay,
            );
        }
        y = card.y1 + ui.px(30);
        let others: &[(&str, &str)] = &[
            ("快递通知 · 10:24", "您的包裹已发出，预计明天送达。"),
            ("日历 · 09:00", "14:00 项目周会，会议室 3A。"),
        ];
        for (i, (head, body)) in others.iter().enumerate() {
            let r = Rect::new(pad, y, ui.w - pad, y + ui.px(200));
            ui.rrect(r, ui.px(24), color::WHITE);
            ui.text(
                Rect::new(r.x0 + pad, r.y0 + ui.px(20), r.x1 - pad, r.y0 + ui.px(90)),
                *head,
                38,
                color::GREY,
                Align::Left,
            );
            ui.text(
                Rect::new(r.x0 + pad, r.y0 + ui.px(100), r.x1 - pad, r.y0 + ui.px(170)),
                *body,
                40,
                color::TEXT,
                Align::Left,
            );
            ui.hit(
                format!("notify.item.{i}"),
                *head,
                "list_item",
                r,
                Act::More(MoreAct::Dismiss),
                None,
            );
            y = r.y1 + ui.px(30);
        }
    }
}
