//! The report's stylesheet (SPEC U6: readable in light and dark mode), inlined in a `<style>`
//! element (the CSP forbids external resources).

pub(super) const CSS: &str = r#"
:root{--bg:#f6f7f9;--card:#fff;--fg:#1d2330;--muted:#5d6678;--line:#dde1e8;--accent:#2f6fde;
--ok:#1f8a4c;--warn:#b26a00;--bad:#c0392b;--info:#2f6fde;--chip:#eef1f6;--pre:#f2f4f8;--mark:#ff3b6b;--mark2:#ffd400}
@media (prefers-color-scheme: dark){:root{--bg:#12151b;--card:#1b1f27;--fg:#e4e8ef;--muted:#9aa3b2;--line:#2c323d;
--accent:#6fa0ff;--ok:#4cc38a;--warn:#f0a93b;--bad:#ff6b5e;--info:#6fa0ff;--chip:#262c37;--pre:#151920}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC","PingFang SC","Microsoft YaHei",sans-serif}
.wrap{max-width:1100px;margin:0 auto;padding:24px 16px 48px}
header.run{background:var(--card);border:1px solid var(--line);border-radius:14px;padding:20px 22px;margin-bottom:22px}
header.run h1{font-size:1.35rem;margin:.35rem 0 .8rem;word-break:break-word}
.demo{display:inline-block;margin-left:.5rem}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:10px 18px;margin:0}
dl.facts div{min-width:0}
dl.facts dt{font-size:.75rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
dl.facts dd{margin:0;font-weight:600;overflow-wrap:anywhere}
.final{margin:.9rem 0 0;padding:.6rem .8rem;border-left:3px solid var(--accent);background:var(--chip);border-radius:6px;white-space:pre-wrap;overflow-wrap:anywhere}
.policy{color:var(--muted);font-size:.85rem;margin:.8rem 0 0}
.badge,.chip{display:inline-block;border-radius:999px;padding:.05rem .6rem;font-size:.8rem;font-weight:600;background:var(--chip);color:var(--fg);margin:0 .25rem .25rem 0;white-space:nowrap}
.badge.ok,.chip.ok{background:color-mix(in srgb,var(--ok) 18%,transparent);color:var(--ok)}
.badge.warn,.chip.warn{background:color-mix(in srgb,var(--warn) 18%,transparent);color:var(--warn)}
.badge.bad,.chip.bad{background:color-mix(in srgb,var(--bad) 18%,transparent);color:var(--bad)}
.badge.info,.chip.info{background:color-mix(in srgb,var(--info) 18%,transparent);color:var(--info)}
article.step{display:grid;grid-template-columns:minmax(160px,var(--tw)) 1fr;gap:18px;background:var(--card);border:1px solid var(--line);border-radius:14px;padding:16px;margin-bottom:16px}
@media (max-width:720px){article.step{grid-template-columns:1fr}}
.shot{position:relative;align-self:start}
.shot figure{position:relative;margin:0;border-radius:10px;overflow:hidden;border:1px solid var(--line);background:#000;line-height:0}
.shot img{display:block;width:100%;height:auto}
.shot svg{position:absolute;inset:0;width:100%;height:100%;pointer-events:none}
.shot figcaption,.muted{color:var(--muted);font-size:.8rem}
.shot figcaption{margin-top:.35rem;line-height:1.3}
.noshot{display:flex;align-items:center;justify-content:center;aspect-ratio:9/20;border:1px dashed var(--line);border-radius:10px;color:var(--muted);font-size:.85rem;text-align:center;padding:1rem}
.blocked{position:absolute;left:8px;top:8px;line-height:1.4}
.key{position:absolute;left:50%;bottom:10px;transform:translateX(-50%);line-height:1.4;background:rgba(0,0,0,.7);color:#fff;border-radius:999px;padding:.1rem .7rem;font-weight:700;font-size:.85rem}
.step h2{font-size:1.05rem;margin:0 0 .5rem;display:flex;flex-wrap:wrap;align-items:baseline;gap:.5rem}
.step h2 .act{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92rem;background:var(--chip);border-radius:6px;padding:.05rem .45rem;overflow-wrap:anywhere}
.step h2 time{margin-left:auto;color:var(--muted);font-weight:400;font-size:.85rem}
.step h3{font-size:.75rem;text-transform:uppercase;letter-spacing:.05em;color:var(--muted);margin:.8rem 0 .2rem}
.step p{margin:.1rem 0;white-space:pre-wrap;overflow-wrap:anywhere}
.step ul{margin:.1rem 0;padding-left:1.1rem}
.step li{margin:.15rem 0;overflow-wrap:anywhere}
pre{background:var(--pre);border:1px solid var(--line);border-radius:8px;padding:.5rem .7rem;white-space:pre-wrap;overflow-wrap:anywhere;font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;margin:.3rem 0}
details summary{cursor:pointer;color:var(--muted);font-size:.85rem}
table{border-collapse:collapse;font-size:.85rem;margin:.4rem 0}
th,td{border-bottom:1px solid var(--line);padding:.2rem .7rem .2rem 0;text-align:left}
th{color:var(--muted);font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.lightbox{display:none;position:fixed;inset:0;background:rgba(0,0,0,.88);z-index:10;align-items:center;justify-content:center}
.lightbox:target{display:flex}
.lightbox img{max-width:96vw;max-height:96vh}
footer{color:var(--muted);font-size:.8rem;text-align:center;margin-top:28px}
"#;
