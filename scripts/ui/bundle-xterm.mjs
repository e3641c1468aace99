// bundle-xterm.mjs turns Debian's node-xterm (xterm.js 3.8.1, MIT, CommonJS
// modules under /usr/share/nodejs/xterm/lib) into one ES module for the
// web UI, which has no build step: ui/assets/vendor/xterm.js. Run by
// scripts/ui/vendor-xterm.sh; the output is committed.
//
//   node bundle-xterm.mjs <xterm package dir> <out.js>
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const [pkg, out] = process.argv.slice(2);
const lib = join(pkg, 'lib');
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith('.js') && !name.endsWith('.test.js') && name !== 'TestUtils.js') files.push(p);
  }
})(lib);

const version = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')).version;
let src = `// xterm.js ${version} (MIT; Copyright (c) 2017-2018 The xterm.js authors,
// 2014-2016 SourceLair Private Company, 2012-2013 Christopher Jeffrey), from
// Debian's node-xterm package, bundled by scripts/ui/bundle-xterm.mjs.
// Do not edit: run scripts/ui/vendor-xterm.sh.
const defs = Object.create(null);
const cache = Object.create(null);
function resolve(from, spec) {
  const parts = from.split('/').slice(0, -1);
  for (const s of spec.split('/')) {
    if (s === '..') parts.pop();
    else if (s !== '.') parts.push(s);
  }
  const p = parts.join('/');
  if (defs[p + '.js']) return p + '.js';
  if (defs[p + '/index.js']) return p + '/index.js';
  throw new Error('xterm bundle: cannot resolve ' + spec + ' from ' + from);
}
function load(id) {
  if (cache[id]) return cache[id].exports;
  const module = { exports: {} };
  cache[id] = module;
  defs[id]((spec) => load(resolve(id, spec)), module, module.exports);
  return module.exports;
}
`;
for (const f of files) {
  const id = relative(lib, f).split('\\').join('/');
  src += `defs[${JSON.stringify(id)}] = function (require, module, exports) {\n${readFileSync(f, 'utf8')}\n};\n`;
}
src += `export const Terminal = load('public/Terminal.js').Terminal;\n`;
writeFileSync(out, src);
console.log(`${out}: ${files.length} modules, ${src.length} bytes`);
