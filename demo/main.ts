// The demo page: open the GPU (in the model's worker), show the adapter, load the embedded hrm-text-brown-10m, wire
// the three panels.
// `window.__demo` exposes the state to the end-to-end test (tests/demo/demo.test.ts).
import { isSoftwareAdapter } from '../src/index.ts';
import { App, KV_CHOICES } from './app.ts';
import { $ } from './dom.ts';
import { initModelPanel, openModel, refreshCacheUsage, startSource, updateMemory } from './model-panel.ts';
import { showAdapter } from './adapter.ts';
import { initGeneratePanel } from './generate-panel.ts';
import { initRefractPanel } from './refract-panel.ts';
import { embeddedSource } from './sources.ts';

function fillKvSelects(): void {
  for (const sel of document.querySelectorAll<HTMLSelectElement>('select.kv-select')) {
    const dflt = sel.dataset.default ?? 'f16';
    for (const [value, label] of KV_CHOICES) sel.add(new Option(label, value, value === dflt, value === dflt));
  }
}

async function main(): Promise<void> {
  const app = new App();
  (window as unknown as { __demo: App }).__demo = app;
  fillKvSelects();
  $('banner-close').addEventListener('click', () => app.hideBanner());
  $('banner-reload').addEventListener('click', () => location.reload());
  // Esc stops a generation or a REFRACT run (a download has its own Cancel), and dismisses the banner.
  document.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Escape') return;
    if (app.job === 'generate' || app.job === 'refract') app.stop();
    else if (!$('banner').hidden) app.hideBanner();
  });
  initModelPanel(app);
  initGeneratePanel(app);
  initRefractPanel(app);
  app.changed();
  void refreshCacheUsage();
  try {
    await app.engine.open();
  } catch (e) {
    const status = $('model-status');
    status.textContent = 'No GPU: the demo cannot run here.';
    status.dataset.state = 'error';
    app.showError(e);
    return;
  }
  app.watchDevice();
  showAdapter(app);
  if (isSoftwareAdapter(app.device!.adapter)) {
    $<HTMLInputElement>('kld-chunks').value = '1';
    $<HTMLInputElement>('kld-ctx').value = '64';
    $('refract-cpu').hidden = false;
  }
  // The last model loaded from a URL comes back (from the download cache); the embedded one when it cannot.
  const first = await startSource();
  await openModel(app, first);
  if (!app.lm && first.kind !== 'embedded') await openModel(app, embeddedSource());
  updateMemory(app);
  $('prompt').focus();
}

void main();
