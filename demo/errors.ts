// Turn what the library (typed errors), the browser (DOMException, TypeError from fetch) and the download code
// throw into a message a person can act on: a title, the detail, and whether reloading the page is the way out.
import { DeviceLostError, FormatError, GpuOutOfMemoryError, GpuValidationError, InputError, NetworkError,
  NoWebGpuError } from '../src/index.ts';
import { BindingSizeError, DTypeError } from '../src/advanced.ts';
import { BackendCapabilityError } from '../src/refract/index.ts';
import { DownloadError } from './cached-fetch.ts';
import { WontFitError } from './memory.ts';

export interface Explained {
  /** Short class of problem, also set as data-kind on the banner (tests read it). */
  kind: 'no-webgpu' | 'feature' | 'oom' | 'device-lost' | 'bad-files' | 'input' | 'download' | 'too-large' | 'aborted'
    | 'quota' | 'gpu' | 'other';
  title: string;
  detail: string;
  reload: boolean;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** The library's command-line words (its messages serve the CLI too) as the page's fields. */
const PAGE_TERMS: Array<[RegExp, string]> = [
  [/give a longer --corpus or a smaller -c\/--ctx/g, 'paste a longer text or lower Context (ctx)'],
  [/pass -c\/--ctx (\d+) or less/g, 'set Context (ctx) to $1 or less'],
  [/pass --measure-floor/g, 'tick "Measure the noise floor first"'],
  [/(-c\/)?--ctx\b/g, 'Context (ctx)'], [/--chunks\b/g, 'Chunks'], [/--n-predict\b/g, 'Tokens each'], [/--corpus\b/g,
    'the text'],
];

export function pageTerms(text: string): string {
  return PAGE_TERMS.reduce((t, [re, to]) => t.replace(re, to), text);
}

export function explain(e: unknown): Explained {
  // The library's errors start with the operation's tag ("[load] ..."): useful in logs, noise to a reader.
  const detail = pageTerms(message(e).replace(/^(\[[\w .-]+\] )+/, ''));
  if (e instanceof DOMException && e.name === 'AbortError') return { kind: 'aborted', title: 'Stopped.', detail: '',
    reload: false };
  if (e instanceof DeviceLostError) {
    return { kind: 'device-lost', title: 'The GPU device was lost',
      detail: `${detail}. The driver was reset or the tab lost its GPU; reload the page to continue.`, reload: true };
  }
  if (e instanceof NoWebGpuError) {
    if (/feature/i.test(detail)) return { kind: 'feature', title: 'This GPU lacks a WebGPU feature the model needs',
      detail, reload: false };
    return {
      kind: 'no-webgpu', title: 'WebGPU is not available',
      detail: `${detail}. Use a browser with WebGPU (Chrome or Edge 113+, Safari 26, Firefox 141+ on Windows), ` +
        'served over https or ' +
        'from localhost; on Linux, Chrome needs --enable-unsafe-webgpu (and Vulkan) for now.',
      reload: false,
    };
  }
  if (e instanceof GpuOutOfMemoryError) {
    return { kind: 'oom', title: 'Out of GPU memory',
      detail: `${detail}. Try a shorter context or fewer tokens, a quantized KV cache, or a smaller model; ` +
        'closing other GPU-heavy tabs can help.', reload: false };
  }
  if (e instanceof WontFitError) {
    return { kind: 'too-large', title: 'This model will not fit this GPU',
      detail: `${e.reasons.join('; ')}. Nothing was downloaded. Quantize the weights (8 or 4 bits), lower the ` +
        'context, quantize the KV cache, or tick "Load even if…" to try anyway.', reload: false };
  }
  if (e instanceof BindingSizeError) return { kind: 'too-large', title: 'Too large for this GPU', detail,
    reload: false };
  if (e instanceof FormatError) return { kind: 'bad-files', title: 'These files are not a usable HRM-Text model',
    detail, reload: false };
  if (e instanceof InputError || e instanceof DTypeError ||
    e instanceof BackendCapabilityError) return { kind: 'input', title: 'Check the settings', detail, reload: false };
  if (e instanceof GpuValidationError) {
    if (/feature/i.test(detail)) return { kind: 'feature', title: 'This GPU lacks a WebGPU feature the model needs',
      detail, reload: false };
    return { kind: 'gpu', title: 'The GPU rejected a command',
      detail: `${detail}. This is a bug in hrm-webgpu or the browser; please report it with the adapter details.`,
      reload: false };
  }
  // A DownloadError from the model's worker (its reads of the files) arrives as an Error of that name.
  if (e instanceof DownloadError || e instanceof NetworkError || (e instanceof Error && e.name === 'DownloadError')) {
    return { kind: 'download', title: 'Download failed',
      detail: /HTTP 40[13]/.test(detail)
        ? `${detail}. The repository may be gated or private: browsers cannot send your Hugging Face token.` : detail,
      reload: false };
  }
  // Requests that got no answer are NetworkErrors naming the URL (the library's download path); this is a body cut
  // mid-read.
  if (e instanceof TypeError && /fetch|network|load failed/i.test(detail)) {
    return { kind: 'download', title: 'Download failed',
      detail: `${detail}: the connection failed while reading a file (offline, or the server went away); try again.`,
      reload: false };
  }
  if (e instanceof DOMException && e.name === 'QuotaExceededError') {
    return { kind: 'quota', title: 'Browser storage is full',
      detail: `${detail}. Clear the download cache or free disk space.`, reload: false };
  }
  // The stack goes to the console (App.showError), not into the page.
  return { kind: 'other', title: 'Something went wrong', detail, reload: false };
}
