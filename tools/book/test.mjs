// test.mjs DIR [--pages a.html,b.html] - the web book in a real browser:
// Debian's Chromium, headless, driven by playwright-core (make test-book).
//
// Every page of DIR is opened from file:// with every request outside DIR
// refused (route interception), which proves the book works offline (of
// the pages of src/, the repository's files, one in ten; each is read, its
// links and resources checked, below). On each page: no console error, no raw TeX left ($$, \( or \[ outside code,
// a math span pandoc could not convert), every image loaded, and every
// link resolved: to a file of DIR and, with a #fragment, to an id there;
// on the book's own pages (not the repository files of src/), no serious
// or critical accessibility violation (axe-core).
// Then, on the whole book only: hints fold and unfold and print emulation
// opens them all, search finds known terms in the right chapter, dark mode
// follows the system and the toggle persists, ←/→ turn pages; screenshots
// of a chapter go to DIR/screenshots/.
//
// The planner (planner.js, on the pages with a div.planner): the vectors
// of the C tests, with the native planner's figures (planner.sh writes
// them to BOOK-planner/vectors.json; --vectors FILE names another), are
// replayed through the page's form, and every figure the page holds must
// equal the native one exactly, every refusal give the same message; a
// book built without the planner fails here. A screenshot of it goes to
// DIR/screenshots/ too.
//
// --pages limits the run to those pages (the planted-fault tests);
// --sources runs only the check of src/'s pages from their files.
// CHROMIUM names the browser (default /usr/bin/chromium).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

