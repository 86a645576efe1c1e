// `refract sweep`: one reference, many candidates (a list, or every K x V pair of the given cache types, asymmetric
// included), one REFRACT run per candidate as an independent job whose report is saved in the output folder under
// a name derived from the candidate; a candidate whose report is already there is not run again (resume). The
// sweep report is a table and a Pareto plot of cache bytes per token against the composite.
import { InputError } from '../errors.ts';
import { parseKvConfig } from '../hrm/kv-spec.ts';
import { parseReport, type RefractReport } from './report/json.ts';
import { cacheBytes, type KvStorage } from '../hrm/cache.ts';
import type { TurboType } from '../kernels/turbo/format.ts';
import type { HrmConfig } from '../hrm/config.ts';

/**
 * Cache bytes per token of a candidate as its KV string names it, for the Pareto plot: a full-precision side
 * (`f16`) at 2 bytes a value, as llama.cpp stores it, a quantized side as its levels, scales and biases, a TurboQuant
 * side as its blocks. Not
 * what this library allocates (cacheBytes: full sides in the activation dtype, f32 beside a quantized side), which
 * would put `ctk=f16,ctv=q8_0` above the f16 cache it halves.
 */
export function kvBytesPerToken(c: HrmConfig, kv: KvStorage): number {
  // One side: half of a cache whose two sides are that side (a symmetric cache keeps 16-bit full sides in bf16).
  const side = (bits: number | TurboType | null) => cacheBytes(c, 1, 'bf16', { k: bits, v: bits }) / 2;
  return side(kv.k) + side(kv.v);
}

/** Where a sweep keeps its per-candidate reports (the CLI: a folder; tests: a Map). */
export interface SweepStore {
  /** The text stored under `name`, or null when there is none. */
  read(name: string): Promise<string | null>;
  write(name: string, text: string): Promise<void>;
}

export interface SweepRow {
  candidate: string;
  /** Report file name in the store. */
  file: string;
  bytes_per_token: number;
  composite: number | null;
  band: string | null;
  gtm: number | null;
  kld: number | null;
  rniah: number | null;
  plad: number | null;
  /** Taken from an earlier run's report instead of running again. */
  resumed: boolean;
  /** Set when the job failed (the sweep goes on with the others). */
  error?: string;
  /** On the Pareto front: no other candidate is both smaller per token and at least as good, or as small and better. */
  pareto: boolean;
}

export interface SweepResult {
  schema: 'refract.sweep.v1';
  reference: string;
  rows: SweepRow[];
}

/** Every K x V pair of the given types as canonical labels (duplicates dropped, order kept). */
export function gridCandidates(kTypes: readonly string[], vTypes: readonly string[]): string[] {
  if (kTypes.length === 0 || vTypes.length === 0) throw new InputError('kvconfig',
    'a grid needs at least one K type (--k-types) and one V type (--v-types)');
  const out = kTypes.flatMap((k) => vTypes.map((v) => parseKvConfig(`ctk=${k},ctv=${v}`, '--k-types/--v-types').label));
  return [...new Set(out)];
}

/** The store name of a candidate's report: `ctk=q8_0,ctv=q4_0` -> `ctk-q8_0_ctv-q4_0.json`. */
export function candidateFile(label: string): string {
  return `${label.replace(/=/g, '-').replace(/,/g, '_')}.json`;
}

/** Marks the rows on the Pareto front of (smaller bytes per token, higher composite); failed rows never are. */
export function markPareto(rows: SweepRow[]): SweepRow[] {
  const ok = rows.filter((r) => r.composite !== null);
  for (const r of rows) {
    r.pareto = r.composite !== null &&
      !ok.some((o) => o !== r && o.bytes_per_token <= r.bytes_per_token && o.composite! >= r.composite! &&
      (o.bytes_per_token < r.bytes_per_token || o.composite! > r.composite!));
  }
  return rows;
}

function rowOf(candidate: string, file: string, bytes: number, r: RefractReport, resumed: boolean): SweepRow {
  const d = r.composite_detail;
  return {
    candidate, file, bytes_per_token: bytes, composite: r.composite, band: r.band, gtm: d.gtm_score, kld: d.kld_score,
    rniah: d.rniah_score, plad: d.plad_score, resumed, pareto: false,
  };
}

