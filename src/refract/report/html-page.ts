// The REFRACT report page's fixed parts (html.ts writes the rest): its footer, which says what REFRACT is, and its
// style sheet (light and dark), written as the page carries them.

/** The footer: what REFRACT is, its axes' names, and where the original lives. */
export const FOOTER = '<footer class="report-foot"><p><strong>What is this?</strong> REFRACT: <em>REFerence-anchored ' +
  'Robust Acid-test for Compressed Transformers</em>, ' +
  'scores how faithfully a quantized KV-cache config preserves the model\'s own full-precision behaviour. Axes: ' +
  '<abbr>GTM</abbr> Greedy Trajectory Match, <abbr>KLD@D</abbr> KL Divergence at the Decoder, ' +
  '<abbr>R-NIAH</abbr> Retrieval Needle-In-A-Haystack, ' +
  '<abbr>PLAD</abbr> Perturbation-Locality Aware Drift. Original: github.com/TheTom/turboquant_plus (refract/); ' +
  'this report: hrm-webgpu.</p></footer>';

/** The page's style sheet, inlined so a report is one self-contained file. */
export const CSS = `
:root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--muted:#59636e;--line:#d0d7de;--card:#f6f8fa}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;--line:#3d444d;--card:#151b23}}
body{font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg);max-width:1000px;margin:2em auto;` +
  `padding:0 1em}
h1{margin:0 0 .2em}h2{border-bottom:1px solid var(--line);padding-bottom:.2em;margin-top:2em}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:1em 1.2em;margin:1em 0}
.big{font-size:42px;font-weight:700}.badge{display:inline-block;color:#fff;border-radius:4px;padding:.1em .5em;` +
  `font-weight:600;vertical-align:middle}
.diag{border-left:4px solid #bf8700;padding:.2em 1em}
table{border-collapse:collapse;margin:.5em 0}th,td{border-bottom:1px solid var(--line);padding:.2em .6em;` +
  `text-align:left;vertical-align:top}
table.kv th{color:var(--muted);font-weight:500}table.grid td{font-variant-numeric:tabular-nums}
figure{margin:1em 0}figcaption{color:var(--muted);font-size:12px}` +
  `svg{max-width:100%;height:auto;background:#fff;border-radius:4px}
details.prompt{border:1px solid var(--line);border-radius:6px;margin:.3em 0;padding:.3em .6em}` +
  `details.prompt.diverged summary{color:#bf8700}
.seq{font:12px/1.6 ui-monospace,monospace;margin:.2em 0;word-break:break-all}` +
  `.who{display:inline-block;width:3em;color:var(--muted)}
.same{color:var(--muted)}.tok{border-radius:3px;padding:0 2px}.tok.ref{background:#ffebe9;color:#82071e}` +
  `.tok.cand{background:#dafbe1;color:#116329}
.summary-box{border:1px solid var(--line);border-radius:6px;padding:.5em .8em;margin:.6em 0}` +
  `.summary-box .title{font-weight:600}
.summary-box.green{border-color:#1a7f37}.summary-box.amber{border-color:#bf8700}` +
  `.summary-box.red{border-color:#cf222e}.label{color:var(--muted)}.of{color:var(--muted)}
.run-grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:1em}` +
  `.report-foot{margin-top:3em;color:var(--muted);font-size:12px}.partial{color:#cf222e}
pre{background:var(--card);padding:.6em;border-radius:6px;overflow:auto;white-space:pre-wrap}` +
  `.cat{color:var(--muted)}.notes li{color:#9a6700}
`;
