//! Label placeholders resolved against a running virtual phone (`phoneagent-sim`).

use phoneagent_testkit::ScriptEntry;

use crate::{body, post, start};

#[tokio::test]
async fn placeholder_without_a_phone_is_a_clear_error() {
    let model = start(vec![ScriptEntry::text(
        "do(action=\"Tap\", element={{center:提交订单}})",
    )])
    .await;
    let (status, _, text) = post(&model, &body("s", "u")).await;
    assert_eq!(status, 500);
    assert!(text.contains("placeholder_unresolved"), "{text}");
    assert!(text.contains("no virtual phone"), "{text}");
    model.shutdown().await;
}
