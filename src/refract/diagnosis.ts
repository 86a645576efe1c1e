// Plain-English reading of the per-axis pattern (REFRACT score.interpret_pattern) and the report prose.
import type { Band } from './score.ts';

/** One line per band, shown under the composite (`summary` in the JSON). */
export const BAND_PROSE: Readonly<Record<Band, string>> = {
  EXCELLENT: 'Indistinguishable from the reference. Safe to deploy.',
  PASS: 'Minor drift; safe to deploy in most uses.',
  DEGRADED: 'Visible drift. Audit on your workload before deploying.',
  FAIL: 'Material quality loss. Treat as broken.',
};

/** What each axis measures (`description` of each axis in the JSON). */
export const AXIS_PROSE: Readonly<Record<string, string>> = {
  gtm: 'Token-level agreement with the fp16 reference.',
  trajectory: 'Token-level agreement with the fp16 reference.',
  kld: 'Distribution-level divergence from the fp16 reference.',
  rniah: 'Long-context retrieval quality vs the reference.',
  plad: 'Robustness to small prompt changes vs the reference.',
};

export const DIAGNOSIS = {
  catastrophic: 'Catastrophic: every measured surface is broken. Treat as a non-functional quantization; revert to a higher-bit config.',
  allClear: 'All axes intact. Quantization is faithful to the fp16 reference across the surfaces tested.',
  distributionBroken:
    'Per-token distribution is broken but high-level surfaces (retrieval, robustness) are intact. The model decodes materially different tokens than fp16; consider a higher-bit V-cache or a non-rotating V scheme.',
  mildShort:
    'Mild short-context drift; long-context retrieval and perturbation robustness are intact. Likely safe for typical use; audit on your specific decoding workload before shipping.',
  shortDrift: 'Decode distribution drift detected: the candidate generates different tokens than fp16 on short-context prompts.',
  longDrift:
    'Long-context retrieval degraded: candidate fails on prompts where the fp16 reference still retrieves correctly. Inspect the per-(length, position) cell breakdown to see where it breaks.',
  brittle: "Brittleness to small input changes: candidate's output drifts more than fp16's under typo / casing / punctuation perturbations.",
} as const;

export interface DiagnosisInput {
  gtm?: number | null;
  kld?: number | null;
  rniah?: number | null;
  plad?: number | null;
}

/** Sentences for the pattern: all measured < 60 catastrophic; none < 80 all clear; only A/B low -> broken
 *  distribution (both < 60) or mild drift; otherwise one sentence per drifting surface. */
export function interpretPattern(s: DiagnosisInput): string[] {
  const low = (v: number | null | undefined) => v !== null && v !== undefined && v < 80;
  const fail = (v: number | null | undefined) => v !== null && v !== undefined && v < 60;
  const shortDrift = low(s.gtm) || low(s.kld);
  const longDrift = low(s.rniah);
  const brittle = low(s.plad);
  const measured = [s.gtm, s.kld, s.rniah, s.plad].filter((v): v is number => v !== null && v !== undefined);
  if (measured.length && measured.every((v) => v < 60)) return [DIAGNOSIS.catastrophic];
  if (!(shortDrift || longDrift || brittle)) return [DIAGNOSIS.allClear];
  if (shortDrift && !longDrift && !brittle) return [fail(s.gtm) && fail(s.kld) ? DIAGNOSIS.distributionBroken : DIAGNOSIS.mildShort];
  const notes: string[] = [];
  if (shortDrift) notes.push(DIAGNOSIS.shortDrift);
  if (longDrift) notes.push(DIAGNOSIS.longDrift);
  if (brittle) notes.push(DIAGNOSIS.brittle);
  return notes;
}