// axe-core, injected into a page as a script's text (not a request).
const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
async function axeViolations(page) {
  await page.addScriptTag({ content: axeSource });
  return page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}, ${v.nodes.length}x, e.g. ${v.nodes[0].target})`));
}

const args = process.argv.slice(2);
const dir = fs.realpathSync(args[0] || "build/book");
const only = args.includes("--pages") ? args[args.indexOf("--pages") + 1].split(",") : null;
const vectorsFile = args.includes("--vectors") ? args[args.indexOf("--vectors") + 1] : `${dir}-planner/vectors.json`;
const exe = process.env.CHROMIUM || "/usr/bin/chromium";
if (!fs.existsSync(exe)) {
  console.error(`test-book: no browser at ${exe}: run tools/setup-deps.sh book (or set CHROMIUM)`);
  process.exit(2);
}
const inside = (url) => url.startsWith("file://") && fileURLToPath(url.split("#")[0]).startsWith(dir + path.sep);
const url = (p) => {
  const [f, frag] = p.split("#");
  return pathToFileURL(path.join(dir, f)).href + (frag ? "#" + frag : "");
};

let passed = 0;
const failures = [];
function check(ok, what) {
  if (ok) passed++;
  else { failures.push(what); console.log(`FAIL ${what}`); }
}

function pages(d, rel = "") {
  return fs.readdirSync(path.join(d, rel), { withFileTypes: true }).flatMap((e) => {
    const r = path.join(rel, e.name);
    if (e.isDirectory()) return r === "screenshots" ? [] : pages(d, r);
    return e.name.endsWith(".html") ? [r] : [];
  });
}

const ids = new Map();   // file -> Set of its ids, read from disk once
function idsOf(file) {
  if (!ids.has(file)) {
    const s = new Set();
    for (const m of fs.readFileSync(file, "utf8").matchAll(/\sid="([^"]*)"/g)) s.add(m[1]);
    ids.set(file, s);
  }
  return ids.get(file);
}

// Each link, [href, absolute URL], that does not lead to a file of DIR or,
// with a #fragment, to an id there.
function brokenLinks(links) {
  const bad = [];
  for (const [href, abs] of links) {
    if (!abs.startsWith("file://")) { bad.push(`${href} (outside the book)`); continue; }
    const [file, frag] = abs.split("#");
    const f = fileURLToPath(file);
    if (!inside(file) || !fs.existsSync(f) || fs.statSync(f).isDirectory()) { bad.push(`${href} (no such page)`); continue; }
    if (frag && !idsOf(f).has(decodeURIComponent(frag))) bad.push(`${href} (no such anchor)`);
  }
  return bad;
}

// ---------------------------------------------------------------- every page
// The repository files of src/ (300 of the book's pages) share one template,
// pandoc's page of a source file with book.js and the search index: every
// one has each link and resource (href, src) checked from its file, and one
// in ten is opened in the browser besides, with the book's own pages.
const sourcesOnly = args.includes("--sources");
const sourcePages = only ? [] : pages(dir).filter((p) => p.startsWith("src" + path.sep)).sort();
for (const p of sourcePages) {
  const f = path.join(dir, p), base = pathToFileURL(f);
  const refs = [...fs.readFileSync(f, "utf8").matchAll(/\s(?:href|src)="([^"]*)"/g)]
    .map((m) => [m[1], new URL(m[1].replace(/&amp;/g, "&"), base).href]);
  const bad = brokenLinks(refs);
  check(bad.length === 0, `${p}: broken links or resources: ${bad.join(", ")}`);
}
if (sourcesOnly) { // the planted-fault test of this check
  console.log(`${passed} passed, ${failures.length} failed`);
  process.exit(failures.length ? 1 : 0);
}

const browser = await chromium.launch({ executablePath: exe, args: ["--no-sandbox"] });
const refused = [];
async function newContext(opts = {}) {
  const ctx = await browser.newContext({ colorScheme: "light", ...opts });
  await ctx.route("**/*", (route) => {
    const u = route.request().url();
    if (inside(u)) return route.continue();
    refused.push(u);
    return route.abort("blockedbyclient");
  });
  return ctx;
}

const all = only || pages(dir).sort().filter((p) => !p.startsWith("src" + path.sep) || sourcePages.indexOf(p) % 10 === 0);
const plannerPages = [];
// SKIP_PAGES=1 goes straight to the whole-book checks (while writing them).
if (process.env.SKIP_PAGES === "1" && !only) all.length = 0;
else check(all.length > 0, "no page to open");
const ctx = await newContext();
const page = await ctx.newPage();
let current = "";
const errors = [];
page.on("console", (m) => { if (m.type() === "error") errors.push(`${current}: console: ${m.text()}`); });
page.on("pageerror", (e) => errors.push(`${current}: script error: ${e.message}`));
for (const p of all) {
  current = p;
  errors.length = 0;
  const before = refused.length;
  await page.goto(url(p), { waitUntil: "load" });
  // The planner builds its form once its module is compiled: wait for it,
  // so that the checks below (accessibility too) see the form.
  if (await page.$("div.planner")) {
    await page.waitForSelector("div.planner .planner-out > *", { timeout: 10000 }).catch(() => {});
    plannerPages.push(p);
  }
  const r = await page.evaluate(() => {
    const raw = [];
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => n.parentElement.closest("pre, code, math, script, style, textarea")
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
    });
    for (let n; (n = walk.nextNode());) {
      const m = n.textContent.match(/\$\$|\\\(|\\\[|\\frac|\\begin\{/);
      if (m) raw.push(n.textContent.trim().slice(0, 60));
    }
    for (const s of document.querySelectorAll("span.math, .katex-error"))
      if (!s.querySelector("math") || s.classList.contains("katex-error")) raw.push(s.textContent.slice(0, 60));
    return {
      raw,
      images: [...document.images].filter((i) => !i.complete || i.naturalWidth === 0).map((i) => i.getAttribute("src")),
      links: [...document.querySelectorAll("a[href]")].map((a) => [a.getAttribute("href"), a.href]),
    };
  });
  check(errors.length === 0, `${p}: ${errors.join("; ")}`);
  check(refused.length === before, `${p}: requests outside the book: ${refused.slice(before).join(" ")}`);
  check(r.raw.length === 0, `${p}: unrendered math: ${r.raw.join(" | ")}`);
  check(r.images.length === 0, `${p}: images not loaded: ${r.images.join(" ")}`);
  const bad = brokenLinks(r.links);
  check(bad.length === 0, `${p}: broken links: ${bad.join(", ")}`);
  if (!p.includes(path.sep)) {
    const v = await axeViolations(page);
    check(v.length === 0, `${p}: accessibility: ${v.join("; ")}`);
  }
}
console.log(`pages: ${all.length} opened` + (sourcePages.length ? ` (${sourcePages.length} source pages read, one in ten of them opened)` : ""));

// ---------------------------------------------------------------- the planner
// One vector through the form of the page's first planner: its arguments
// set in the form's controls, an input event, the figures read back from
// the cells' data-value. A value the form cannot hold (a choice out of
// range, as a refusal's vector has) goes to dtPlanner.plan, which the form
// calls, instead.
function replay(v) {
  const box = document.querySelector("div.planner"), f = box.querySelector("form");
  let viaForm = true;
  for (const [k, val] of Object.entries(v.args)) {
    const c = f.elements[k];
    if (!c) return { missing: k };
    if (c.type === "checkbox") c.checked = !!val;
    else if (c.tagName === "SELECT") {
      const o = [...c.options].find((o) => (k === "cluster" ? o.textContent : o.value) === String(val));
      if (!o) { viaForm = false; break; }
      c.value = o.value;
    } else c.value = String(val);
  }
  if (!viaForm) {
    const a = { ...v.args, cluster: window.dtPlanner.choices.cluster.indexOf(v.args.cluster) };
    return { viaForm, r: window.dtPlanner.plan(a) };
  }
  f.dispatchEvent(new Event("input", { bubbles: true }));
  const err = box.querySelector("[data-error]");
  if (err) return { viaForm, r: { error: err.dataset.error } };
  const cost = {};
  for (const td of box.querySelectorAll("[data-field]")) cost[td.dataset.field] = Number(td.dataset.value);
  return { viaForm, r: { cost } };
}

function differences(v, got) {
  if (v.error !== undefined || got.error !== undefined)
    return got.error === v.error ? [] : [`refusal: page ${JSON.stringify(got.error)}, native ${JSON.stringify(v.error)}`];
  const out = [];
  for (const k of new Set([...Object.keys(v.cost), ...Object.keys(got.cost)]))
    if (!Object.is(got.cost[k], v.cost[k])) out.push(`${k}: page ${got.cost[k]}, native ${v.cost[k]}`);
  return out;
}

const plannerExpected = only ? plannerPages : ["13-3d-parallel.html", "08-zero.html"];
if (plannerExpected.length) {
  const skipped = path.join(path.dirname(vectorsFile), "skipped");
  if (!fs.existsSync(vectorsFile)) {
    check(false, `planner: not built: ${fs.existsSync(skipped) ? fs.readFileSync(skipped, "utf8").trim()
      : `no ${vectorsFile}`} (make book skipped it; make deps-book installs clang's wasm32 target)`);
  } else {
    const vectors = JSON.parse(fs.readFileSync(vectorsFile, "utf8"));
    check(vectors.length > 0, `planner: no vectors in ${vectorsFile}`);
    for (const p of plannerExpected) {
      check(fs.readFileSync(path.join(dir, p), "utf8").includes('<div class="planner"'), `planner: ${p} holds no planner`);
      await page.goto(url(p), { waitUntil: "load" });
      const ready = await page.waitForSelector("div.planner .planner-out > *", { timeout: 10000 })
        .then(() => true, () => false);
      check(ready, `planner: ${p}: the form never showed a plan`);
      if (!ready) continue;
      let viaForm = 0, equal = 0;
      for (const v of vectors) {
        const g = await page.evaluate(replay, v);
        if (g.missing) { check(false, `planner: ${p}: the form has no field ${g.missing}`); break; }
        viaForm += g.viaForm ? 1 : 0;
        const d = differences(v, g.r);
        check(d.length === 0, `planner: ${p}: "${v.name}" differs from the native planner: ${d.slice(0, 4).join("; ")}`);
        equal += d.length === 0 ? 1 : 0;
      }
      console.log(`planner: ${p}: ${equal} of ${vectors.length} vectors equal to the native planner's ` +
        `(${viaForm} through the form, ${vectors.length - viaForm} through dtPlanner.plan)`);
    }
    // A person's look: the chapter's own example, as the page opens.
    const shots = path.join(dir, "screenshots");
    fs.mkdirSync(shots, { recursive: true });
    for (const p of plannerExpected) {
      await page.goto(url(p), { waitUntil: "load" });
      const box = await page.waitForSelector("div.planner .planner-out > *", { timeout: 10000 })
        .then(() => page.$("div.planner"), () => null);
      if (!box) continue;
      const f = path.join(shots, `planner-${p.replace(/\.html$/, "")}.png`);
      await box.screenshot({ path: f });
      console.log(`planner: screenshot ${f}`);
    }
  }
}

