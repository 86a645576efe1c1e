// A small XML well-formedness check for the HTML report (which is written as polyglot XHTML): every tag closed
// in order, attributes quoted, no raw `<` in text, every `&` an entity. Returns the first problem, or null.
const ENTITY = /^&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z][a-zA-Z0-9]*);/;
const TAG = /^<(\/?)([a-zA-Z][\w:.-]*)((?:\s+[\w:.-]+\s*=\s*"[^"<]*")*)\s*(\/?)>/;

function checkText(s: string, at: number): string | null {
  for (let i = s.indexOf('&'); i >= 0; i = s.indexOf('&', i + 1)) {
    if (!ENTITY.test(s.slice(i))) return `bare & at ${at + i}: ${JSON.stringify(s.slice(i, i + 20))}`;
  }
  return null;
}

export function wellFormedProblem(doc: string): string | null {
  let s = doc.replace(/^<!DOCTYPE html>\s*/i, '');
  const stack: string[] = [];
  let pos = 0;
  while (s.length) {
    const lt = s.indexOf('<');
    const text = lt < 0 ? s : s.slice(0, lt);
    const bad = checkText(text, pos);
    if (bad) return bad;
    if (lt < 0) break;
    s = s.slice(lt);
    pos += lt;
    if (s.startsWith('<!--')) {
      const end = s.indexOf('-->');
      if (end < 0) return `unterminated comment at ${pos}`;
      s = s.slice(end + 3);
      pos += end + 3;
      continue;
    }
    const m = TAG.exec(s);
    if (!m) return `malformed tag at ${pos}: ${JSON.stringify(s.slice(0, 60))}`;
    const [all, close, name, attrs, self] = m;
    const badAttr = checkText(attrs, pos);
    if (badAttr) return badAttr;
    if (close) {
      const open = stack.pop();
      if (open !== name) return `</${name}> at ${pos} closes <${open}>`;
    } else if (!self) {
      stack.push(name);
    }
    s = s.slice(all.length);
    pos += all.length;
  }
  return stack.length ? `unclosed <${stack.join('> <')}>` : null;
}
