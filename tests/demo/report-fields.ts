// The REFRACT report the demo test compares with the page's (demo.test.ts): the CLI's `refract score` on the same
// settings, and the fields of a report that must agree exactly or within the last bits of f32 logits.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root, tsx } from './built-demo.ts';
import { PROMPTS_V01 } from '../../src/refract/prompts.ts';

/** The text the REFRACT panel is given (pasted) in the demo test, and the CLI reads from a file. */
export const PASTED = 'The Fulton County Grand Jury said Friday an investigation of recent primary election produced ' +
  'no evidence that any irregularities took place. The jury further said in term-end presentments that the City ' +
  'Executive Committee, which had over-all charge of the election, deserves the praise and thanks of the City of ' +
  'Atlanta.';

/** REFRACT settings the panel and the CLI both run: 2 prompts x 4 tokens, 1 chunk of 32 pasted tokens, q8/q8. */
export const TRAJ_PROMPTS = 2;
export const TRAJ_TOKENS = 4;

/** `refract score`'s JSON report for those settings (the demo's conditions are "noisy" by then). */
export async function cliReport(dir: string): Promise<Record<string, unknown>> {
  const prompts = join(dir, 'prompts.jsonl');
  writeFileSync(prompts, PROMPTS_V01.slice(0, TRAJ_PROMPTS).map((p) => JSON.stringify(p)).join('\n') + '\n');
  writeFileSync(join(dir, 'pasted.txt'), PASTED);
  const out = join(dir, 'cli-report.json');
  await promisify(execFile)(tsx,
    ['src/cli/refract.ts', 'score', '--candidate', 'ctk=q8_0,ctv=q8_0', '--prompts', prompts, '--corpus',
    join(dir, 'pasted.txt'),
    '--chunks', '1', '-c', '32', '--n-predict', String(TRAJ_TOKENS), '--condition', 'noisy', '--json-out', out,
    '--no-progress'], { cwd: root, timeout: 240_000 });
  return JSON.parse(readFileSync(out, 'utf8'));
}

/**
 * The scoring fields of a report (not its timestamp, environment, model name, corpus path or repro command), and
 * apart, the KLD statistics: the CLI runs on another WebGPU implementation (Dawn in Node) than the page
 * (Chrome's SwiftShader), whose f32 logits differ in the last bits, and a KL of 1e-5 nats moves by a few per cent
 * with them (the MLX checks allow 10 % per position for the same reason). llama.cpp's statistics too: KL
 * percentiles and uncertainties, perplexities, and delta p (next-token probability differences of ~1e-3, each
 * moved by ~1e-4 with the logits); their counts and same-top-1 stay exact.
 */
export function scoring(r: Record<string, any>): { exact: unknown; kld: Record<string,
  number>; perPosition: number[]; stats: Record<string, number> } {
  const { mean_kld, ppl, rms_dp_pct, score, per_position_kld, corpus, mean_kld_unc, kld_percentiles, delta_p, ppl_ref,
    ppl_ref_unc, ppl_cand, ppl_cand_unc, ppl_ratio, ppl_ratio_unc, ...k } = r.axes.kld;
  const { kld_score, ...detail } = r.composite_detail;
  return {
    exact: { reference: r.reference, candidate: r.candidate, band: r.band, composite_detail: detail, gtm: r.axes.gtm,
      kld: { ...k, corpus: { size_bytes: corpus.size_bytes, sha256_head: corpus.sha256_head } } },
    kld: { mean_kld, ppl, rms_dp_pct, score, kld_score, composite: r.composite, ppl_ref, ppl_cand, ppl_ratio,
      mean_kld_unc, ppl_ref_unc, ppl_cand_unc, ppl_ratio_unc, dp_rms: delta_p.rms, dp_rms_unc: delta_p.rms_unc },
    perPosition: per_position_kld,
    stats: {
      ...Object.fromEntries(Object.entries(kld_percentiles as Record<string, number>).map(([q, v]) => [`kl ${q}`, v])),
      ...Object.fromEntries(Object.entries(delta_p.percentiles as Record<string,
        number>).map(([q, v]) => [`dp ${q}`, v])),
      'dp mean': delta_p.mean, 'dp mean_unc': delta_p.mean_unc,
    },
  };
}

/** Relative closeness of every entry of two records of numbers. */
export function relDiff(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(a).map((key) => [key,
    Math.abs(a[key] - b[key]) / Math.max(Math.abs(b[key]), 1e-30)]));
}
