// report_test.js PAGES_DIR SHOTS_DIR OOMDOC SNAPSHOTS_DIR - drives headless Chromium (puppeteer-core over the
// system chromium) through `oomdoc report` pages made by tests/suites/report_browser.sh:
// hover, pin, zoom and pan the timeline; the allocator-state slider at the peak against
// `oomdoc snapshot --json`; the page with JavaScript disabled. Every
// request the pages make is refused and counted: there must be none. Screenshots of each
// state go to SHOTS_DIR. Prints "ok NAME" / "FAIL NAME: why" lines, exits 1 on a failure.
'use strict';
const fs = require('fs');
const path = require('path');
const puppeteer = require('puppeteer-core');

const [pagesDir, shotsDir, oomdoc, fixtures] = process.argv.slice(2);
const {execFileSync} = require('child_process');
const CHROME = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
let failed = 0;
function check(name, cond, why) {
  if (cond) console.log('ok ' + name);
  else { failed++; console.log('FAIL ' + name + ': ' + why); }
}
const FRAME = /^\S+\.py:\d+:\S+$/;

async function open(browser, name, opts = {}) {
  const page = await browser.newPage();
  await page.setViewport({width: 1100, height: 1400});
  page.requests = [];
  await page.setRequestInterception(true);
  const url = 'file://' + path.resolve(pagesDir, name + '.html');
  page.on('request', (r) => {
    if (r.url() === url) { r.continue(); return; }
    page.requests.push(r.url());
    r.abort();
  });
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(String(e)));
  if (opts.noScript) await page.setJavaScriptEnabled(false);
  const t0 = Date.now();
  await page.goto(url, {waitUntil: 'load'});
  if (!opts.noScript) await page.waitForSelector('html[data-oomdoc="ready"]', {timeout: 10000});
  page.readyMs = Date.now() - t0;
  return page;
}

// The timeline: the first <svg> larger than 300 x 120 px in document order, and where its
// plot area and peak lie on the screen.
async function timeline(page, scroll) {
  return page.evaluate((scroll) => {
    const svg = [...document.querySelectorAll('svg')].find((s) => {
      const r = s.getBoundingClientRect();
      return r.width > 300 && r.height > 120;
    });
    if (scroll) svg.scrollIntoView({block: 'center'});
    const hit = svg.querySelector('rect.hit'), peak = svg.querySelector('line.peak');
    const b = (e) => { const r = e.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; };
    return {id: svg.id, plot: hit ? b(hit) : null, peak: peak ? b(peak) : null,
            texts: [...svg.querySelectorAll('text')].map((t) => t.textContent),
            ticks: [...svg.querySelectorAll('g.xax text')].map((t) => t.textContent)};
  }, !!scroll);
}
const tipText = (page) => page.evaluate(() => {
  const t = document.querySelector('.od-tip');
  if (!t || t.hidden) return null;
  const r = t.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && getComputedStyle(t).visibility !== 'hidden' ? t.innerText : null;
});
const settle = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

