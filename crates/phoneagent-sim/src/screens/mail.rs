//! Scenes of the mail app: the inbox, a read mail and compose with its Send button. Sizes are
//! design px via `ui.px`.

use super::*;

impl World {
    pub(crate) fn inbox_scene(&self, ui: &mut Ui) {
        let top = ui.app_bar("邮件", Some(("mail.compose", "写邮件", Act::Compose)));
        let mut y = self.notice_banner(ui, top);
        let pad = ui.px(40);
        if !self.drafts.is_empty() {
            let r = Rect::new(0, y, ui.w, y + ui.px(120));
            ui.fill(r, [255, 248, 225, 255]);
            let label = format!("草稿箱 ({})", self.drafts.len());
            ui.text(
                r.inset(pad, 0),
                label.clone(),
                42,
                [160, 100, 0, 255],
                Align::Left,
            );
            ui.text(r.inset(pad, 0), "›", 50, color::GREY, Align::Right);
            ui.hit("mail.drafts", label, "list_item", r, Act::OpenDraft, None);
            y = r.y1;
        }
        if !self.mails_sent.is_empty() {
            let r = Rect::new(0, y, ui.w, y + ui.px(100));
            ui.text(
                r.inset(pad, 0),
                format!("已发送 {} 封", self.mails_sent.len()),
                38,
                color::GREY,
                Align::Left,
            );
            y = r.y1;
        }
        let view = Rect::new(0, y, ui.w, ui.bottom());
        let item_h = ui.px(230);
        let max = (INBOX.len() as i32 * item_h - view.h()).max(0);
        let off = self.scroll_of("mail_inbox").min(max);
        ui.scene.scroll = Some(ScrollArea {
            key: "mail_inbox",
            view,
            max,
        });
        ui.clip(Some(view));
        for (i, (from, subject, body, time)) in INBOX.iter().enumerate() {
            let r = Rect::new(
                0,
                y + i as i32 * item_h - off,
                ui.w,
                y + (i as i32 + 1) * item_h - off,
            );
            ui.fill(r, color::WHITE);
            ui.fill(Rect::new(pad, r.y1 - 1, ui.w, r.y1), color::LINE);
            let av = ui.px(50);
            ui.circle(pad + av, r.y0 + ui.px(80), av, color::BLUE);
            let g: String = from.chars().next().into_iter().collect();
            ui.text(
                Rect::new(pad, r.y0 + ui.px(30), pad + 2 * av, r.y0 + ui.px(130)),
                g,
                44,
                color::WHITE,
                Align::Center,
            );
            let tx = pad + 2 * av + ui.px(30);
            ui.text(
                Rect::new(tx, r.y0 + ui.px(20), ui.w - ui.px(200), r.y0 + ui.px(85)),
                *from,
                44,
                color::TEXT,
                Align::Left,
            );
            ui.text(
                Rect::new(
                    ui.w - ui.px(200),
                    r.y0 + ui.px(20),
                    ui.w - pad,
                    r.y0 + ui.px(85),
                ),
                *time,
                34,
                color::GREY,
                Align::Right,
            );
            ui.text(
                Rect::new(tx, r.y0 + ui.px(85), ui.w - pad, r.y0 + ui.px(145)),
                *subject,
                40,
                color::TEXT,
                Align::Left,
            );
            ui.text(
                Rect::new(tx, r.y0 + ui.px(145), ui.w - pad, r.y0 + ui.px(205)),
                *body,
                36,
                color::GREY,
                Align::Left,
            );
            ui.hit(
                format!("mail.item.{i}"),
                *subject,
                "list_item",
                r,
                Act::OpenMail(i),
                Some(view),
            );
        }
        ui.clip(None);
    }

    pub(crate) fn read_scene(&self, ui: &mut Ui, i: usize) {
        let top = ui.app_bar("邮件详情", Some(("mail.reply", "回复", Act::Reply)));
        let Some((from, subject, body, time)) = INBOX.get(i) else {
            return;
        };
        let pad = ui.px(50);
        let mut y = top + pad;
        ui.text(
            Rect::new(pad, y, ui.w - pad, y + ui.px(90)),
            *subject,
            56,
            color::TEXT,
            Align::Left,
        );
        y += ui.px(110);
        ui.text(
            Rect::new(pad, y, ui.w - pad, y + ui.px(60)),
            format!("发件人: {from}    {time}"),
            38,
            color::GREY,
            Align::Left,
        );
        y += ui.px(100);
        ui.para(
            Rect::new(pad, y, ui.w - pad, ui.bottom()),
            *body,
            44,
            color::TEXT,
        );
    }

    pub(crate) fn compose_scene(&self, ui: &mut Ui) {
        let top = if self.more.icon_send {
            // Gmail-style: the only Send control is a paper-plane icon (screens_more.rs).
            let top = ui.app_bar("写邮件", None);
            self.compose_send_icon(ui);
            top
        } else {
            ui.app_bar("写邮件", Some(("compose.send", "发送", Act::Send)))
        };
        let mut y = self.notice_banner(ui, top);
        let pad = ui.px(40);
        let has_content = ["mail.to", "mail.subject", "mail.body"]
            .iter()
            .any(|f| self.fields.get(*f).is_some_and(|t| !t.is_empty()));
        if has_content {
            let chip = Rect::new(pad, y + ui.px(20), pad + ui.px(260), y + ui.px(90));
            ui.rrect(chip, ui.px(35), [255, 243, 205, 255]);
            ui.text(chip, "草稿 · 未发送", 34, [160, 100, 0, 255], Align::Center);
            y = chip.y1;
        }
        y += ui.px(20);
        let fh = ui.px(130);
        let cap_w = ui.px(170);
        for (id, cap) in [("mail.to", "收件人"), ("mail.subject", "主题")] {
            ui.text(
                Rect::new(pad, y, pad + cap_w, y + fh),
                cap,
                42,
                color::GREY,
                Align::Left,
            );
            let r = Rect::new(pad + cap_w, y + ui.px(10), ui.w - pad, y + fh - ui.px(10));
            let ph = if id == "mail.to" {
                "name@example.com"
            } else {
                "邮件主题"
            };
            self.field_box(ui, id, cap, ph, r, false, false);
            y += fh + ui.px(10);
        }
        let body_h = if ui.landscape() {
            ui.px(300)
        } else {
            ui.px(900)
        };
        let body = Rect::new(
            pad,
            y + ui.px(20),
            ui.w - pad,
            (y + ui.px(20) + body_h).min(ui.bottom() - ui.px(20)),
        );
        self.field_box(ui, "mail.body", "正文", "正文", body, false, true);
    }
}
