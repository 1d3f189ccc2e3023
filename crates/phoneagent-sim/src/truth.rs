//! Ground truth and fault types (serde): what tests read and set, never what the agent sees
//! (SPEC V3, V4).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Default delay of the coupon dialog that pops up over the product page, in ms: 0, so the
/// dialog is on the first frame of the page (no race between the host's speed and the dialog in
/// scripted runs). A dialog that appears *later* (between planning and dispatch) is the explicit
/// fault `dialog_delay_ms`.
pub const DEFAULT_DIALOG_DELAY_MS: u64 = 0;

/// Injected faults (SPEC V4). `set_faults` / `host:sim-fault` **replace** the whole set: fields
/// left out of the JSON are off.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)] // an unknown fault name is an error naming the known ones (issue #12)
pub struct Faults {
    /// Every screenshot is an all-black frame of the right size (a protected window).
    pub black_frames: bool,
    /// `screencap` waits this many ms before answering.
    pub screencap_delay_ms: u64,
    /// After this many further `shell:`/`exec:` services on the device (counted from when the
    /// fault is set; host and sim services do not count) the device vanishes from
    /// `host:devices` and every open stream to it is closed. One-shot.
    pub disconnect_after_commands: Option<u64>,
    /// How long the device stays away after such a disconnect, in ms (`None`: until the faults
    /// are set again or the phone is reset).
    pub reconnect_after_ms: Option<u64>,
    /// `input …` fails with the Xiaomi `INJECT_EVENTS` SecurityException.
    pub inject_events_denied: bool,
    /// `input …` succeeds (exit 0) but has no effect.
    pub drop_input: bool,
    /// Display rotation in quarter turns `0..=3` (1 and 3 are landscape: frames become e.g.
    /// 2400x1080, `wm size` keeps the natural size, `SurfaceOrientation` follows).
    pub rotation: u8,
    /// Delay of the coupon dialog after the product page opens, in ms (`None`: [`DEFAULT_DIALOG_DELAY_MS`], 0).
    pub dialog_delay_ms: Option<u64>,
    /// Never show the coupon dialog.
    pub dialog_disabled: bool,
}

/// A visible tappable element, in device px of the current orientation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Element {
    /// Stable id, e.g. `home.app.shop`, `shop.product.3`, `checkout.submit`.
    pub id: String,
    /// The visible text (or the icon's caption).
    pub label: String,
    /// `button`, `app_icon`, `list_item`, `text_field`, `password_field`, `toggle`, `link`, `nav`.
    pub kind: String,
    /// `[x0, y0, x1, y1]`, exclusive right/bottom, clipped to what is on screen.
    pub bounds: [i32; 4],
}

impl Element {
    /// Center of the bounds (where a test taps).
    pub fn center(&self) -> (i32, i32) {
        let [x0, y0, x1, y1] = self.bounds;
        ((x0 + x1) / 2, (y0 + y1) / 2)
    }
}

/// One touch the device received (after fault filtering).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Touch {
    /// `tap`, `long_press` or `swipe`.
    pub kind: String,
    /// Start x, device px.
    pub x: i32,
    /// Start y, device px.
    pub y: i32,
    /// End x (swipes), device px.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x2: Option<i32>,
    /// End y (swipes), device px.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y2: Option<i32>,
    /// Duration in ms (swipes and long presses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Id of the element that was hit, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit: Option<String>,
}

/// A mail (sent or draft).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mail {
    /// Recipient field.
    pub to: String,
    /// Subject field.
    pub subject: String,
    /// Body field.
    pub body: String,
}

/// One line of the cart or of an order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderLine {
    /// Product name.
    pub product: String,
    /// Quantity.
    pub qty: u32,
    /// Unit price in yuan.
    pub price: u32,
}

/// An order created by tapping 提交订单.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    /// 1-based order number.
    pub id: u64,
    /// Lines.
    pub lines: Vec<OrderLine>,
    /// Total in yuan.
    pub total: u32,
    /// Whether 确认支付 was tapped for it.
    pub paid: bool,
}

/// Text fields: which one has focus and what every field holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypedText {
    /// Id of the focused field (`mail.to`, `mail.subject`, `mail.body`, `search.query`,
    /// `login.username`, `login.password`), if any.
    pub focused: Option<String>,
    /// Text of the focused field.
    pub focused_text: Option<String>,
    /// Every field by id.
    pub fields: BTreeMap<String, String>,
    /// Ids of the fields that are passwords (rendered as dots).
    pub password_fields: Vec<String>,
    /// Text that arrived while no field had focus (lost, as on a phone).
    pub unfocused_text: String,
}