// The allocator-state slider: moved to the peak entry, the map shows the blocks live
// there, which `oomdoc snapshot --json` counts in its peak sites (and their bytes).
async function slider(browser, name, snapshot, tag) {
  const snap = JSON.parse(execFileSync(oomdoc, ['snapshot', '--json', snapshot], {encoding: 'utf8'})).devices[0];
  const want = {entry: snap.trace.peak_allocated_index, bytes: snap.trace.peak_allocated_bytes,
                blocks: snap.peak_sites.reduce((n, s) => n + s.count, 0) + snap.peak_sites_other.count};
  const page = await open(browser, name);
  const got = await page.evaluate(async () => {
    const S = window.oomdoc.states[0], sl = S.slider;
    sl.scrollIntoView({block: 'center'});
    sl.value = 0;
    sl.dispatchEvent(new Event('input'));
    const first = {entry: S.entry, blocks: S.blocks};
    const r = sl.getBoundingClientRect();
    return {first, n: S.S.samples.length, peakSample: S.peakSample, rect: {x: r.left, y: r.top, w: r.width, h: r.height}};
  });
  await page.screenshot({path: path.join(shotsDir, tag + '_state_first.png')});
  // Move the slider with the keyboard to the peak's sample, as a user would.
  await page.focus('input.od-slider');
  for (let i = 0; i < got.peakSample; i++) await page.keyboard.press('ArrowRight');
  const info = await page.evaluate(() => {
    const e = document.querySelector('.od-state-info');
    return {entry: Number(e.dataset.entry), blocks: Number(e.dataset.blocks), busy: Number(e.dataset.busy), text: e.textContent,
            stranded: document.querySelectorAll('.od-state-bar ~ svg rect.x').length,
            rects: document.querySelectorAll('.od-state-bar ~ svg rect').length};
  });
  console.log(tag + ' state at the peak: ' + info.text);
  check(tag + ' slider reaches the peak entry', info.entry === want.entry, info.entry + ' vs ' + want.entry);
  check(tag + ' block count at the peak is oomdoc snapshot\'s', info.blocks === want.blocks, info.blocks + ' vs ' + want.blocks);
  check(tag + ' busy bytes at the peak are oomdoc snapshot\'s', info.busy === want.bytes, info.busy + ' vs ' + want.bytes);
  check(tag + ' slider moves the state', got.first.entry === 0 && got.n > 2, JSON.stringify(got.first));
  check(tag + ' stranded memory marked', info.stranded > 0 && info.rects > 10, JSON.stringify(info));
  await page.screenshot({path: path.join(shotsDir, tag + '_state_peak.png')});
  // The slider's value is the trace entry: set to the peak's entry, it shows the peak.
  const direct = await page.evaluate((entry) => {
    const S = window.oomdoc.states[0], sl = S.slider;
    sl.value = 0; sl.dispatchEvent(new Event('input'));
    sl.value = entry; sl.dispatchEvent(new Event('input'));
    return {value: Number(sl.value), max: Number(sl.max), entry: S.entry, blocks: S.blocks};
  }, want.entry);
  check(tag + ' slider value is the entry', direct.value === want.entry && direct.entry === want.entry &&
        direct.blocks === want.blocks && direct.max >= want.entry, JSON.stringify(direct));
  check(tag + ' no requests (slider)', page.requests.length === 0, page.requests.join(' '));
  check(tag + ' no script errors (slider)', page.errors.length === 0, page.errors.join('; '));
  await page.close();
}

// The icicle of live bytes at the peak: its root holds the peak's live bytes, a click
// zooms into a frame, "by category" puts categories on top.
async function icicle(browser, name, tag) {
  const page = await open(browser, name);
  const first = await page.evaluate(() => {
    const I = window.oomdoc.icicles[0], D = window.oomdoc.timelines[0].D;
    I.svg.scrollIntoView({block: 'center'});
    const root = I.root();
    return {rootBytes: root.bytes, peakb: D.peakb, nodes: I.svg.querySelectorAll('g.node').length,
            crumb: document.querySelector('.od-crumb').textContent};
  });
  check(tag + ' icicle root holds the peak\'s live bytes', first.rootBytes === first.peakb, first.rootBytes + ' vs ' + first.peakb);
  check(tag + ' icicle drawn', first.nodes >= 10, first.nodes + ' nodes');
  await page.screenshot({path: path.join(shotsDir, tag + '_icicle.png')});
  // Click the widest node of the third row: the icicle zooms into it.
  const box = await page.evaluate(() => {
    const I = window.oomdoc.icicles[0];
    const rects = [...I.svg.querySelectorAll('g.node > rect')].filter((r) => Number(r.getAttribute('y')) === 2 + 2 * 18);
    rects.sort((a, b) => b.getBoundingClientRect().width - a.getBoundingClientRect().width);
    const r = rects[0].getBoundingClientRect();
    return {x: r.left + Math.min(r.width / 2, 30), y: r.top + r.height / 2, title: rects[0].parentNode.querySelector('title').textContent};
  });
  await page.mouse.click(box.x, box.y);
  await settle(page);
  const zoomed = await page.evaluate(() => ({crumb: document.querySelector('.od-crumb').textContent,
    focus: window.oomdoc.icicles[0].focus.name, depth: window.oomdoc.icicles[0].focus.parent ? 1 : 0}));
  check(tag + ' icicle click zooms into the frame', zoomed.focus === box.title.split('\n')[0] && zoomed.crumb !== first.crumb,
        JSON.stringify(zoomed) + ' clicked ' + box.title.split('\n')[0]);
  await page.screenshot({path: path.join(shotsDir, tag + '_icicle_zoomed.png')});
  const cats = await page.evaluate(() => {
    const I = window.oomdoc.icicles[0];
    I.set('cat');
    return I.root().list.map((n) => n.name);
  });
  check(tag + ' icicle by category', cats.length >= 1 && cats.every((c) => /^[a-z_]+$/.test(c)), cats.join());
  await page.screenshot({path: path.join(shotsDir, tag + '_icicle_category.png')});
  check(tag + ' no script errors (icicle)', page.errors.length === 0, page.errors.join('; '));
  await page.close();
}

