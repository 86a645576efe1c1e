// Chrome's command lines for WebGPU on a Linux GPU without a display, tried in order by bench/chrome/run.ts: each is
// launched, asked for a high-performance adapter on a 127.0.0.1 page, and recorded (adapter info, features, the
// limits the benchmark leans on; on failure Chrome's stderr). The first whose adapter is NVIDIA runs the rest.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';

/** Every set gets these: WebGPU with Node's Dawn toggles, unquantized timestamps, no first-run or network chatter. */
const COMMON = ['--no-sandbox', '--enable-unsafe-webgpu', '--enable-webgpu-developer-features',
  '--enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia', '--disable-dev-shm-usage',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
  '--disable-renderer-backgrounding', '--disable-background-timer-throttling', '--enable-logging=stderr', '--v=0'];
const VULKAN = ['--use-vulkan', '--enable-features=Vulkan,VulkanFromANGLE', '--use-angle=vulkan',
  '--disable-vulkan-surface', '--ozone-platform=headless', '--ignore-gpu-blocklist'];

export const FLAG_SETS: Array<{ name: string; args: string[] }> = [
  { name: 'vulkan-angle', args: ['--headless=new', ...VULKAN] },
  { name: 'vulkan-angle-nogpusandbox', args: ['--headless=new', ...VULKAN, '--disable-gpu-sandbox'] },
  { name: 'vulkan-gl-angle', args: ['--headless=new', ...VULKAN, '--use-gl=angle', '--disable-gpu-sandbox'] },
  { name: 'vulkan-angle-headless-old', args: ['--headless=old', ...VULKAN, '--disable-gpu-sandbox'] },
  { name: 'vulkan-native-swiftshader-gl', args: ['--headless=new', '--use-vulkan=native', '--enable-features=Vulkan',
    '--use-angle=swiftshader', '--disable-vulkan-surface', '--ozone-platform=headless', '--ignore-gpu-blocklist',
    '--disable-gpu-sandbox'] },
  { name: 'vulkan-angle-in-process-gpu', args: ['--headless=new', ...VULKAN, '--in-process-gpu', '--no-zygote'] },
  { name: 'chrome-default', args: ['--headless=new', '--ignore-gpu-blocklist'] },
];

export interface Probe {
  name: string; args: string[]; ms: number; nvidia: boolean;
  adapter?: { vendor: string; architecture: string; device: string; description: string; fallback: boolean | null;
    features: string[]; limits: Record<string, number> } | null;
  error?: string; chromeLog?: string;
}

/** Launch `chromium` with a set's flags (its own profile, removed on close); Chrome's stderr collects into `log`. */
export async function launchWith(chromium: string, args: string[], log: string[]) {
  const profile = mkdtempSync(join(tmpdir(), 'hrm-chrome-run-'));
  // headless: false, as each set names its own --headless mode.
  const browser = await puppeteer.launch({ executablePath: chromium, headless: false, protocolTimeout: 0,
    timeout: 60_000, args: [...COMMON, ...args, `--user-data-dir=${profile}`],
    defaultViewport: { width: 1366, height: 900 } });
  browser.process()?.stderr?.on('data', (b: Buffer) => { if (log.length < 4000) log.push(b.toString()); });
  const close = async () => {
    await browser.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  };
  return { browser, close };
}

/** The adapter a page at `url` gets (null when none), as the benchmark asks for it. */
export async function adapterOf(browser: Browser, url: string): Promise<Probe['adapter']> {
  const page = await browser.newPage();
  await page.goto(url);
  return page.evaluate(async () => {
    const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
    const ask = () => gpu?.requestAdapter({ powerPreference: 'high-performance' }) ?? null;
    // A GPU process still starting has answered null once here (SwiftShader, loaded machine): ask again.
    const a = (await ask()) ?? await new Promise((ok) => setTimeout(ok, 2000)).then(ask);
    if (!a) return null;
    const i = a.info;
    const keys = ['maxBufferSize', 'maxStorageBufferBindingSize', 'maxComputeWorkgroupStorageSize',
      'maxComputeInvocationsPerWorkgroup', 'maxStorageBuffersPerShaderStage',
      'maxComputeWorkgroupsPerDimension'] as const;
    return { vendor: i.vendor, architecture: i.architecture, device: i.device, description: i.description,
      fallback: (i as GPUAdapterInfo & { isFallbackAdapter?: boolean }).isFallbackAdapter ?? null,
      features: [...a.features].sort(), limits: Object.fromEntries(keys.map((k) => [k, a.limits[k]])) };
  });
}

const isNvidia = (a: Probe['adapter']) => !!a && /nvidia/i.test(`${a.vendor} ${a.description}`);

/** Try the sets in order (all of them, or until one gives NVIDIA when `stopAtNvidia`), each within `perSetMs`. */
export interface ProbeOptions { stopAtNvidia: boolean; perSetMs: number; until: number; say: (m: string) => void }

export async function probeFlagSets(chromium: string, url: string, opts: ProbeOptions): Promise<Probe[]> {
  const probes: Probe[] = [];
  for (const set of FLAG_SETS) {
    if (Date.now() + opts.perSetMs > opts.until) { opts.say(`[probe] out of time before ${set.name}`); break; }
    const t0 = Date.now();
    const log: string[] = [];
    const p: Probe = { name: set.name, args: set.args, ms: 0, nvidia: false };
    let close: (() => Promise<void>) | null = null;
    try {
      const l = await launchWith(chromium, set.args, log);
      close = l.close;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, fail) => {
        timer = setTimeout(() => fail(new Error(`no adapter answer in ${opts.perSetMs} ms`)), opts.perSetMs);
      });
      p.adapter = await Promise.race([adapterOf(l.browser, url), late]).finally(() => clearTimeout(timer));
      p.nvidia = isNvidia(p.adapter);
    } catch (e) {
      p.error = e instanceof Error ? e.message : String(e);
    } finally {
      await close?.();
    }
    p.ms = Date.now() - t0;
    if (!p.nvidia) p.chromeLog = log.join('').slice(-20_000);
    const a = p.adapter;
    const got = !a ? p.error ?? 'no adapter'
      : `${a.vendor} / ${a.architecture} / ${a.description} (${a.features.length} features: ${a.features.join(' ')})`;
    opts.say(`[probe] ${set.name}: ${got} in ${p.ms} ms`);
    probes.push(p);
    if (p.nvidia && opts.stopAtNvidia) break;
  }
  return probes;
}