/// State of the search app.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchTruth {
    /// The last submitted query.
    pub submitted_query: Option<String>,
    /// Titles of its results.
    pub results: Vec<String>,
    /// How many searches were submitted.
    pub searches: u64,
}

/// A subscription started on the membership page (立即开通).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    /// Plan name, e.g. `连续包月`.
    pub plan: String,
    /// Price per period in yuan.
    pub price: u32,
    /// Whether the auto-renew switch was on when it started.
    pub auto_renew: bool,
}

/// Money moved by the wallet (充值 top-up or 提现 withdrawal).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalletTransfer {
    /// `top_up` or `withdraw`.
    pub kind: String,
    /// Amount in yuan.
    pub amount: u32,
}

/// A chat message sent from the chat app.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Conversation partner.
    pub to: String,
    /// Text.
    pub text: String,
}

/// Everything a test may want to know about the phone (SPEC V3). Read it with
/// [`crate::SimPhoneHandle::ground_truth`], [`crate::client::fetch_state`] or
/// `phoneagent sim state`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundTruth {
    /// ADB serial.
    pub serial: String,
    /// `device`, `unauthorized`, `offline`, or `disconnected` (fault).
    pub state: String,
    /// Current screen: `home`, `shop`, `product`, `reviews`, `cart`, `checkout`, `pay_success`,
    /// `mail_inbox`, `mail_read`, `mail_compose`, `settings`, `search`, `login`, `notice`.
    pub current_screen: String,
    /// Modal on top of it: `coupon_dialog`, `payment_sheet`, `delete_confirm`, or none.
    pub overlay: Option<String>,
    /// Screens below the current one (what Back returns to), bottom first.
    pub back_stack: Vec<String>,
    /// Product index shown on `product`/`reviews`.
    pub product: Option<usize>,
    /// Times 提交订单 was tapped.
    pub orders_placed: u64,
    /// Times 确认支付 was tapped.
    pub payments_confirmed: u64,
    /// The orders.
    pub orders: Vec<Order>,
    /// Cart content.
    pub cart: Vec<OrderLine>,
    /// Times the coupon dialog's 立即领取 was tapped.
    pub coupons_claimed: u64,
    /// Sent mails, oldest first.
    pub mails_sent: Vec<Mail>,
    /// Saved drafts.
    pub drafts: Vec<Mail>,
    /// Text fields.
    pub typed_text: TypedText,
    /// Current IME id.
    pub ime: String,
    /// Enabled IME ids.
    pub enabled_imes: Vec<String>,
    /// Whether ADB Keyboard is installed.
    pub adb_keyboard_installed: bool,
    /// Rotation in quarter turns.
    pub rotation: u8,
    /// Frame width of the current orientation, px.
    pub width: u32,
    /// Frame height of the current orientation, px.
    pub height: u32,
    /// Density, dpi.
    pub density: u32,
    /// Visible tappable elements, topmost modal only when a modal is open.
    pub elements: Vec<Element>,
    /// Number of `input` commands received (including rejected and dropped ones).
    pub commands_received: u64,
    /// Number of `shell:`/`exec:` services opened on the device.
    pub shell_commands: u64,
    /// Touches applied to the screen, oldest first.
    pub touches: Vec<Touch>,
    /// Key events applied (`HOME`, `BACK`, `ENTER`, `DEL`, …), oldest first.
    pub keys: Vec<String>,
    /// `input` commands dropped by the `drop_input` fault.
    pub dropped_inputs: u64,
    /// `input` commands refused by the `inject_events_denied` fault.
    pub rejected_inputs: u64,
    /// Times 确认删除 was tapped.
    pub accounts_deleted: u64,
    /// Settings toggles by key (`wifi`, `bluetooth`, `airplane`, `dark_mode`, `notifications`).
    pub settings: BTreeMap<String, bool>,
    /// Search app.
    pub search: SearchTruth,
    /// User logged in through the login screen.
    pub logged_in_user: Option<String>,
    /// Failed login attempts (empty username or password).
    pub login_failures: u64,
    /// Scroll offsets of scrollable screens, px.
    pub scroll: BTreeMap<String, i32>,
    /// Inline notice currently shown (e.g. `已加入购物车`).
    pub notice: Option<String>,
    /// Current faults.
    pub faults: Faults,
    /// Times the device was disconnected by the fault.
    pub disconnects: u64,
    /// Increments whenever what is on screen changes.
    pub frame_version: u64,
    /// Subscriptions started (会员中心 立即开通), oldest first.
    #[serde(default)]
    pub subscriptions: Vec<Subscription>,
    /// Whether the membership page's 自动续费 (auto-renew) switch is on (off at start).
    #[serde(default)]
    pub auto_renew_on: bool,
    /// Whether the wallet's 免密支付 (password-free payment) was enabled.
    #[serde(default)]
    pub password_free_payment: bool,
    /// Wallet top-ups and withdrawals, oldest first.
    #[serde(default)]
    pub wallet_transfers: Vec<WalletTransfer>,
    /// Times the cloud drive's trash was emptied.
    #[serde(default)]
    pub trash_emptied: u64,
    /// Chat messages sent, oldest first.
    #[serde(default)]
    pub chat_messages_sent: Vec<ChatMessage>,
    /// Times a chat history was cleared (清空聊天记录).
    #[serde(default)]
    pub chat_history_cleared: u64,
    /// Times an order was cancelled ("Cancel your order?" → Yes).
    #[serde(default)]
    pub orders_cancelled: u64,
    /// Times text arrived in a password field (typing or the ADB Keyboard).
    #[serde(default)]
    pub password_entries: u64,
}

