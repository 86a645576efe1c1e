// Small DOM helpers shared by the panels.
import { InputError } from '../src/index.ts';
import { fmtBytes } from './memory.ts';

export function $<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`[demo] no element #${id}`);
  return el as T;
}

/** Values longer than this take a row of their own under their label (style.css's `.kv .wide`). */
const WIDE_VALUE = 60;

/** `n` and the noun, plural unless n is 1 ("1 prompt", "2 chunks"). */
export const counted = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

/**
 * A <dl> of label/value rows (values as text: never HTML); an optional third item is the value's id. A long value
 * (the kernel path, a fast path's reason for being off) goes under its label: beside it, it would be squeezed into
 * a column of a few characters next to long labels.
 */
export function fillKv(dl: HTMLElement, rows: Array<[string, string] | [string, string, string]>): void {
  dl.replaceChildren(...rows.flatMap(([k, v, id]) => {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    if (id) dd.id = id;
    if (v.length > WIDE_VALUE) dt.className = dd.className = 'wide';
    return [dt, dd];
  }));
}

/** A table body of label/value rows. */
export function fillTable(table: HTMLTableElement, rows: Array<[string, string]>): void {
  const body = table.tBodies[0] ?? table.createTBody();
  body.replaceChildren(...rows.map(([k, v]) => {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = k;
    const td = document.createElement('td');
    td.textContent = v;
    tr.append(th, td);
    return tr;
  }));
}

/** A byte-level progress bar and its text ("12.3 MiB / 40.0 MiB"). */
export function setProgress(bar: HTMLProgressElement, text: HTMLElement, loaded: number, total: number,
  unit: 'bytes' | 'steps' = 'bytes'): void {
  bar.max = Math.max(total, 1);
  bar.value = Math.min(loaded, bar.max);
  const f = unit === 'bytes' ? fmtBytes : String;
  text.textContent = total > 0 ? `${f(loaded)} / ${f(total)}` : '–';
}

/**
 * A setting the page refuses, with the fields at fault: App.showError clears its message (and the banner) once
 * `fixed` holds after an edit of one of them, so that no stale message stands beside a field already fixed.
 */
export class FieldError extends InputError {
  constructor(readonly fields: HTMLElement[], message: string, readonly fixed: () => boolean = () => true) {
    super('settings', message);
  }
}

/** A field's text as its message quotes it: a number field holding no number reads as empty to scripts. */
function shown(el: HTMLInputElement): string {
  return el.validity.badInput ? 'not a number' : `"${el.value}"`;
}

/** A whole number from a field; out of range, the field gets the focus and the message names it (and `why`). */
export function intInput(id: string, min: number, max = Number.MAX_SAFE_INTEGER, why?: string): number {
  const el = $<HTMLInputElement>(id);
  const ok = () => el.value.trim() !== '' && Number.isInteger(Number(el.value)) && Number(el.value) >= min &&
    Number(el.value) <= max;
  if (!ok()) {
    const range = `${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ' up'}`;
    fail(id, `${labelOf(el)} must be a whole number from ${range}${why ? ` (${why})` : ''}; it is ${shown(el)}`, ok);
  }
  return Number(el.value);
}

/** Focus the field `id` and throw the settings error `message` about it (cleared once `fixed` holds). */
export function fail(id: string, message: string, fixed?: () => boolean): never {
  $(id).focus();
  throw new FieldError([$(id)], message, fixed);
}

export function numInput(id: string, min: number, max: number): number {
  const el = $<HTMLInputElement>(id);
  const ok = () => el.value.trim() !== '' && Number.isFinite(Number(el.value)) && Number(el.value) >= min &&
    Number(el.value) <= max;
  if (!ok()) fail(id, `${labelOf(el)} must be a number from ${min} to ${max}; it is ${shown(el)}`, ok);
  return Number(el.value);
}

function labelOf(el: HTMLInputElement): string {
  return (el.labels?.[0]?.textContent ?? el.getAttribute('aria-label') ?? el.id).trim().split('\n')[0].trim();
}