// An evidence link: the first linked evidence item (snap_train_oom: the OOM at entry 500)
// zooms the timeline to its moment and highlights it.
async function evidenceLink(browser, name, tag) {
  const page = await open(browser, name);
  const ev = await page.evaluate(() => {
    const e = document.querySelector('.od-ev.od-link');
    if (!e) return null;
    e.scrollIntoView({block: 'center'});
    // the first line's box: a span that wraps has no text at its bounding box's middle
    const r = e.getClientRects()[0];
    return {x: r.left + 10, y: r.top + r.height / 2, text: e.textContent, a: Number(e.dataset.a), b: Number(e.dataset.b)};
  });
  check(tag + ' evidence items linked', ev, 'no linked evidence item');
  if (!ev) return page.close();
  await page.mouse.click(ev.x, ev.y);
  await settle(page);
  const got = await page.evaluate(() => {
    const T = window.oomdoc.timelines[0], m = T.svg.querySelector('rect.mark'), r = T.svg.getBoundingClientRect();
    return {view: [T.view.a, T.view.b], full: [T.D.t0, T.D.t1], mark: m ? m.getBoundingClientRect().width : 0,
            marked: T.marked, onScreen: r.top < window.innerHeight && r.bottom > 0};
  });
  check(tag + ' evidence link highlights its moment', got.mark > 0 && got.marked && got.marked.a === ev.a && got.marked.b === ev.b &&
        got.view[0] <= ev.a && got.view[1] >= ev.b && got.view[1] - got.view[0] < (got.full[1] - got.full[0]) * 0.5 && got.onScreen,
        JSON.stringify(got) + ' for ' + ev.text);
  console.log(tag + ' evidence link: "' + ev.text.slice(0, 90) + '..." -> +' + ((ev.a - got.full[0]) / 1e6).toFixed(6) + ' s');
  await page.screenshot({path: path.join(shotsDir, tag + '_evidence.png')});
  // An evidence item about free blocks links to the segment map at the end: the largest
  // free run (and the stranded runs) outlined there.
  const blk = await page.evaluate(() => {
    const e = document.querySelector('.od-ev.od-link[data-map="end"]');
    if (!e) return null;
    e.click();
    const fig = document.querySelector('figure[data-map="end"]'), r = fig.getBoundingClientRect();
    const flash = [...fig.querySelectorAll('rect.flash')];
    const widest = Math.max(...[...fig.querySelectorAll('rect.x, rect.f')].map((x) => Number(x.getAttribute('width'))));
    return {n: flash.length, widest: flash.some((x) => Number(x.getAttribute('width')) === widest), onScreen: r.top < innerHeight && r.bottom > 0};
  });
  check(tag + ' evidence about free blocks marks them in the end map', blk && blk.n > 0 && blk.widest && blk.onScreen, JSON.stringify(blk));
  await page.screenshot({path: path.join(shotsDir, tag + '_evidence_blocks.png')});
  check(tag + ' no script errors (evidence)', page.errors.length === 0, page.errors.join('; '));
  await page.close();
}

