// What a user of a multi-gigabyte download expects from the page: its speed and time left, and the browser asked
// (once) to keep the download cache, so that it does not evict a model it has kept for weeks.
import { fmtBytes } from './memory.ts';
import { secs } from './estimate.ts';

const ASKED = 'hrm-webgpu-demo.persist-asked';

/** Ask for persistent storage once per site (the browser may show a prompt); later loads do not ask again. */
export async function askPersistence(): Promise<void> {
  try {
    if (localStorage.getItem(ASKED) || !navigator.storage?.persist) return;
    localStorage.setItem(ASKED, '1');
    if (!(await navigator.storage.persisted())) await navigator.storage.persist();
  } catch { /* storage blocked: the cache may be evicted, nothing else changes */ }
}

/**
 * Download speed over the last few seconds and the time left at it, as " · 4.2 MiB/s, about 3 min left" ('' once
 * whole).
 */
export class DownloadRate {
  private readonly samples: Array<[number, number]> = [];

  note(loaded: number, total: number): string {
    const now = performance.now();
    this.samples.push([now, loaded]);
    while (this.samples.length > 2 && now - this.samples[0][0] > 5000) this.samples.shift();
    const [t0, b0] = this.samples[0];
    // Nothing while the rate is unknown, and nothing once the download is whole.
    if (now - t0 < 500 || loaded <= b0 || loaded >= total) return '';
    const perSec = ((loaded - b0) * 1000) / (now - t0);
    return ` · ${fmtBytes(perSec)}/s, about ${secs((total - loaded) / perSec)} left`;
  }
}
