// Loops with a constant trip count written out in the WGSL text, for the runtimes whose shaders specialize.ts
// specializes (naga: Deno, Firefox). Tint's output lets the driver unroll `for (var i = 0u; i < UPL; i++)` and keep
// the arrays those loops index (accumulators, weight registers) in registers; naga's loops reach NVIDIA's compiler in
// a form it does not unroll, so the arrays go to local memory: a decode GEMV 38 us a dispatch under Deno on the H200
// where Dawn takes a few. Each copy of the body is a block that binds the counter as a constant (`let i = 2u;`), so
// every index it computes folds. Only loops that count up by one from a constant to a constant, with no `break`,
// `continue` or write to the counter inside, are touched; the rest of the text is left as it is.

/** Loops longer than this stay loops (code size). */
const MAX_TRIPS = 16;
/** A body copied more than this many characters in all stays a loop. */
const MAX_CHARS = 24_000;

const HEADER = /for \(var (\w+) = ([^;]+); (\w+) < ([^;]+); (\w+)(\+\+| \+= 1u?)\) \{/g;
const CONST = /^const (\w+)(?:: *(?:u32|i32))? *= *([^;]+);/gm;

/**
 * Whether a device's specialized modules get their loops unrolled: on GPUs, not on CPU drivers (their compiler
 * unrolls by itself and takes far longer over the written-out text). A Gpu's option `kernels.unroll` (tests: the
 * unrolled text on a CPU driver) replaces the answer for that Gpu (kernel.ts, shaderText).
 */
export function driverUnrolls(cpu: boolean): boolean {
  return !cpu;
}

/** `source` with every eligible constant-trip loop unrolled (see the header). */
export function unrollConstantLoops(source: string): string {
  const consts = new Map<string, number>();
  for (const [, name, expr] of source.matchAll(CONST)) {
    const v = evaluate(expr, consts);
    if (v !== null) consts.set(name, v);
  }
  return unrollIn(source, consts);
}

function unrollIn(text: string, consts: Map<string, number>): string {
  let out = '';
  let at = 0;
  HEADER.lastIndex = 0;
  for (let m = HEADER.exec(text); m; m = HEADER.exec(text)) {
    const [header, name, from, cond, bound, step] = m;
    const open = m.index + header.length - 1;
    const close = matchingBrace(text, open);
    if (close < 0) break;
    const body = text.slice(open + 1, close);
    const start = evaluate(from, consts);
    const end = evaluate(bound, consts);
    const trips = start !== null && end !== null ? end - start : -1;
    const eligible = cond === name && step === name && trips >= 0 && trips <= MAX_TRIPS &&
      !/\b(break|continue)\b/.test(body) && !writes(body, name) && trips * body.length <= MAX_CHARS;
    if (!eligible) continue;
    const inner = unrollIn(body, consts);
    const suffix = /u\s*$/.test(from.trim()) ? 'u' : 'i';
    const copies = Array.from({ length: trips }, (_, k) => `{ let ${name} = ${start! + k}${suffix};${inner}}`);
    out += text.slice(at, m.index) + copies.join(' ');
    at = close + 1;
    HEADER.lastIndex = at;
  }
  return out + text.slice(at);
}

/** Whether `body` assigns to `name` (=, op=, ++, --), so a constant cannot stand for it. */
function writes(body: string, name: string): boolean {
  return new RegExp(`\\b${name}\\s*(=(?!=)|[-+*/%&|^]=|\\+\\+|--)`).test(body);
}

/** Index of the `}` that closes the `{` at `open`, or -1. */
function matchingBrace(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return i;
  }
  return -1;
}

/** An integer expression of literals (u/i suffixes), known constants, + - * / % and parentheses; else null. */
function evaluate(expr: string, consts: Map<string, number>): number | null {
  const tokens = expr.match(/\d+[ui]?|[A-Za-z_]\w*|[-+*/%()]|\S/g) ?? [];
  let i = 0;
  // Recursive descent over the usual precedence; integer division truncates as WGSL's does for these operands.
  const factor = (): number | null => {
    const t = tokens[i++];
    if (t === undefined) return null;
    if (t === '(') {
      const v = sum();
      return tokens[i++] === ')' ? v : null;
    }
    if (/^\d/.test(t)) return Number.parseInt(t, 10);
    return consts.get(t) ?? null;
  };
  const product = (): number | null => {
    let v = factor();
    while (v !== null && (tokens[i] === '*' || tokens[i] === '/' || tokens[i] === '%')) {
      const op = tokens[i++], r = factor();
      if (r === null || (op !== '*' && r === 0)) return null;
      v = op === '*' ? v * r : op === '/' ? Math.trunc(v / r) : v % r;
    }
    return v;
  };
  const sum = (): number | null => {
    let v = product();
    while (v !== null && (tokens[i] === '+' || tokens[i] === '-')) {
      const op = tokens[i++], r = product();
      if (r === null) return null;
      v = op === '+' ? v + r : v - r;
    }
    return v;
  };
  const v = sum();
  return v !== null && i === tokens.length && Number.isSafeInteger(v) ? v : null;
}
