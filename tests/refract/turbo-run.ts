// The small REFRACT run of ctk=turbo3,ctv=turbo3 that Node (turbo-score.test.ts) and Deno (deno-turbo.ts) both make.
import { PROMPTS_V01 } from '../../src/refract/prompts.ts';

export const TURBO_KLD_RUN = {
  candidate: 'ctk=turbo3,ctv=turbo3', prompts: PROMPTS_V01.slice(0, 1), nPredict: 4, ctx: 64, chunks: 1, seed: 7,
  skipGtm: true,
  corpus: { text: 'The Fulton County Grand Jury said Friday an investigation took place. '.repeat(20), label: 'test' },
};
