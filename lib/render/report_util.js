/* report_util.js - the arithmetic of the report page's script, apart from the page so it is
 * unit-tested on its own (tests/js/report_util.test.js, with node): units, axis steps and
 * labels, per-pixel downsampling, zoom. Where the C side (lib/render/axis.c,
 * lib/base/units.c) computes the same figure for the static page, this copy gives the same
 * text for every value and carries the same guards (tests/data/axis_cases.json is the one
 * table both test suites read). Embedded before report.js in the page's one script element. */
var ODU = (function () {
  'use strict';
  var UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];

  /* "512 B", "1.50 GiB": as od_format_iec (two decimals from KiB up, up to EiB). */
  function iec(v) {
    if (!(v >= 0)) v = 0;
    if (v < 1024) return String(Math.round(v)) + ' B';
    var i = 0;
    while (v >= 1024 && i < 6) { v /= 1024; i++; }
    return v.toFixed(2) + ' ' + UNITS[i];
  }

  /* A duration in microseconds: "12 us", "3.500 ms", "1.250 s". */
  function secs(us) {
    var a = Math.abs(us);
    return a >= 1e6 ? (us / 1e6).toFixed(3) + ' s' : a >= 1e3 ? (us / 1e3).toFixed(3) + ' ms' : Math.round(us) + ' us';
  }

  /* A 1-2-5 step for about `ticks` gridlines over span (od_nice_step). */
  function nice(span, ticks) {
    if (!(span > 0) || !isFinite(span) || !(ticks > 0)) return 1;
    var raw = span / ticks, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  /* Byte-axis labels: the largest unit in which v needs at most two decimals exactly
   * ("512 MiB", "1.25 GiB", "1152 MiB"), as od_tick_label. Exact arithmetic needs v within
   * 2^53 (a double's integers); beyond, the label is the plain byte count, as C gives it
   * when v * 100 overflows 64 bits. */
  function tickLabel(v) {
    if (v === 0) return '0';
    if (!(v > 0) || v > Number.MAX_SAFE_INTEGER / 100 || v !== Math.floor(v)) return String(v) + ' B';
    for (var i = 5; i >= 0; i--) {
      var unit = Math.pow(1024, i);
      if (v < unit || (v * 100) % unit !== 0) continue;
      var dec = v % unit === 0 ? 0 : (v * 10) % unit === 0 ? 1 : 2;
      return (v / unit).toFixed(dec) + ' ' + UNITS[i];
    }
    return v + ' B';
  }

  /* A power-of-two byte step for about `ticks` gridlines up to max (od_byte_step): the
   * smallest 2^k with floor(max / 2^k) <= ticks, as C's integer division; it stops at 2^62
   * as C does, so an infinite or absurd max cannot loop forever. */
  function byteStep(max, ticks) {
    var step = 1;
    if (!(ticks > 0)) return step;
    while (step < 4611686018427387904 && Math.floor(max / step) > ticks) step *= 2;
    return step;
  }

  /* The first index whose value is >= v in an ascending array. */
  function lower(arr, v) {
    var lo = 0, hi = arr.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (arr[m] < v) lo = m + 1; else hi = m; }
    return lo;
  }

  /* The points drawn for the view [a, b] of a series at times T (ascending) with live
   * bytes L (and reserved R, or null), pw pixels wide: every point when there are at most
   * two per pixel, else per pixel the point of the most live bytes, and the most reserved
   * bytes in that pixel - so no peak is lost at any zoom. Returns {idx, rm}. */
  function downsample(T, L, R, a, b, pw) {
    var n = T.length, lo = Math.max(0, lower(T, a) - 1), hi = Math.min(n, lower(T, b) + 1), idx = [], rm = [];
    var bucket = null, best = -1, rb = 0, j;
    for (j = lo; j < hi; j++) {
      var k = hi - lo <= 2 * pw ? j : Math.floor((T[j] - a) / (b - a) * pw);
      if (k !== bucket) {
        if (best >= 0) { idx.push(best); rm.push(rb); }
        bucket = k; best = j; rb = 0;
      }
      if (L[j] > L[best]) best = j;
      if (R && R[j] > rb) rb = R[j];
    }
    if (best >= 0) { idx.push(best); rm.push(rb); }
    return {idx: idx, rm: rm};
  }

  /* The view [a, a + span] that a request [a, b] becomes inside [t0, t1]: at least minSpan
   * wide, never wider than the whole, moved (not shrunk) to stay inside. */
  function clampView(a, b, t0, t1, minSpan) {
    var span = Math.min(t1 - t0, Math.max(b - a, minSpan));
    if (a < t0) a = t0;
    if (a + span > t1) a = t1 - span;
    return {a: a, b: a + span};
  }

  /* Zoom the view [a, b] around time t by factor f (< 1 zooms in): t stays under the pointer. */
  function zoomAround(a, b, t, f) {
    return {a: t - (t - a) * f, b: t + (b - t) * f};
  }

  /* The zoom factor of a wheel event's deltaY (lines count as 40 px), bounded per event. */
  function wheelFactor(deltaY, deltaMode) {
    var dy = deltaMode === 1 ? deltaY * 40 : deltaY;
    return Math.exp(Math.max(-300, Math.min(300, dy)) * 0.002);
  }

  return {UNITS: UNITS, iec: iec, secs: secs, nice: nice, tickLabel: tickLabel, byteStep: byteStep, lower: lower,
          downsample: downsample, clampView: clampView, zoomAround: zoomAround, wheelFactor: wheelFactor};
})();
if (typeof module === 'object' && module.exports) module.exports = ODU;
