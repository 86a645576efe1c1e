// Deno entry for tests/refract/corpus.test.ts: the default corpus, a Vega-Lite chart as SVG, and a full HTML
// report from the fake backend, printed as one JSON line.
import { defaultCorpus } from '../../src/refract/corpus.ts';
import { renderSvg } from '../../src/refract/report/charts.ts';
import { renderHtmlReport } from '../../src/refract/report/html.ts';
import { runRefract } from '../../src/refract/runner.ts';
import { PROMPTS_V01 } from '../../src/refract/prompts.ts';
import { FakeBackend } from './fake-backend.ts';

const corpus = await defaultCorpus();
const svg = await renderSvg({ data: { values: [{ x: 1, y: 2 }, { x: 2, y: 3 }] }, mark: 'line',
  encoding: { x: { field: 'x', type: 'quantitative' }, y: { field: 'y', type: 'quantitative' } } });
const report = await runRefract({ backend: new FakeBackend(), model: 'fake', candidate: 'ctk=q4_0,ctv=q4_0',
  prompts: PROMPTS_V01.slice(0, 3), nPredict: 8, chunks: 2, corpus });
const html = await renderHtmlReport(report);
console.log(JSON.stringify({ corpusLength: corpus.length, corpusHead: corpus.slice(0, 200), svg: svg.slice(0, 200),
  htmlHasSvg: (html.match(/<svg/g) ?? []).length >= 4 }));
