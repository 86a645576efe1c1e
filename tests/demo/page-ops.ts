// What the demo's browser tests do to one page: read a field, set one (with the input event the panels listen
// to), tick a box, wait for an element's data-state, for it to show, or for its text to match; read the banner;
// click a Stop button and time it.
import type { Page } from 'puppeteer-core';

/** The page's operations, on whichever page `page()` returns when they run. */
export function pageOps(page: () => Page) {
  return {
    text: (sel: string) => page().$eval(sel, (el) => el.textContent ?? ''),
    setValue: (sel: string, v: string) => page().$eval(sel, (el, val) => {
      (el as HTMLInputElement).value = val; el.dispatchEvent(new Event('input'));
    }, v),
    check: (sel: string, on: boolean) => page().$eval(sel, (el, v) => { (el as HTMLInputElement).checked = v; }, on),
    focused: () => page().evaluate(() => document.activeElement?.id),
    disabled: (sel: string) => page().$eval(sel, (el) => (el as HTMLButtonElement).disabled),
    state: (id: string) => page().$eval(`#${id}`, (el) => (el as HTMLElement).dataset.state),
    waitState: (id: string, states: string[], timeout = 60_000) => page().waitForFunction(
      (i, s) => s.includes(document.getElementById(i)?.dataset.state ?? ''), { timeout }, id, states),
    waitShown: (id: string, timeout = 10_000) => page().waitForFunction(
      (i) => !(document.getElementById(i) as HTMLElement).hidden, { timeout }, id),
    waitMatch: (id: string, re: RegExp, timeout = 10_000) => page().waitForFunction(
      (i, source, flags) => new RegExp(source, flags).test(document.getElementById(i)?.textContent ?? ''),
      { timeout }, id, re.source, re.flags),
    banner: () => page().$eval('#banner', (el) => ({
      hidden: (el as HTMLElement).hidden, kind: (el as HTMLElement).dataset.kind,
      title: el.querySelector('#banner-title')?.textContent ?? '',
      detail: el.querySelector('#banner-detail')?.textContent ?? '',
    })),
    /**
     * Click a Stop button, timed inside the page: the status text right after the click, and the milliseconds until
     * `running`'s data-state leaves 'running'.
     */
    timedStop: (stop: string, status: string, running: string) => page().evaluate((ids) => new Promise<{
      ms: number; right: string; }>((res) => {
      const el = document.getElementById(ids.running)!;
      const t0 = performance.now();
      document.getElementById(ids.stop)!.click();
      const right = document.getElementById(ids.status)!.textContent ?? '';
      const poll = () => (el.dataset.state === 'running' ? setTimeout(poll, 5) : res({ ms: performance.now() - t0,
        right }));
      poll();
    }), { stop, status, running }),
  };
}
