// The read probe's figure (bench/probes/read-probe.mjs, run by bench/h200.sh on the fresh GPU before the bench):
// a plain WebGPU read's bandwidth, the ceiling bench's own stream read is held against (ceiling.ts). Unlike the
// anchors, a bad file is an error: the flag is given only when the probe printed its line.
import { readFileSync } from 'node:fs';

/** The probe's JSON line as printed: its best streaming read over the forms it tried, and those forms. */
export interface ReadProbe { GBps: number; [key: string]: unknown }

const firstLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0];

/** The last JSON line of `path` (the probe's output); throws a one-line error naming the file. */
export function readProbeFile(path: string): ReadProbe {
  const bad = (why: string): never => { throw new Error(`[bench] --read-probe ${path}: ${why}`); };
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    bad(`cannot read it (${firstLine(e)})`);
  }
  const line = text.split('\n').filter((l) => l.startsWith('{')).pop() ?? bad('no JSON line in it');
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (e) {
    bad(`its JSON line does not parse (${firstLine(e)})`);
  }
  const GBps = (v as { GBps?: unknown }).GBps;
  if (typeof GBps !== 'number' || !(GBps > 0) || !Number.isFinite(GBps)) bad('no positive GBps figure in its line');
  return v as ReadProbe;
}
