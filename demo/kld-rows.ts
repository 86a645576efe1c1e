// The KLD axis's llama.cpp --kl-divergence statistics as rows of the REFRACT panel's result.
import type { KldAxisResult } from '../src/index.ts';

/** llama.cpp's --kl-divergence statistics of the KLD axis (the same fields the JSON report carries; null when the
 *  backend gave none). */
export function kldStatRows(k: Pick<KldAxisResult,
  'kld_percentiles' | 'same_top1' | 'same_top1_ci95' | 'delta_p' | 'ppl_ratio' | 'ppl_ratio_unc'>,
): Array<[string, string, string]> {
  const rows: Array<[string, string, string]> = [];
  const p = k.kld_percentiles as Record<string, number> | null;
  if (p) rows.push(['KLD median / 99th pct / max',
    `${p['50'].toExponential(2)} / ${p['99'].toExponential(2)} / ${p.max.toExponential(2)} nats`, 'kld-pct']);
  if (k.same_top1 !== null && k.same_top1_ci95) {
    rows.push(['same top-1 (95 % CI)',
      `${(100 * k.same_top1).toFixed(2)} % [${(100 * k.same_top1_ci95[0]).toFixed(2)}, ` +
      `${(100 * k.same_top1_ci95[1]).toFixed(2)}]`, 'kld-top1']);
  }
  if (k.delta_p) rows.push(['Δp of the next token (mean, rms)',
    `${(100 * k.delta_p.mean).toFixed(3)} %, ${(100 * k.delta_p.rms).toFixed(3)} %`, 'kld-dp']);
  if (k.ppl_ratio !== null) rows.push(['PPL ratio (candidate / reference)',
    `${k.ppl_ratio.toFixed(5)} ± ${(k.ppl_ratio_unc ?? 0).toFixed(5)}`, 'kld-ppl']);
  return rows;
}
