// `refract` usage and help texts, one per subcommand (printed by --help and after a usage error).
import { EMBEDDED_MODEL } from '../index.ts';

export const TOP_HELP = `refract: KV-cache quantization drift score for HRM-Text on WebGPU (REFRACT 0.3.2 definitions)

  refract score          score a candidate KV config against the reference (axes A-D)
  refract compare        side-by-side table of report JSON files
  refract repeatability  the same score N times, and the spread
  refract sweep          many candidates (a list or a K x V grid), a table and a Pareto plot
  refract selftest       the reference against itself must score 100 on every axis
  refract fetch          download a corpus for --corpus (default: wikitext-2-raw, REFRACT's own) into a cache

Run \`refract <command> --help\` for a command's flags. Defaults that need no files: the embedded model,
REFRACT's 30 CC0 prompts, a corpus and a haystack from the Brown corpus.
`;

const SCORE_FLAGS = `  --model DIR|URL          model folder or base URL (default: the embedded ${EMBEDDED_MODEL})
  --reference KV           reference KV config (default ctk=f16,ctv=f16)
  --candidate KV           candidate KV config, llama.cpp style: ctk=q8_0,ctv=q4_0 (required)
  --prompts FILE.jsonl     prompts (default: REFRACT's prompts/v0.1.jsonl, built in)
  --corpus FILE.txt        KLD corpus (default: Brown-corpus text, built in)
  --chunks N               KLD chunks (default 32)        -c, --ctx N   context per chunk / decode (default 512)
  --n-predict N            tokens decoded per prompt (default 128)       --seed N   (default 42)
  --measure-floor          measure REFRACT(ref, ref) first; stop if it is below 99.5 or not token-identical
  --skip-gtm, --skip-kld   leave out axis A or B (the composite drops it; the report marks it skipped)
  --axis-a trajectory      axis A's implementation (decode-time ids; the deprecated retokenized 'gtm' is not ported)
  --full                   = --axis-rniah --axis-plad
  --axis-rniah             axis C; --rniah-haystack FILE (default: Brown text), --rniah-up-to N (16384; lengths
                           double from 4096), --rniah-lengths L1,L2 (explicit; e.g. 128,256 for short-context models),
                           --rniah-positions 0.1,0.5,0.9, --rniah-trials N (1), --rniah-ctx-max N (cells longer are
                           skipped; the model's context also caps it), --rniah-n-predict N (256),
                           --rniah-needle TEXT, --rniah-question TEXT (default: REFRACT's APRICOT-7-BLUE paint-colour
                           needle and its question), --rniah-keyword WORD (the hit test; default: the needle's longest
                           all-caps run, else its last word). The embedded model (context 4096) finds the default
                           needle; on a CPU adapter shorter cells are practical: --rniah-lengths 1024
                           --rniah-n-predict 16
  --axis-plad              axis D; --plad-ids retokenized|generated (default retokenized, as the original)
  --condition TAGS         HRM condition tags for prompts (default synth,cot)   --dtype f32|bf16 (default f32)
  --json-out FILE          write the JSON report      --html-out FILE   write the self-contained HTML report
  --no-progress            no progress lines on stderr`;

export const SCORE_HELP =
  `refract score [flags]: score a KV-cache config against the full-precision reference on the same model.
Returns a 0-100 composite and a band (EXCELLENT >= 90, PASS >= 80, DEGRADED >= 60, else FAIL) with per-axis bands.

Axes (A and B run by default; C and D are opt-in):
  A  Trajectory  (GTM, Greedy Trajectory Match) greedy-decode --n-predict tokens from each prompt under both ` +
  `configs and compare the decode-time
                 token ids: score = 100 * mean agreed prefix / mean candidate length.
  B  KLD@D       (KL Divergence at the Decoder) KL(P_ref || P_cand) per position over the corpus ` +
  `(chunks x ctx, quantized cache before the pass):
                 score = 100 * exp(-mean KL). The report adds llama.cpp's --kl-divergence statistics: KL
                 percentiles, same top-1 with a 95 % Wilson interval, delta-p of the next token, PPL ref / cand and
                 PPL ratio with uncertainties.
  C  R-NIAH      (Retrieval Needle-In-A-Haystack) a needle sentence hidden at relative positions of ` +
  `haystack contexts; recall with the candidate vs
                 the reference per (length, position) cell: score = 100 * (1 - mean degradation).
  D  PLAD        (Perturbation-Locality Aware Drift) typo / case / punctuation / paraphrase perturbations of ` +
  `each prompt: the candidate's extra drift
                 (token edit distance) over the reference's: score = mean of 100 * exp(-5 * excess).
Composite = harmonic mean of the axes that ran: one broken axis drops it hard.

${SCORE_FLAGS}

A lost GPU device is recreated and the run continues from the last finished prompt / chunk / cell (said on
stderr). Ctrl-C stops after the current unit and writes the finished axes as a partial report.
`;

export const COMPARE_HELP =
  `refract compare A.json B.json ...: one row per report (labelled by the file name without extension):
composite, band and each axis. Unreadable files and non-reports are skipped with a line naming them; a report
without a composite keeps its row with a dash.
`;

export const REPEATABILITY_HELP =
  `refract repeatability [score flags] [--runs N] [--out-dir DIR]: run the same score N times (default 4) and
print min / median / max / stdev of the composite and each axis; HEALTHY when the composite stdev <= 1.
Defaults as the original's repeatability: --runs 4, --n-predict 50. Each run's JSON goes to --out-dir (default:
a new temporary folder) as run-01.json, run-02.json, ...
`;

export const SWEEP_HELP =
  `refract sweep --out-dir DIR (--candidate KV ... | --k-types T1,T2 --v-types T1,T2) [score flags]:
score every candidate against one reference, each as an independent job whose report is saved as DIR/<candidate>.json;
a candidate whose report is already in DIR is not run again (so an interrupted sweep resumes). --k-types x --v-types
runs every K x V pair, asymmetric ones included. Prints a table and writes DIR/sweep.json and DIR/sweep.html (a
Pareto plot of KV-cache bytes per token against the composite; --html-out FILE to put it elsewhere).
`;

export const SELFTEST_HELP =
  `refract selftest [--model DIR|URL] [--condition TAGS] [--dtype f32|bf16]: the reference against itself on six
prompts (16 tokens each) and two KLD chunks must score 100 on every axis.
`;

export const FETCH_HELP = `refract fetch [URL] [--cache-dir DIR] [--size BYTES] [--sha256 HEX] [--no-progress]:
download a corpus into a cache folder (default ~/.cache/refract, as the original's) and print the files it
holds, for --corpus and --rniah-haystack. A zip archive is unpacked there. Without URL: wikitext-2-raw-v1.zip,
the original's corpus (4,721,645 bytes, checked by size and SHA-256), which unpacks to
wikitext-2-raw/wiki.{test,valid,train}.raw: wiki.test.raw is the original's --corpus, wiki.train.raw its R-NIAH
haystack. Any other URL is checked against --size and --sha256 when given (its size and SHA-256 are printed, to
pin). A file that does not match is not kept; a URL already fetched is not downloaded again. The download
retries, resumes a cut body and times out as model downloads do (HRM_CONNECT_TIMEOUT, HRM_IDLE_TIMEOUT: seconds).
`;
