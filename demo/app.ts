// The demo's shared state: the engine (the model's worker, engine.ts), one GPU job at a time (load, generate or
// REFRACT) with its AbortController, and errors: each shown next to the control that started it (#<job>-error, a
// live region) and summarised in the banner at the top.
import { DeviceLostError, InputError, parseKvConfig, type KvStorage } from '../src/index.ts';
import type { WorkerDeviceInfo, WorkerModelInfo } from '../src/worker/index.ts';
import { Engine } from './engine.ts';
import { explain } from './errors.ts';
import { $, FieldError } from './dom.ts';

export type Job = 'load' | 'generate' | 'refract';

/** The panel where each job's error is shown in full (the banner names it and links there). */
const PANEL: Record<Job, string> = { load: 'Model', generate: 'Generate', refract: 'REFRACT' };

/** Cache types offered for K and V (llama.cpp names; f16 = full precision). */
export const KV_CHOICES: ReadonlyArray<[string, string]> = [
  ['f16', 'full precision (f16)'], ['q8_0', 'q8 (8-bit)'], ['q6_K', 'q6 (6-bit)'], ['q5_0', 'q5 (5-bit)'],
  ['q4_0', 'q4 (4-bit)'], ['q3_K', 'q3 (3-bit)'], ['q2_K', 'q2 (2-bit)'],
  ['turbo4', 'turbo4 (TurboQuant 4-bit)'], ['turbo3', 'turbo3 (TurboQuant 3-bit)'], ['turbo2',
    'turbo2 (TurboQuant 2-bit)'],
];

export class App {
  /** The model and every GPU call go through here. */
  readonly engine = new Engine();
  job: Job | null = null;
  /** True from a stop until the stopped job has ended (its buttons stay off). */
  finishing = false;
  /** Whether the last job ended because the user stopped it. */
  lastStopped = false;
  private abort: AbortController | null = null;
  private readonly listeners: Array<() => void> = [];
  /** The error each panel shows, and the one the banner shows (a fixed field clears only its own message). */
  private readonly shown = new Map<Job, unknown>();
  private bannerShows: unknown = null;

  /** The worker's GPU device (null until it is open). */
  get device(): WorkerDeviceInfo | null {
    return this.engine.device;
  }

  get lm(): WorkerModelInfo | null {
    return this.engine.lm;
  }

  /** Called whenever the model or the running job changes (panels enable and disable their buttons). */
  onChange(f: () => void): void {
    this.listeners.push(f);
  }

  changed(): void {
    for (const f of this.listeners) f();
  }

  /** Make `lm` the current model (the worker has freed the previous one's weights). */
  setModel(lm: WorkerModelInfo): void {
    this.engine.setModel(lm);
    this.changed();
  }

  /** True while the user has asked the running job to stop. */
  get stopping(): boolean {
    return this.abort?.signal.aborted ?? false;
  }

  /**
   * Run one GPU job; errors go next to its controls and to the banner. Returns undefined when it failed or stopped.
   * A new job clears the messages of the last one (its error, the banner).
   */
  async run<T>(job: Job, f: (signal: AbortSignal) => Promise<T>): Promise<T | undefined> {
    if (this.job) { this.showError(new InputError('demo', `wait for the running ${this.job} to finish, or stop it`),
      job); return undefined; }
    this.job = job;
    this.abort = new AbortController();
    this.hideBanner();
    for (const j of Object.keys(PANEL) as Job[]) this.clearError(j);
    this.changed();
    try {
      return await f(this.abort.signal);
    } catch (e) {
      // Whatever a stopped job throws on its way out (an aborted fetch, a cut stream) is the stop, not an error.
      const lost = this.engine.lost;
      if (this.abort.signal.aborted && !lost) return undefined;
      this.showError(lost ? new DeviceLostError(job, lost) : e, job);
      return undefined;
    } finally {
      this.lastStopped = this.abort.signal.aborted;
      // A stopped REFRACT run waits for its last part on the GPU. A stopped generation returns at once (the few
      // decode steps queued ahead, generate.ts, finish by themselves); a cancelled download has nothing there.
      if (this.lastStopped && job === 'refract') await this.engine.idle();
      this.finishing = false;
      this.job = null;
      this.abort = null;
      this.changed();
    }
  }

  /** Stop the running job: it ends after the part on the GPU (the page says it is finishing meanwhile). */
  stop(): void {
    if (!this.abort || this.abort.signal.aborted) return;
    this.finishing = true;
    this.abort.abort(new DOMException('stopped by the user', 'AbortError'));
    this.changed();
  }

  /** Watch for a lost device (in the worker; the engine drops the model): offer to reload. */
  watchDevice(): void {
    this.engine.onLost((message) => {
      this.showError(new DeviceLostError('device', message));
      this.changed();
    });
  }

  /**
   * Show an error next to `job`'s controls (when given) and in the banner (announced there only when no panel holds
   * it).
   */
  showError(e: unknown, job?: Job): void {
    const x = explain(e);
    if (x.kind === 'aborted') return;
    if (x.kind === 'other') console.error(e);
    if (job) {
      const el = $(`${job}-error`);
      el.dataset.kind = x.kind;
      const title = document.createElement('strong');
      title.textContent = x.title;
      el.replaceChildren(title, document.createTextNode(x.detail ? `: ${x.detail}` : ''));
      el.hidden = false;
    }
    // The banner summarises a panel's error (and is announced itself only when no panel holds it).
    const banner = $('banner');
    banner.dataset.kind = x.kind;
    banner.setAttribute('role', job ? 'region' : 'alert');
    $('banner-title').textContent = job ? `${x.title} (see ${PANEL[job]})` : x.title;
    $('banner-detail').textContent = job ? '' : x.detail;
    const go = $<HTMLAnchorElement>('banner-goto');
    go.hidden = !job;
    if (job) { go.href = `#${job}-error`; go.textContent = `Show the message in the ${PANEL[job]} panel`; }
    $('banner-reload').hidden = !x.reload;
    banner.hidden = false;
    this.bannerShows = e;
    if (x.reload) $('banner-reload').focus();
    if (job) this.shown.set(job, e);
    if (job && e instanceof FieldError) this.clearWhenFixed(e, job);
  }

  /** Clear `e`'s message and banner once an edit of its fields fixes them (while that message is still shown). */
  private clearWhenFixed(e: FieldError, job: Job): void {
    const edits = new AbortController();
    const check = () => {
      if (this.shown.get(job) !== e) { edits.abort(); return; }
      if (!e.fixed()) return;
      edits.abort();
      this.clearError(job);
      if (this.bannerShows === e) this.hideBanner();
    };
    for (const f of e.fields) {
      for (const type of ['input', 'change']) f.addEventListener(type, check, { signal: edits.signal });
    }
  }

  clearError(job: Job): void {
    this.shown.delete(job);
    const el = $(`${job}-error`);
    el.hidden = true;
    el.replaceChildren();
  }

  hideBanner(): void {
    this.bannerShows = null;
    $('banner').hidden = true;
  }
}

/** The KV spec of two selects holding llama.cpp cache type names. */
export function kvFromSelects(kId: string, vId: string): { spec: KvStorage; label: string } {
  const label = `ctk=${$<HTMLSelectElement>(kId).value},ctv=${$<HTMLSelectElement>(vId).value}`;
  const c = parseKvConfig(label);
  return { spec: { k: c.k.bits, v: c.v.bits }, label: c.label };
}