// Compare: two snapshots give a compare section with both timelines on one axis and the
// change by site and by category; the first large svg is still the first timeline.
async function compare(browser, name) {
  const page = await open(browser, name);
  const got = await page.evaluate(() => {
    const sec = document.querySelector('section.compare'), svg = sec && sec.querySelector('svg[id^="compare-"]');
    if (svg) svg.scrollIntoView({block: 'center'});
    const lines = svg ? [...svg.querySelectorAll('path.ml')].filter((p) => p.getBBox().width > 100).length : 0;
    const first = [...document.querySelectorAll('svg')].find((s) => { const r = s.getBoundingClientRect(); return r.width > 300 && r.height > 120; });
    return {lines, tables: sec ? sec.querySelectorAll('table').length : 0, first: first.id,
            heads: sec ? [...sec.querySelectorAll('h3')].map((h) => h.textContent) : []};
  });
  check('compare: both timelines on one axis', got.lines === 2, JSON.stringify(got));
  check('compare: by site and by category', got.tables === 3 && got.heads.includes('Live at the peak, by category'), JSON.stringify(got));
  check('compare: the first large svg is a timeline', /^timeline-/.test(got.first), got.first);
  await page.screenshot({path: path.join(shotsDir, 'compare.png')});
  check('compare: no requests', page.requests.length === 0, page.requests.join(' '));
  check('compare: no script errors', page.errors.length === 0, page.errors.join('; '));
  await page.close();
}

// Per stream and pool: on snap_cudagraph the last state, filtered to the CUDA graph's
// pool, is what `oomdoc snapshot` says that pool holds at the end (3 segments, 36 MiB).
async function pools(browser, name) {
  const page = await open(browser, name);
  const got = await page.evaluate(() => {
    const S = window.oomdoc.states[0], sel = document.querySelector('select.od-home');
    if (!sel) return null;
    S.slider.scrollIntoView({block: 'center'});
    S.show(S.S.samples.length - 1);
    const opt = [...sel.options].find((o) => /graph pool/.test(o.textContent));
    sel.value = opt.value;
    sel.dispatchEvent(new Event('change'));
    return {text: document.querySelector('.od-state-info').textContent, options: [...sel.options].map((o) => o.textContent),
            dim: S.svg.querySelectorAll('g.dim').length};
  });
  check('pools: streams and pools offered', got && got.options.length >= 3, JSON.stringify(got));
  check('pools: the graph pool at the end as oomdoc snapshot says', got && /graph pool \(1, 0\): 3 segments, 36\.00 MiB reserved/.test(got.text) &&
        got.dim > 0, JSON.stringify(got));
  await page.screenshot({path: path.join(shotsDir, 'cudagraph_pool.png')});
  check('pools: no script errors', page.errors.length === 0, page.errors.join('; '));
  await page.close();
}

