//! Ground truth and fault types (serde): what tests read and set, never what the agent sees
//! (SPEC V3, V4).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Default delay of the coupon dialog that pops up over the product page, in ms.
pub const DEFAULT_DIALOG_DELAY_MS: u64 = 300;

/// Injected faults (SPEC V4). `set_faults` / `host:sim-fault` **replace** the whole set: fields
/// left out of the JSON are off.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
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
    /// Delay of the coupon dialog after the product page opens, in ms (`None`: 300).
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
}

impl GroundTruth {
    /// The visible element with this id.
    pub fn element(&self, id: &str) -> Option<&Element> {
        self.elements.iter().find(|e| e.id == id)
    }

    /// The first visible element whose label equals `label`.
    pub fn element_by_label(&self, label: &str) -> Option<&Element> {
        self.elements.iter().find(|e| e.label == label)
    }
}