export interface SweepOptions {
  reference: string;
  candidates: readonly string[];
  store: SweepStore;
  /** KV-cache bytes one token costs under a config (all layers and stack calls). */
  bytesPerToken: (kv: string) => number;
  /** One independent REFRACT run of a candidate against the reference. */
  score: (candidate: string) => Promise<RefractReport>;
  /** Serialises a report for the store. */
  serialize: (r: RefractReport) => string;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

/** Run (or resume) the sweep; stops between jobs when `signal` aborts (finished reports stay in the store). */
export async function runSweep(o: SweepOptions): Promise<SweepResult> {
  const labels = [...new Set(o.candidates.map((c) => parseKvConfig(c, 'candidate').label))];
  if (labels.length === 0) throw new InputError('sweep',
    'no candidates: give --candidate (repeatable) or --k-types with --v-types');
  const reference = parseKvConfig(o.reference, 'reference').label;
  const rows: SweepRow[] = [];
  for (const [i, cand] of labels.entries()) {
    o.signal?.throwIfAborted();
    const file = candidateFile(cand);
    const bytes = o.bytesPerToken(cand);
    const saved = await o.store.read(file);
    if (saved !== null) {
      try {
        const r = parseReport(saved);
        // A report of another reference (or candidate) in the folder is not this sweep's result.
        if (r.reference !== reference || r.candidate !== cand) {
          throw new Error(`it scores ${r.candidate} against ${r.reference}, not ${cand} against ${reference}`);
        }
        rows.push(rowOf(cand, file, bytes, r, true));
        o.log?.(`[${i + 1}/${labels.length}] ${cand}: report ${file} already there, not run again`);
        continue;
      } catch (e) {
        o.log?.(`[${i + 1}/${labels.length}] ${cand}: ${file} is unreadable (${(e as Error).message}); ` +
          'running it again');
      }
    }
    o.log?.(`[${i + 1}/${labels.length}] ${cand}: running`);
    try {
      const report = await o.score(cand);
      if (report.partial) throw new InputError('sweep', `run stopped early (${report.partial.reason})`);
      await o.store.write(file, o.serialize(report));
      rows.push(rowOf(cand, file, bytes, report, false));
    } catch (e) {
      if (o.signal?.aborted) throw e;
      o.log?.(`[${i + 1}/${labels.length}] ${cand}: failed: ${(e as Error).message}`);
      rows.push({ candidate: cand, file, bytes_per_token: bytes, composite: null, band: null, gtm: null, kld: null,
        rniah: null, plad: null, resumed: false, error: (e as Error).message, pareto: false });
    }
  }
  return { schema: 'refract.sweep.v1', reference: parseKvConfig(o.reference, 'reference').label,
    rows: markPareto(rows) };
}

const cell = (x: number | null) => (x === null ? '—' : x.toFixed(2)).padStart(7);

/** The sweep table, best composite first; `*` marks the Pareto front. */
export function renderSweepTable(s: SweepResult): string {
  const rows = [...s.rows].sort((a, b) => (b.composite ?? -1) - (a.composite ?? -1));
  const L = [`sweep against ${s.reference} (* = Pareto front of cache bytes/token vs composite)`, '',
    `${'candidate'.padEnd(24)} ${'B/token'.padStart(9)} ${'Comp'.padStart(7)} ${'Band'.padEnd(10)} ` +
    `${'Traj'.padStart(7)} ${'KLD'.padStart(7)} ${'R-NIAH'.padStart(7)} ${'PLAD'.padStart(7)}`,
    '-'.repeat(86)];
  for (const r of rows) {
    L.push(`${(r.pareto ? '* ' : '  ') + r.candidate}`.padEnd(24) +
      ` ${String(Math.round(r.bytes_per_token)).padStart(9)} ${cell(r.composite)} ` +
      `${(r.band ?? (r.error ? 'ERROR' : '—')).padEnd(10)} ${cell(r.gtm)} ${cell(r.kld)} ${cell(r.rniah)} ` +
      `${cell(r.plad)}`);
  }
  for (const r of rows) if (r.error) L.push(`  ${r.candidate}: ${r.error}`);
  return L.join('\n');
}