async function interact(browser, name, site, tag) {
  const page = await open(browser, name);
  check(tag + ' interactive in <= 2 s', page.readyMs <= 2000, page.readyMs + ' ms');
  console.log(tag + ': ready in ' + page.readyMs + ' ms');
  const tl = await timeline(page, true);
  check(tag + ' timeline first', /^timeline-/.test(tl.id) && tl.plot && tl.peak, 'first large svg is ' + tl.id);
  if (!tl.plot || !tl.peak) return page.close();
  // Hover at the peak, halfway up the memory live there.
  const peakb = await page.evaluate(() => { const D = window.oomdoc.timelines[0].D; return D.peakb / D.ymax; });
  const x = tl.peak.x + tl.peak.w / 2, y = tl.plot.y + tl.plot.h * (1 - peakb / 2);
  await page.mouse.move(x, y);
  await settle(page);
  const tip = await tipText(page);
  const frames = tip ? tip.split('\n').filter((l) => FRAME.test(l.trim())) : [];
  check(tag + ' hover tooltip lists frames', frames.length >= 3, 'tooltip: ' + JSON.stringify(tip));
  check(tag + ' hover shows size, category and lifetime', tip && /allocation of [0-9.]+ [KMGT]?i?B/.test(tip) &&
        /lifetime: /.test(tip), JSON.stringify(tip));
  check(tag + ' hovered allocation made at ' + site, frames.some((l) => l.includes(site)), frames.join(' | '));
  // The tooltip's frames are the hovered allocation's own stack, in the embedded data.
  const own = await page.evaluate(() => {
    const T = window.oomdoc.timelines[0], D = T.D, q = T.hovered;
    return q >= 0 && D.ak[q] >= 0 ? D.st[D.ak[q]].map((f) => D.fr[f]) : [];
  });
  check(tag + ' tooltip frames are the allocation\'s stack', own.length && own.slice(0, 3).join('|') ===
        frames.slice(0, 3).map((l) => l.trim()).join('|'), own.slice(0, 3) + ' vs ' + frames.slice(0, 3));
  await page.screenshot({path: path.join(shotsDir, tag + '_hover.png')});
  // Click pins it: its whole lifetime is highlighted.
  await page.mouse.click(x, y);
  await settle(page);
  const pinned = await page.evaluate(() => {
    const T = window.oomdoc.timelines[0], r = document.querySelector('svg rect.pin');
    return {q: T.pinned, w: r ? r.getBoundingClientRect().width : 0, range: T.pinned >= 0 ? T.range(T.pinned) : null};
  });
  check(tag + ' click pins the allocation', pinned.q >= 0 && pinned.w > 0, JSON.stringify(pinned));
  await page.mouse.move(x + 200, y - 50);
  const stillTip = await tipText(page);
  check(tag + ' pinned tooltip stays', stillTip && stillTip.includes(frames[0] ? frames[0].trim() : '?'), JSON.stringify(stillTip));
  await page.screenshot({path: path.join(shotsDir, tag + '_pinned.png')});
  await page.keyboard.press('Escape');
  // Wheel zoom at the peak: the tick labels change.
  const before = (await timeline(page)).ticks;
  await page.mouse.move(x, y);
  for (let i = 0; i < 4; i++) await page.mouse.wheel({deltaY: -300});
  await settle(page);
  const zoomed = await timeline(page);
  const view = await page.evaluate(() => { const T = window.oomdoc.timelines[0]; return [T.view.a, T.view.b, T.D.t0, T.D.t1]; });
  check(tag + ' wheel zooms (tick labels change)', zoomed.ticks.join() !== before.join() && zoomed.ticks.length >= 3,
        before.join() + ' -> ' + zoomed.ticks.join());
  check(tag + ' zoomed range narrower and around the peak', view[1] - view[0] < (view[3] - view[2]) * 0.5,
        JSON.stringify(view));
  const zoomedTip = await (async () => { await page.mouse.move(x, y + 1); await settle(page); return tipText(page); })();
  check(tag + ' hover still works zoomed', zoomedTip && zoomedTip.split('\n').filter((l) => FRAME.test(l.trim())).length >= 3,
        JSON.stringify(zoomedTip));
  await page.screenshot({path: path.join(shotsDir, tag + '_zoomed.png')});
  // Drag pans.
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + 150, y, {steps: 5});
  await page.mouse.up();
  await settle(page);
  const panned = await timeline(page);
  const view2 = await page.evaluate(() => { const T = window.oomdoc.timelines[0]; return [T.view.a, T.view.b]; });
  check(tag + ' drag pans', panned.ticks.join() !== zoomed.ticks.join() && view2[0] < view[0], view + ' -> ' + view2);
  // Above the live bytes (the plot's top left corner): the topmost allocation live then.
  await page.evaluate(() => window.oomdoc.timelines[0].reset());
  await settle(page);
  const tl2 = await timeline(page, true);
  await page.mouse.move(tl2.plot.x + tl2.plot.w * 0.5, tl2.plot.y + 5);
  await settle(page);
  const aboveTip = await tipText(page);
  check(tag + ' above the live bytes: the topmost allocation', aboveTip && /topmost allocation/.test(aboveTip) &&
        aboveTip.split('\n').some((l) => FRAME.test(l.trim())), JSON.stringify(aboveTip));
  // Smooth: a zoom step's redraw (downsampling, paths, ticks) and a hover take milliseconds.
  const cost = await page.evaluate(() => {
    const T = window.oomdoc.timelines[0], D = T.D, t0 = performance.now();
    for (let i = 1; i <= 20; i++) {
      const span = (D.t1 - D.t0) / Math.pow(1.5, i), mid = D.peak;
      T.setView(mid - span / 2, mid + span / 2);
      T.redrawNow();
    }
    const zoom = (performance.now() - t0) / 20;
    T.reset(); T.redrawNow();
    const svg = T.svg, r = svg.getBoundingClientRect(), t1 = performance.now();
    for (let i = 0; i < 50; i++)
      svg.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + r.width * (0.1 + 0.016 * i), clientY: r.top + r.height * 0.5, bubbles: true}));
    return {zoom, hover: (performance.now() - t1) / 50};
  });
  console.log(tag + ': a zoom step redraws in ' + cost.zoom.toFixed(1) + ' ms, a hover in ' + cost.hover.toFixed(2) + ' ms');
  check(tag + ' zoom and hover are smooth', cost.zoom < 50 && cost.hover < 20, JSON.stringify(cost));
  // A wheel event dispatched on the <svg> itself (as a script would) zooms too.
  const synthetic = await page.evaluate(() => new Promise((done) => {
    const T = window.oomdoc.timelines[0], svg = T.svg, r = svg.getBoundingClientRect();
    T.reset();
    requestAnimationFrame(() => {
      const before = [...svg.querySelectorAll('text')].map((t) => t.textContent).join('|');
      svg.dispatchEvent(new WheelEvent('wheel', {deltaY: -500, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2,
                                                 bubbles: true, cancelable: true}));
      requestAnimationFrame(() => done(before !== [...svg.querySelectorAll('text')].map((t) => t.textContent).join('|')));
    });
  }));
  check(tag + ' a wheel event on the svg zooms', synthetic, 'labels unchanged');
  check(tag + ' no script errors', page.errors.length === 0, page.errors.join('; '));
  check(tag + ' no requests', page.requests.length === 0, page.requests.join(' '));
  await page.close();
}

