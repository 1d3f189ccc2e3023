//! Kinds of irreversible effect (SPEC S3, S4, S12): what a commit, an object, a task boundary or
//! a task's request names.

use serde::{Deserialize, Serialize};

/// The irreversible effect a commit or object points at; named in receipts, task boundaries
/// (SPEC S4) and task authorization (SPEC S12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectKind {
    /// Paying (支付/付款, pay, checkout).
    Payment,
    /// Placing or cancelling an order (下单/订单/取消订单, order).
    Order,
    /// Buying, bidding, betting (购买/出价/下注, buy/bid/bet).
    Purchase,
    /// Moving money: transfer, withdraw, top up (转账/提现/充值, transfer/withdraw/top up).
    Transfer,
    /// Deleting, clearing, uninstalling, closing an account (删除/清空/卸载/注销).
    Delete,
    /// Sending a message or mail (发送/送出, send).
    Send,
    /// Publishing or posting (发布/发表, publish/post).
    Publish,
    /// Installing an app (安装, install).
    Install,
    /// Granting a permission (允许/授权, allow/grant).
    Permission,
    /// Submitting a form (提交, submit).
    Submit,
    /// Recurring charges: subscriptions, auto-renew, free trials that convert, password-free
    /// payment (订阅/连续包月/自动续费/免密支付, subscribe/auto-renew/start free trial).
    Subscribe,
    /// Account changes: binding/unbinding a card or phone, changing the login e-mail or phone,
    /// transferring ownership (换绑/解绑/修改手机号, change e-mail).
    Account,
    /// Entering or revealing a credential: password, one-time code, login (密码/验证码/登录).
    Credential,
}

impl EffectKind {
    /// Every kind, in declaration order.
    pub const ALL: [EffectKind; 13] = [
        Self::Payment,
        Self::Order,
        Self::Purchase,
        Self::Transfer,
        Self::Delete,
        Self::Send,
        Self::Publish,
        Self::Install,
        Self::Permission,
        Self::Submit,
        Self::Subscribe,
        Self::Account,
        Self::Credential,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Payment => "payment",
            Self::Order => "order",
            Self::Purchase => "purchase",
            Self::Transfer => "transfer",
            Self::Delete => "delete",
            Self::Send => "send",
            Self::Publish => "publish",
            Self::Install => "install",
            Self::Permission => "permission",
            Self::Submit => "submit",
            Self::Subscribe => "subscribe",
            Self::Account => "account",
            Self::Credential => "credential",
        }
    }

    /// Short Chinese name (支付, 下单, …) used in receipts.
    pub fn zh(self) -> &'static str {
        match self {
            Self::Payment => "支付",
            Self::Order => "下单",
            Self::Purchase => "购买",
            Self::Transfer => "转账",
            Self::Delete => "删除",
            Self::Send => "发送",
            Self::Publish => "发布",
            Self::Install => "安装",
            Self::Permission => "授权",
            Self::Submit => "提交",
            Self::Subscribe => "订阅/自动续费",
            Self::Account => "更改账户",
            Self::Credential => "输入凭据",
        }
    }

    /// Short English name (pay, place an order, …) used in receipts.
    pub fn en(self) -> &'static str {
        match self {
            Self::Payment => "pay",
            Self::Order => "place an order",
            Self::Purchase => "buy",
            Self::Transfer => "transfer money",
            Self::Delete => "delete",
            Self::Send => "send",
            Self::Publish => "publish",
            Self::Install => "install",
            Self::Permission => "grant a permission",
            Self::Submit => "submit",
            Self::Subscribe => "subscribe",
            Self::Account => "change the account",
            Self::Credential => "enter a credential",
        }
    }

    /// The kinds a task that asks for `self` authorizes (SPEC S12), `self` included. Buying
    /// involves ordering and paying (and submitting the order form); a transfer or top-up
    /// involves paying; a subscription involves paying and buying; an account change involves
    /// a credential. Nothing implies [`EffectKind::Subscribe`], [`EffectKind::Delete`],
    /// [`EffectKind::Send`] or [`EffectKind::Publish`]: those are authorized only by name.
    pub fn implies(self) -> &'static [EffectKind] {
        use EffectKind::*;
        match self {
            Payment | Order | Purchase => &[Payment, Order, Purchase, Submit],
            Transfer => &[Transfer, Payment],
            Subscribe => &[Subscribe, Payment, Purchase, Order],
            Account => &[Account, Credential],
            Delete => &[Delete],
            Send => &[Send],
            Publish => &[Publish],
            Install => &[Install],
            Permission => &[Permission],
            Submit => &[Submit],
            Credential => &[Credential],
        }
    }
}

impl std::fmt::Display for EffectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for EffectKind {
    type Err = String;
    /// The snake_case name (`payment`, `subscribe`, …).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s.trim())
            .ok_or_else(|| format!("unknown effect kind {s:?}"))
    }
}