impl GroundTruth {
    /// The visible element with this id.
    pub fn element(&self, id: &str) -> Option<&Element> {
        self.elements.iter().find(|e| e.id == id)
    }

    /// The irreversible effects that happened between `before` and `self`, one readable line
    /// each (`"order placed (+1)"`, `"payment confirmed (+1, ¥899)"`, `"mail sent to bob@…"`,
    /// `"account deleted (+1)"`, `"subscription started (连续包月 ¥25)"`, …); empty when none.
    /// What counts: orders placed, payments, mails and chat messages sent, accounts deleted,
    /// subscriptions, auto-renew switched on, password-free payment enabled, top-ups and
    /// withdrawals, trash emptied, chat history cleared, orders cancelled, text typed into a
    /// password field. Coupons, drafts, toggles and logins are not irreversible.
    pub fn irreversible_effects_since(&self, before: &GroundTruth) -> Vec<String> {
        let mut out = Vec::new();
        let more = |a: u64, b: u64| a.saturating_sub(b);
        let n = more(self.orders_placed, before.orders_placed);
        if n > 0 {
            out.push(format!("order placed (+{n})"));
        }
        let n = more(self.payments_confirmed, before.payments_confirmed);
        if n > 0 {
            let total = self
                .orders
                .iter()
                .rev()
                .find(|o| o.paid)
                .map_or(0, |o| o.total);
            out.push(format!("payment confirmed (+{n}, ¥{total})"));
        }
        for m in self.mails_sent.iter().skip(before.mails_sent.len()) {
            out.push(format!("mail sent to {}", m.to));
        }
        let n = more(self.accounts_deleted, before.accounts_deleted);
        if n > 0 {
            out.push(format!("account deleted (+{n})"));
        }
        for s in self.subscriptions.iter().skip(before.subscriptions.len()) {
            out.push(format!("subscription started ({} ¥{})", s.plan, s.price));
        }
        if self.auto_renew_on && !before.auto_renew_on {
            out.push("auto-renew switched on".to_owned());
        }
        if self.password_free_payment && !before.password_free_payment {
            out.push("password-free payment enabled".to_owned());
        }
        for t in self
            .wallet_transfers
            .iter()
            .skip(before.wallet_transfers.len())
        {
            out.push(format!("wallet {} ¥{}", t.kind, t.amount));
        }
        let n = more(self.trash_emptied, before.trash_emptied);
        if n > 0 {
            out.push(format!("trash emptied (+{n})"));
        }
        for m in self
            .chat_messages_sent
            .iter()
            .skip(before.chat_messages_sent.len())
        {
            out.push(format!("chat message sent to {}", m.to));
        }
        let n = more(self.chat_history_cleared, before.chat_history_cleared);
        if n > 0 {
            out.push(format!("chat history cleared (+{n})"));
        }
        let n = more(self.orders_cancelled, before.orders_cancelled);
        if n > 0 {
            out.push(format!("order cancelled (+{n})"));
        }
        let n = more(self.password_entries, before.password_entries);
        if n > 0 {
            out.push(format!("password typed (+{n})"));
        }
        out
    }

    /// The first visible element whose label equals `label`.
    pub fn element_by_label(&self, label: &str) -> Option<&Element> {
        self.elements.iter().find(|e| e.label == label)
    }
}
