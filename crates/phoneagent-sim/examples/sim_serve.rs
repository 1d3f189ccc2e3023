//! Run a virtual phone without the CLI: `cargo run -p phoneagent-sim --example sim_serve -- [PORT] [DEVICES]`.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().map(|p| p.parse()).transpose()?.unwrap_or(15037);
    let n: usize = args.next().map(|p| p.parse()).transpose()?.unwrap_or(1);
    let sim =
        phoneagent_sim::SimServer::start(phoneagent_sim::SimConfig::with_devices(n), port).await?;
    println!(
        "virtual phone {} listening on {} (adb -P {} devices)",
        sim.serials().join(","),
        sim.addr(),
        sim.port()
    );
    tokio::signal::ctrl_c().await?;
    sim.shutdown().await;
    Ok(())
}