(async () => {
  const browser = await puppeteer.launch({
    executablePath: CHROME, headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
           '--disable-sync', '--no-first-run', '--proxy-server=http://127.0.0.1:9', '--host-resolver-rules=MAP * ~NOTFOUND'],
  });
  try {
    await interact(browser, 'snap_train_oom', 'train.py:96:train_step', 'snap_train_oom');
    await interact(browser, 'long', 'train.py', 'long');
    await evidenceLink(browser, 'snap_train_oom', 'snap_train_oom');
    if (fs.existsSync(path.join(pagesDir, 'compare.html'))) await compare(browser, 'compare');
    if (fs.existsSync(path.join(pagesDir, 'cudagraph.html'))) await pools(browser, 'cudagraph');
    await icicle(browser, 'snap_train_oom', 'snap_train_oom');
    await icicle(browser, 'long', 'long');
    await slider(browser, 'snap_train_oom', path.join(fixtures, 'snap_train_oom.pickle'), 'snap_train_oom');
    await slider(browser, 'long', path.join(fixtures, 'snap_train_long.pickle.gz'), 'long');
    // With JavaScript disabled: the static plots are the page.
    const page = await open(browser, 'snap_train_oom', {noScript: true});
    const st = await page.evaluate(() => ({
      svgs: [...document.querySelectorAll('svg')].filter((s) => s.getBoundingClientRect().width > 300).length,
      paths: document.querySelectorAll('svg[id^="timeline-"] path').length,
      bar: document.querySelectorAll('.od-bar').length,
    }));
    check('no-script page keeps its plots', st.svgs >= 3 && st.paths >= 3 && st.bar === 0, JSON.stringify(st));
    await page.screenshot({path: path.join(shotsDir, 'snap_train_oom_noscript.png'), fullPage: true});
    check('no-script no requests', page.requests.length === 0, page.requests.join(' '));
    await page.close();
    // Dark mode: the tooltip over the timeline follows the page's colours.
    const dark = await open(browser, 'snap_train_oom');
    await dark.emulateMediaFeatures([{name: 'prefers-color-scheme', value: 'dark'}]);
    const tl = await timeline(dark, true);
    await dark.mouse.move(tl.peak.x, tl.plot.y + tl.plot.h * 0.8);
    await settle(dark);
    const bg = await dark.evaluate(() => getComputedStyle(document.querySelector('.od-tip')).backgroundColor);
    check('dark mode tooltip', bg === 'rgb(13, 17, 23)', bg);
    await dark.screenshot({path: path.join(shotsDir, 'snap_train_oom_dark_hover.png')});
    await dark.close();
  } catch (e) {
    failed++;
    console.log('FAIL report_test: ' + (e && e.stack || e));
  } finally {
    await browser.close();
  }
  console.log(failed ? 'report_test: ' + failed + ' failed' : 'report_test: ok');
  process.exit(failed ? 1 : 0);
})();
