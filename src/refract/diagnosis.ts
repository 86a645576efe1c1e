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

const BROKEN_ADVICE = 'The model decodes materially different tokens than fp16; consider a higher-bit V-cache or a ' +
  'non-rotating V scheme.';
const MILD_ADVICE = 'Likely safe for typical use; audit on your specific decoding workload before shipping.';

export const DIAGNOSIS = {
  catastrophic: 'Catastrophic: every measured surface is broken. Treat as a non-functional quantization; ' +
    'revert to a higher-bit config.',
  allClear: 'All axes intact. Quantization is faithful to the fp16 reference across the surfaces tested.',
  distributionBroken:
    `Per-token distribution is broken but high-level surfaces (retrieval, robustness) are intact. ${BROKEN_ADVICE}`,
  mildShort: `Mild short-context drift; long-context retrieval and perturbation robustness are intact. ${MILD_ADVICE}`,
  shortDrift: 'Decode distribution drift detected: the candidate generates different tokens than fp16 on ' +
    'short-context prompts.',
  longDrift:
    'Long-context retrieval degraded: candidate fails on prompts where the fp16 reference still retrieves ' +
    'correctly. Inspect the per-(length, position) cell breakdown to see where it breaks.',
  brittle: 'Brittleness to small input changes: candidate\'s output drifts more than fp16\'s under typo / casing / ' +
    'punctuation perturbations.',
} as const;

/** Axes A and B by name, for sentences about which of them ran. */
const AB_NAMES = { gtm: 'trajectory (axis A)', kld: 'KLD@D (axis B)' } as const;

/** The names of axes A and B that did not run (no score). */
function unmeasured(s: DiagnosisInput): string[] {
  return (['gtm', 'kld'] as const).filter((a) => s[a] === null || s[a] === undefined).map((a) => AB_NAMES[a]);
}

/**
 * The composite's one line (`summary`): the band's prose, except that a run without axis A or B does not call the
 * candidate safe to deploy on the other alone: it says which axis was not measured.
 */
export function summaryProse(band: Band, s: Pick<DiagnosisInput, 'gtm' | 'kld'>): string {
  const missing = unmeasured(s);
  if (!missing.length || band === 'DEGRADED' || band === 'FAIL') return BAND_PROSE[band];
  const what = band === 'EXCELLENT' ? 'Indistinguishable from the reference' : 'Minor drift';
  return `${what} on the axes measured; ${missing.join(' and ')} not measured: run it before deploying.`;
}

export interface DiagnosisInput {
  gtm?: number | null;
  kld?: number | null;
  rniah?: number | null;
  plad?: number | null;
}

/**
 * The original's sentences for A/B drift say retrieval and robustness "are intact". Where R-NIAH or PLAD has no
 * score (not run, or n/a) that would claim what was not measured: these say what is known instead.
 */
function highLevelSurfaces(s: DiagnosisInput): string {
  const known = (v: number | null | undefined) => v !== null && v !== undefined;
  const parts = [
    known(s.rniah) ? 'long-context retrieval is intact' : 'long-context retrieval (R-NIAH) was not measured',
    known(s.plad) ? 'perturbation robustness is intact' : 'perturbation robustness (PLAD) was not measured',
  ].join('; ');
  return parts[0].toUpperCase() + parts.slice(1) + '.';
}

/** Sentences for the pattern: all measured < 60 catastrophic; none < 80 all clear; only A/B low -> broken
 *  distribution (both < 60) or mild drift; otherwise one sentence per drifting surface. Retrieval and robustness
 *  are called intact only where they were measured. */
export function interpretPattern(s: DiagnosisInput): string[] {
  const low = (v: number | null | undefined) => v !== null && v !== undefined && v < 80;
  const fail = (v: number | null | undefined) => v !== null && v !== undefined && v < 60;
  const shortDrift = low(s.gtm) || low(s.kld);
  const longDrift = low(s.rniah);
  const brittle = low(s.plad);
  const measured = [s.gtm, s.kld, s.rniah, s.plad].filter((v): v is number => v !== null && v !== undefined);
  if (measured.length && measured.every((v) => v < 60)) return [DIAGNOSIS.catastrophic];
  if (!(shortDrift || longDrift || brittle)) {
    const missing = unmeasured(s);
    // "All axes intact" only when A and B both ran: a KLD-only run says nothing of the trajectories.
    if (!missing.length) return [DIAGNOSIS.allClear];
    return [`No drift on the axes measured; ${missing.join(' and ')} was not measured.`];
  }
  if (shortDrift && !longDrift && !brittle) {
    const broken = fail(s.gtm) && fail(s.kld);
    const bothMeasured = [s.rniah, s.plad].every((v) => v !== null && v !== undefined);
    if (bothMeasured) return [broken ? DIAGNOSIS.distributionBroken : DIAGNOSIS.mildShort];
    return [broken ? `Per-token distribution is broken. ${highLevelSurfaces(s)} ${BROKEN_ADVICE}`
      : `Mild short-context drift. ${highLevelSurfaces(s)} ${MILD_ADVICE}`];
  }
  const notes: string[] = [];
  if (shortDrift) notes.push(DIAGNOSIS.shortDrift);
  if (longDrift) notes.push(DIAGNOSIS.longDrift);
  if (brittle) notes.push(DIAGNOSIS.brittle);
  return notes;
}
