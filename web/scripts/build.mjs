// Builds the UI into dist/ (or the folder given with --out): esbuild bundles
// src/main.js with code splitting into hashed files under assets/, index.html
// is written from src/index.html with the entry's names, static files are
// copied, the dependencies' licences are gathered into LICENSES.txt, and
// SOURCES.sha256 records a hash of everything the build read, which a Go
// test (web/sources_test.go) compares to the sources to catch a stale
// committed bundle. Fails when the first page is over the size budget.
import * as esbuild from 'esbuild';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outArg = process.argv.indexOf('--out');
const out = outArg > 0 ? process.argv[outArg + 1] : join(root, 'dist');
// BUDGET_GZ is the budget for the first page: every file the
// default route loads, gzipped.
const BUDGET_GZ = 400 * 1024;

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: ['src/main.js'],
  bundle: true,
  splitting: true,
  format: 'esm',
  target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
  minify: true,
  legalComments: 'none',
  outdir: join(out, 'assets'),
  entryNames: '[name]-[hash]',
  chunkNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
});

const outputs = result.metafile.outputs;
const rel = (p) => relative(out, join(root, p)).split('\\').join('/');
const mainKey = Object.keys(outputs).find((k) => outputs[k].entryPoint === 'src/main.js');
const main = outputs[mainKey];
const html = readFileSync(join(root, 'src/index.html'), 'utf8')
  .replace('%MAIN_JS%', rel(mainKey))
  .replace('%MAIN_CSS%', rel(main.cssBundle));
writeFileSync(join(out, 'index.html'), html);
cpSync(join(root, 'src/static'), out, { recursive: true });
writeFileSync(join(out, 'LICENSES.txt'), licences());
writeFileSync(join(out, 'SOURCES.sha256'), sourcesHash() + '\n');

// Size report: the first page is the entry, its CSS, the chunks it imports
// statically, and what the default route (metrics) loads: its page chunk
// and the editor chunk, with their static imports.
const gz = (k) => gzipSync(readFileSync(join(root, k)), { level: 9 }).length;
const seen = new Set();
const walk = (k) => {
  if (!k || seen.has(k)) return;
  seen.add(k);
  for (const im of outputs[k].imports || []) if (im.kind === 'import-statement') walk(im.path);
  if (outputs[k].cssBundle) seen.add(outputs[k].cssBundle);
};
walk(mainKey);
const chunkOf = (src) => Object.keys(outputs).find((k) => outputs[k].entryPoint === src);
walk(chunkOf('src/pages/metrics.js'));
walk(chunkOf('src/editor/cm.js'));
let first = 0;
const rows = [];
for (const k of Object.keys(outputs)) {
  const size = gz(k);
  const raw = outputs[k].bytes;
  if (seen.has(k)) first += size;
  rows.push(`${seen.has(k) ? '*' : ' '} ${rel(k).padEnd(40)} ${String(raw).padStart(8)} B ${String(size).padStart(8)} B gz`);
}
console.log(rows.sort().join('\n'));
console.log(`first page (*): ${(first / 1024).toFixed(1)} KiB gzipped (budget ${BUDGET_GZ / 1024} KiB)`);
if (first > BUDGET_GZ) {
  console.error('build: the first page is over its size budget');
  process.exit(1);
}

// sourcesHash hashes every input of the build, in a form web/sources_test.go
// computes the same way: for each file (sorted, "/"-separated relative
// paths), "<path>\0<sha256 hex of content>\n", then the sha256 of it all.
function sourcesHash() {
  const files = ['package.json', 'package-lock.json', 'scripts/build.mjs', ...walkFiles('src')].sort();
  const h = createHash('sha256');
  for (const f of files) {
    const c = createHash('sha256').update(readFileSync(join(root, f))).digest('hex');
    h.update(`${f}\0${c}\n`);
  }
  return h.digest('hex');
}

function walkFiles(dir) {
  const outList = [];
  for (const name of readdirSync(join(root, dir))) {
    const p = `${dir}/${name}`;
    if (statSync(join(root, p)).isDirectory()) outList.push(...walkFiles(p));
    else outList.push(p);
  }
  return outList;
}

// licences concatenates the licence files of the bundled packages (the
// lockfile's non-dev packages), which MIT and Apache-2.0 ask to keep with
// copies.
function licences() {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const parts = [];
  for (const [path, meta] of Object.entries(lock.packages).sort()) {
    if (!path || meta.dev) continue;
    const dir = join(root, path);
    const lic = ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'license', 'LICENCE'].map((f) => join(dir, f)).find(existsSync);
    const name = path.replace(/^.*node_modules\//, '');
    parts.push(`==== ${name} ${meta.version} (${meta.license || 'see below'})\n\n${lic ? readFileSync(lic, 'utf8').trim() : '(no licence file in the package)'}\n`);
  }
  return `Licences of the packages bundled into weft's web UI.\n\n${parts.join('\n')}`;
}
