// How the report writes numbers and names: shared by the Markdown summary and the plot.
import type { BenchResult } from './result.ts';
import type { Stats } from '../timing/stats.ts';

/** 3 significant digits, thousands grouped from 10 000 up (4 210, 0.0123). */
export function f(v: number | null | undefined, digits = 3): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  if (Math.abs(v) >= 10000) return Math.round(v).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
  return Math.abs(v) >= 10 ** digits ? Math.round(v).toString() : String(Number(v.toPrecision(digits)));
}
export const pct = (v: number | null | undefined): string =>
  (v === null || v === undefined ? '—' : `${f(v * 100, 2)} %`);
export const range = (s: Stats | null | undefined, scale = 1): string =>
  (s ? `${f(s.min * scale)}–${f(s.max * scale)}` : '—');
/** A value made safe for a Markdown table cell. */
export const esc = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The adapter's most telling name: its device name, unless a bare PCI id (Chrome, wgpu), then its description. */
export function adapterLabel(r: BenchResult): string {
  const a = r.env.adapter;
  const device = /[g-z]/i.test(a.device.replace(/^0x/i, '')) ? a.device : '';
  return device || a.description || [a.vendor, a.architecture].filter(Boolean).join(' ') || 'unknown adapter';
}

/** The adapter's label and its vendor (unless a bare PCI id). */
export function adapterName(r: BenchResult): string {
  const a = r.env.adapter;
  return [adapterLabel(r), a.vendor && !/^\d+$/.test(a.vendor) ? a.vendor : ''].filter(Boolean).join(', ');
}

/**
 * One line of a parity list (bench/runners/parity.ts, page-parity.ts, parity-transformers.ts): verdict, figure,
 * bound.
 */
export function checkLine(ok: boolean, name: string, figure: number, bound: string): string {
  return `- ${ok ? 'ok' : 'FAILED'}: ${name} = ${figure.toExponential(3)} (bound ${bound})`;
}
