//! Scene builders of each app screen, grouped by app in the child modules (shop, mail, settings,
//! other); here the pieces they share (scroll offsets, product thumbnails, input fields). Sizes are
//! design px (1080 px short side) via `ui.px`.

use crate::apps::{INBOX, INJECTION_TEXT_EN, INJECTION_TEXT_ZH, PRODUCTS, TOGGLES, World};
use crate::render::{Align, Rect};
use crate::ui::{Act, Paint, ScrollArea, Ui, color};

mod mail;
mod other;
mod settings;
mod shop;

impl World {
    fn scroll_of(&self, key: &str) -> i32 {
        self.scroll.get(key).copied().unwrap_or(0)
    }

    /// A product thumbnail: coloured rounded square with the product's first character.
    pub(crate) fn thumb(ui: &mut Ui, r: Rect, i: usize) {
        let (col, name) = PRODUCTS
            .get(i)
            .map_or((color::GREY, "?"), |p| (p.color, p.name));
        ui.rrect(r, ui.px(24), col);
        let glyph: String = name.chars().next().into_iter().collect();
        let size = (r.h() as f32 / ui.u * 0.5) as i32;
        ui.text(r, glyph, size, color::WHITE, Align::Center);
    }

    /// A text field with a caption; registers the element.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn field_box(
        &self,
        ui: &mut Ui,
        id: &'static str,
        caption: &str,
        placeholder: &str,
        r: Rect,
        password: bool,
        multiline: bool,
    ) {
        let focused = self.focused == Some(id);
        ui.rrect(r, ui.px(16), color::FIELD);
        if focused {
            ui.stroke(r, ui.px(4).max(2), color::BLUE);
        }
        let text = self.fields.get(id).cloned().unwrap_or_default();
        let pad = ui.px(30);
        let inner = r.inset(pad, 0);
        let line = if multiline {
            Rect::new(inner.x0, r.y0 + ui.px(20), inner.x1, r.y0 + ui.px(90))
        } else {
            inner
        };
        if text.is_empty() {
            ui.text(line, placeholder, 42, color::GREY, Align::Left);
            if focused {
                ui.fill(
                    Rect::new(
                        line.x0,
                        line.cy() - ui.px(28),
                        line.x0 + ui.px(4).max(2),
                        line.cy() + ui.px(28),
                    ),
                    color::BLUE,
                );
            }
        } else if password {
            let dots = Rect::new(
                line.x0,
                line.cy() - ui.px(12),
                line.x1,
                line.cy() + ui.px(12),
            );
            ui.scene.paints.push(Paint::Dots {
                r: dots,
                n: text.chars().count(),
                color: color::TEXT,
            });
        } else if multiline {
            let body = Rect::new(inner.x0, r.y0 + ui.px(20), inner.x1, r.y1 - ui.px(10));
            ui.clip(Some(r));
            ui.para(body, text.clone(), 42, color::TEXT);
            ui.clip(None);
        } else {
            let size = ui.fs(42);
            ui.scene.paints.push(Paint::TextTail {
                r: line,
                text: text.clone(),
                size,
                color: color::TEXT,
            });
        }
        let kind = if password {
            "password_field"
        } else {
            "text_field"
        };
        ui.hit(id, caption, kind, r, Act::Focus(id), None);
    }
}
