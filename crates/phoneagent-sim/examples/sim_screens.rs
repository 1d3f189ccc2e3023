//! Write a PNG of every scenario (portrait and landscape) to a directory, for review:
//! `cargo run -p phoneagent-sim --example sim_screens -- OUT_DIR`.

use phoneagent_sim::{Faults, SCENARIOS, SimConfig, SimServer};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let out = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "sim-screens".into()),
    );
    std::fs::create_dir_all(&out)?;
    let sim = SimServer::start(SimConfig::default(), 0).await?;
    let phone = sim
        .phone("virtual-phone-1")
        .ok_or_else(|| anyhow::anyhow!("no device"))?;
    for s in SCENARIOS {
        for rotation in [0u8, 1] {
            phone.reset(s)?;
            phone.set_faults(Faults {
                rotation,
                dialog_delay_ms: Some(0),
                ..Default::default()
            });
            let f = out.join(format!("{s}-{rotation}.png"));
            std::fs::write(&f, phone.screenshot_png()?)?;
            println!("{}", f.display());
        }
    }
    sim.shutdown().await;
    Ok(())
}
