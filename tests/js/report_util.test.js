/* report_util.test.js - the page script's arithmetic (lib/render/report_util.js), with node's
 * own test runner (node --test tests/js): labels and steps against the table the C test reads
 * too (tests/data/report/axis_cases.json), downsampling, view clamping and zoom. */
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const ODU = require('../../lib/render/report_util.js');

const root = path.join(__dirname, '..', '..');
const cases = JSON.parse(fs.readFileSync(path.join(root, 'tests/data/report/axis_cases.json'), 'utf8'));

test('tick labels match the C table', () => {
  for (const [v, want] of cases.tick_label) assert.strictEqual(ODU.tickLabel(v), want, String(v));
});

test('byte steps match the C table and never loop on an absurd max', () => {
  for (const [max, ticks, want] of cases.byte_step) assert.strictEqual(ODU.byteStep(max, ticks), want, `${max}/${ticks}`);
  assert.strictEqual(ODU.byteStep(Infinity, 5), 4611686018427387904);
  assert.strictEqual(ODU.byteStep(NaN, 5), 1);
});

test('nice steps match the C table', () => {
  for (const [span, ticks, want] of cases.nice_step) {
    const got = ODU.nice(span, ticks);
    assert.ok(Math.abs(got - want) <= 1e-12 * want, `${span}/${ticks}: ${got} vs ${want}`);
  }
  assert.strictEqual(ODU.nice(Infinity, 8), 1);
});

test('iec text matches od_format_iec', () => {
  for (const [v, want] of cases.iec) assert.strictEqual(ODU.iec(v), want, String(v));
  assert.strictEqual(ODU.iec(-1), '0 B');
});

test('downsampling keeps every point when there are few, and each pixel\'s peak', () => {
  const T = [0, 1, 2, 3], L = [5, 9, 1, 4];
  assert.deepStrictEqual(ODU.downsample(T, L, null, 0, 3, 100).idx, [0, 1, 2, 3]);
  /* 1000 points over 10 pixels: one point per pixel, the one of most live bytes */
  const n = 1000, T2 = [], L2 = [], R2 = [];
  for (let i = 0; i < n; i++) { T2.push(i); L2.push(i === 437 ? 1e9 : i % 7); R2.push(i === 512 ? 2e9 : 1); }
  const s = ODU.downsample(T2, L2, R2, 0, n - 1, 10);
  assert.ok(s.idx.length <= 11, `${s.idx.length} points for 10 pixels`);
  assert.ok(s.idx.includes(437), 'the live peak survives');
  assert.strictEqual(Math.max(...s.rm), 2e9, 'the reserved peak survives');
  /* a zoomed view draws only its own range, plus one point either side */
  const z = ODU.downsample(T2, L2, null, 100.5, 109.5, 960);
  assert.deepStrictEqual([z.idx[0], z.idx[z.idx.length - 1]], [100, 110]);
});

test('the view stays inside the trace, at least minSpan wide', () => {
  assert.deepStrictEqual(ODU.clampView(-50, 50, 0, 1000, 5), {a: 0, b: 100});
  assert.deepStrictEqual(ODU.clampView(980, 1100, 0, 1000, 5), {a: 880, b: 1000});
  assert.deepStrictEqual(ODU.clampView(10, 11, 0, 1000, 5), {a: 10, b: 15});
  assert.deepStrictEqual(ODU.clampView(-1e9, 1e9, 0, 1000, 5), {a: 0, b: 1000});
});

test('zooming keeps the time under the pointer', () => {
  const z = ODU.zoomAround(0, 1000, 250, 0.5);
  assert.deepStrictEqual(z, {a: 125, b: 625});
  assert.ok(ODU.wheelFactor(-100, 0) < 1 && ODU.wheelFactor(100, 0) > 1);
  assert.strictEqual(ODU.wheelFactor(1e9, 0), ODU.wheelFactor(300, 0), 'one wheel event zooms a bounded amount');
  assert.strictEqual(ODU.wheelFactor(3, 1), ODU.wheelFactor(120, 0), 'a line counts as 40 px');
});