// ---------------------------------------------------------- the whole book
if (!only) {
  // The book is the students': no solution, hidden test or mutant in it.
  const leaked = pages(dir).filter((p) => /^src\/(solutions\/|tests\/[^/]*\/(hidden_|mutants\/))/.test(p));
  check(leaked.length === 0, `staff files in the book: ${leaked.join(" ")}`);

  // Hints: folded, open on a click; print emulation opens them all.
  await page.goto(url("03-hints.html"));
  const closed = await page.$$eval("details", (ds) => ds.map((d) => d.open));
  check(closed.length > 0 && closed.every((o) => !o), `03-hints.html: ${closed.length} details, all folded`);
  // A hint's text shows when its details is taller than its summary by
  // more than its padding: by a line of text at least (a folded one's text
  // is laid out, so its boxes cannot tell).
  const visible = () => page.$$eval("details", (ds) => ds.map((d) => {
    const cs = getComputedStyle(d);
    const box = ["paddingTop", "paddingBottom", "borderTopWidth", "borderBottomWidth"]
      .reduce((a, k) => a + parseFloat(cs[k]), 0);
    const text = d.getBoundingClientRect().height - box - d.querySelector("summary").getBoundingClientRect().height;
    return text >= 0.8 * (parseFloat(cs.lineHeight) || 16);
  }));
  check((await visible()).every((v) => !v), "03-hints.html: folded hints' text hidden");
  await page.click("details > summary");
  check(await page.$eval("details", (d) => d.open) && (await visible())[0],
    "03-hints.html: a click on a summary opens its hint");
  await page.click("details > summary");
  check(!(await page.$eval("details", (d) => d.open)), "03-hints.html: a second click folds it");
  for (const p of ["03-hints.html", "print.html"]) {
    await page.goto(url(p));
    await page.emulateMedia({ media: "print" });
    const v = await visible();
    check(v.length > 0 && v.every(Boolean), `${p}: print shows every hint (${v.filter(Boolean).length}/${v.length})`);
    await page.emulateMedia({ media: "screen" });
  }
  await page.goto(url("03-hints.html"));
  await page.evaluate(() => window.dispatchEvent(new Event("beforeprint")));
  check(await page.$$eval("details", (ds) => ds.every((d) => d.open)), "beforeprint opens every details");
  await page.evaluate(() => window.dispatchEvent(new Event("afterprint")));
  check(await page.$$eval("details", (ds) => ds.every((d) => !d.open)), "afterprint folds them again");

  // Search: a term, and the chapter its best section must be in.
  for (const [term, chapter] of [["bucketing", "03-"], ["Amdahl", "12-"], ["1F1B", "06-"], ["ZeRO stage", "08-"]]) {
    await page.goto(url("index.html"));
    await page.fill("#search", term);
    const first = await page.$eval("#results a", (a) => a.getAttribute("href")).catch(() => "(no result)");
    check(first.startsWith(chapter), `search "${term}": first result ${first}, expected chapter ${chapter}`);
    if (term === "bucketing") {
      fs.mkdirSync(path.join(dir, "screenshots"), { recursive: true });
      await page.screenshot({ path: path.join(dir, "screenshots", "search-bucketing.png") });
    }
    if (first.startsWith(chapter)) {
      await page.press("#search", "Enter");
      await page.waitForURL((u) => u.href.includes(chapter));
      check(true, "");
    }
  }

  // ←/→ turn pages.
  await page.goto(url("03-data-parallel.html"));
  await page.keyboard.press("ArrowRight");
  await page.waitForURL(/04-async\.html$/, { timeout: 5000 }).catch(() => {});
  check(page.url().endsWith("04-async.html"), `→ from 03 opens 04 (at ${page.url()})`);
  await page.keyboard.press("ArrowLeft");
  await page.waitForURL(/03-data-parallel\.html$/, { timeout: 5000 }).catch(() => {});
  check(page.url().endsWith("03-data-parallel.html"), `← from 04 opens 03 (at ${page.url()})`);

  // Dark mode: the system's, then the toggle's choice, kept across pages.
  const shots = path.join(dir, "screenshots");
  fs.mkdirSync(shots, { recursive: true });
  const lum = (p) => p.evaluate(() => {
    const [r, g, b] = getComputedStyle(document.documentElement).backgroundColor.match(/\d+/g).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  });
  await page.goto(url("03-data-parallel.html"));
  check((await lum(page)) > 0.8, "light system: light page");
  await page.screenshot({ path: path.join(shots, "03-data-parallel-light.png") });
  const dctx = await newContext({ colorScheme: "dark" });
  const dark = await dctx.newPage();
  await dark.goto(url("03-data-parallel.html"));
  check((await lum(dark)) < 0.2, "dark system: dark page");
  await dark.screenshot({ path: path.join(shots, "03-data-parallel-dark.png") });
  await dark.goto(url("03-data-parallel.html#sec-2"));
  await dark.screenshot({ path: path.join(shots, "03-data-parallel-math-dark.png") });
  for (const p of ["03-data-parallel.html", "03-hints.html", "src/labs/03-data-parallel/ddp.h.html", "index.html"]) {
    await dark.goto(url(p));
    const v = await axeViolations(dark);
    check(v.length === 0, `${p} (dark): accessibility: ${v.join("; ")}`);
  }
  await dark.goto(url("03-data-parallel.html#sec-2"));
  await dark.click("#theme");
  check((await lum(dark)) > 0.8, "the toggle turns a dark page light");
  await dark.goto(url("04-async.html"));
  check((await lum(dark)) > 0.8, "the toggle's choice persists to the next page");
  await dark.click("#theme");
  check((await lum(dark)) < 0.2, "and toggles back");
  await dctx.close();
  await page.goto(url("03-hints.html"));
  await page.emulateMedia({ media: "print" });
  await page.screenshot({ path: path.join(shots, "03-hints-print.png"), fullPage: false });
  await page.emulateMedia({ media: "screen" });
  console.log(`screenshots: ${fs.readdirSync(shots).map((f) => path.join(shots, f)).join(" ")}`);
}
await browser.close();
for (const f of failures) console.error(`test-book: ${f}`);
console.log(`${passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
