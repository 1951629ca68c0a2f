/* report.js - the report page's script. It only enhances what the static page draws
 * (lib/render/report.c), reading the JSON blocks written beside the plots:
 *   Timeline  script.od-timeline beside a timeline <svg>: redraws its paths and x ticks for
 *             the zoomed range (per-pixel downsampling), moves the peak / OOM marks, hover
 *             tooltip (.od-tip) with the allocation under the pointer, pin, evidence ranges
 *   State     script.od-state beside the segment map at the peak: the slider over entries,
 *             the stream / pool menu, the map redrawn as segment_map() draws it
 *   Icicle    live at the peak by stack or by category, from the timeline's lifetimes
 *   evidence  .od-ev items: a moment of a timeline, or the segment map at the end
 * window.oomdoc lists them (for tests); <html data-oomdoc="ready"> once all are built.
 * Its arithmetic is report_util.js (ODU), embedded before it. */
(function () {
'use strict';
var iec = ODU.iec, secs = ODU.secs, nice = ODU.nice, lower = ODU.lower, tickLabel = ODU.tickLabel,
    byteStep = ODU.byteStep;
function el(svg, name, attrs, parent) {
  var e = document.createElementNS(svg.namespaceURI, name);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function div(cls, text, parent) {
  var d = document.createElement('div');
  if (cls) d.className = cls;
  if (text !== undefined) d.textContent = text;
  if (parent) parent.appendChild(d);
  return d;
}
function local(svg, ev) {
  var r = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
  return {x: (ev.clientX - r.left) * vb.width / r.width, y: (ev.clientY - r.top) * vb.height / r.height,
          perPx: vb.width / r.width};
}
function Timeline(svg, D) {
  var self = this, fig = svg.parentNode, ML = D.ml, PW = D.w - D.ml - D.mr, TOP = D.top, H = D.h;
  var n = D.p.length, T = new Float64Array(n), acc = D.t0, i;
  for (i = 0; i < n; i++) { acc += D.p[i]; T[i] = acc; }
  var na = D.as.length, AS = new Float64Array(na), AE = new Float64Array(na), AI = new Int32Array(na), e = -1;
  acc = D.t0;
  for (i = 0; i < na; i++) {
    acc += D.as[i]; AS[i] = acc;
    AE[i] = D.ad[i] < 0 ? Infinity : acc + D.ad[i];
    e += D.ai[i]; AI[i] = e;
  }
  var T1 = D.t1 > D.t0 ? D.t1 : D.t0 + 1, view = {a: D.t0, b: T1}, pinned = -1, drag = null, queued = false;
  var areas = svg.querySelectorAll('g.plot path[data-k]'), live = svg.querySelector('g.plot path.live');
  var res = svg.querySelector('g.plot path.res:not(.replay)'), replay = svg.querySelector('g.plot path.replay');
  var xax = svg.querySelector('g.xax'), marksG = svg.querySelector('g.marks');
  var marks = svg.querySelectorAll('g.marks > g[data-t]');
  var hl = el(svg, 'g', {'class': 'hl'});
  svg.insertBefore(hl, marksG);
  var cursor = el(svg, 'line', {'class': 'cursor', x1: 0, x2: 0, y1: TOP, y2: TOP + H, visibility: 'hidden'}, svg);
  var box = el(svg, 'rect', {'class': 'under', x: 0, y: 0, width: 0, height: 0, visibility: 'hidden'}, svg);
  var band = el(svg, 'rect', {'class': 'range', x: 0, y: TOP, width: 0, height: H, visibility: 'hidden'}, svg);
  el(svg, 'rect', {'class': 'hit', x: ML, y: TOP, width: PW, height: H}, svg);
  var bar = div('od-bar');
  fig.insertBefore(bar, svg);
  var zoomText = div('od-zoom', '', bar);
  var reset = document.createElement('button');
  reset.type = 'button'; reset.textContent = 'reset zoom'; reset.className = 'od-reset';
  bar.appendChild(reset);
  div('od-hint', 'wheel: zoom \u00b7 drag: pan \u00b7 shift-drag: zoom to a range \u00b7 double-click: reset \u00b7 ' +
      'hover: the allocation under the pointer \u00b7 click: pin it', bar);
  var tip = div('od-tip');
  tip.setAttribute('role', 'tooltip');
  tip.hidden = true;
  fig.appendChild(tip);
  function X(t) { return ML + (t - view.a) / (view.b - view.a) * PW; }
  function Y(v) { return TOP + H - v / D.ymax * H; }
  function cx(x) { return (x < ML ? ML : x > ML + PW ? ML + PW : x).toFixed(1); }
  function tAt(x) { return view.a + (x - ML) / PW * (view.b - view.a); }
  function pick() { return ODU.downsample(T, D.l, D.r, view.a, view.b, PW); }
  function ticks() {
    while (xax.firstChild) xax.removeChild(xax.firstChild);
    var span = view.b - view.a, scale = span >= 2e6 ? 1e-6 : span >= 2e3 ? 1e-3 : 1;
    var unit = scale === 1e-6 ? ' s' : scale === 1e-3 ? ' ms' : ' us';
    var step = nice(span * scale, 8) / scale, v = Math.ceil((view.a - D.t0) / step) * step;
    for (; v <= view.b - D.t0 + step * 1e-9; v += step) {
      var x = X(D.t0 + v).toFixed(1);
      el(svg, 'line', {'class': 'grid', x1: x, x2: x, y1: TOP, y2: TOP + H}, xax);
      el(svg, 'text', {'class': 'axis', x: x, y: TOP + H + 16, 'text-anchor': 'middle'}, xax).textContent =
        String(Math.round(v * scale * 1e6) / 1e6) + unit;
    }
    el(svg, 'text', {'class': 'axis', x: (ML + PW / 2).toFixed(1), y: TOP + H + 34, 'text-anchor': 'middle'}, xax)
      .textContent = "time since the trace's first entry";
  }
  function redraw() {
    queued = false;
    var s = pick(), idx = s.idx, m = idx.length, below = new Float64Array(m), xs = new Array(m), j, k;
    for (j = 0; j < m; j++) xs[j] = cx(X(T[idx[j]]));
    for (k = 0; k < D.g.length && k < areas.length; k++) {
      var g = D.g[k], up = [], down = [];
      for (j = 0; j < m; j++) {
        down.push(xs[j] + ' ' + Y(below[j]).toFixed(1));
        below[j] += g[idx[j]];
        up.push(xs[j] + ' ' + Y(below[j]).toFixed(1));
      }
      areas[k].setAttribute('d', m ? 'M' + up.join('L') + 'L' + down.reverse().join('L') + 'Z' : '');
    }
    var pl = [], pr = [];
    for (j = 0; j < m; j++) {
      pl.push(xs[j] + ' ' + Y(D.l[idx[j]]).toFixed(1));
      pr.push(xs[j] + ' ' + Y(s.rm[j]).toFixed(1));
    }
    if (live) live.setAttribute('d', m ? 'M' + pl.join('L') : '');
    if (res && D.r) res.setAttribute('d', m ? 'M' + pr.join('L') : '');
    var zoomed = view.a > D.t0 || view.b < T1;
    if (replay) replay.style.display = zoomed ? 'none' : '';
    ticks();
    var full = T1 - D.t0;
    for (j = 0; j < marks.length; j++) {
      var t = D.t0 + Number(marks[j].getAttribute('data-t')), x = X(t), x0 = ML + (t - D.t0) / full * PW;
      marks[j].setAttribute('transform', 'translate(' + (x - x0).toFixed(1) + ' 0)');
      marks[j].style.display = x < ML - 0.5 || x > ML + PW + 0.5 ? 'none' : '';
    }
    drawPin();
    zoomText.textContent = zoomed ? 'showing +' + secs(view.a - D.t0) + ' to +' + secs(view.b - D.t0) + ' (' +
      (full / (view.b - view.a)).toFixed(1) + 'x)' : 'whole trace';
    reset.disabled = !zoomed;
  }
  function schedule() {
    if (!queued) { queued = true; window.requestAnimationFrame(redraw); }
  }
  function setView(a, b) {
    var v = ODU.clampView(a, b, D.t0, T1, 5);
    view.a = v.a; view.b = v.b;
    schedule();
  }
  function under(t, bytes) {
    var cum = 0, top = -1;
    for (var q = 0; q < na && AS[q] <= t; q++)
      if (AE[q] > t) {
        cum += D.ab[q];
        top = q;
        if (cum > bytes) return {q: q, lo: cum - D.ab[q], hi: cum};
      }
    /* above the live bytes: the topmost allocation live then */
    return top >= 0 ? {q: top, lo: cum - D.ab[top], hi: cum, above: true} : null;
  }
  function liveAt(t) {
    var j = lower(T, t + 0.5) - 1, v = {l: 0, r: 0, exact: D.all};
    if (j >= 0) { v.l = D.l[j]; v.r = D.r ? D.r[j] : 0; }
    if (D.all) {
      v.l = 0;
      for (var q = 0; q < na && AS[q] <= t; q++) if (AE[q] > t) v.l += D.ab[q];
    }
    return v;
  }
  function line(text, cls) { div(cls, text, tip); }
  function describe(q) {
    var sk = D.ak[q], cat = D.cats[D.ac[q]], fs = sk >= 0 ? D.st[sk] : [];
    line('allocation of ' + iec(D.ab[q]) + (D.ar[q] ? ' (requested ' + iec(D.ar[q]) + ')' : '') + ' \u00b7 ' + cat, 'al');
    line('lifetime: ' + (AI[q] < 0 ? 'live before the trace began' : 'from +' + secs(AS[q] - D.t0) + ' (entry ' + AI[q] + ')') +
         (AE[q] === Infinity ? ', never freed in the trace' : ' to +' + secs(AE[q] - D.t0) + ' (' + secs(AE[q] - AS[q]) + ')'), 'lt');
    if (!fs.length) line('no Python frames (made in C++, e.g. by the autograd engine)', 'fr');
    for (var k = 0; k < fs.length; k++) line(D.fr[fs[k]], 'fr');
  }
  function show(t, h, p) {
    tip.textContent = '';
    var v = liveAt(t);
    line('+' + secs(t - D.t0) + ' \u00b7 live ' + (v.exact ? '' : '\u2248') + iec(v.l) +
         (D.r ? ' \u00b7 reserved ' + iec(v.r) : ''), 'hd');
    if (pinned >= 0) describe(pinned);
    else if (h) {
      if (h.above) line('above the live bytes; the topmost allocation live then:', 'muted');
      describe(h.q);
    }
    else line(D.all ? 'no allocation under the pointer' : 'no allocation under the pointer among the ' + na +
              ' embedded (of ' + D.lives + ': those live at the peak, then the largest)', 'muted');
    if (pinned >= 0) line('pinned: click elsewhere or press Escape to release', 'muted');
    tip.hidden = false;
    var fr = fig.getBoundingClientRect(), sr = svg.getBoundingClientRect();
    var left = (sr.left - fr.left) + (p.x / p.perPx) + 16, top = (sr.top - fr.top) + (p.y / p.perPx) + 16;
    var w = tip.offsetWidth;
    if (left + w > fr.width - 4) left = Math.max(4, (sr.left - fr.left) + p.x / p.perPx - w - 16);
    tip.style.left = left + 'px';
    tip.style.top = top + 'px';
  }
  function hover(p) {
    if (p.x < ML || p.x > ML + PW) { leave(); return; }
    var t = tAt(p.x), bytes = (TOP + H - p.y) / H * D.ymax, h = under(t, bytes);
    cursor.setAttribute('x1', p.x.toFixed(1)); cursor.setAttribute('x2', p.x.toFixed(1));
    cursor.setAttribute('visibility', 'visible');
    if (h && pinned < 0) {
      box.setAttribute('x', cx(X(AS[h.q]))); box.setAttribute('width', Math.max(1.5, cx(X(Math.min(AE[h.q], T1))) - cx(X(AS[h.q]))));
      box.setAttribute('y', Y(h.hi).toFixed(1)); box.setAttribute('height', Math.max(1, Y(h.lo) - Y(h.hi)).toFixed(1));
      box.setAttribute('visibility', 'visible');
    } else box.setAttribute('visibility', 'hidden');
    self.hovered = h ? h.q : -1;
    show(t, h, p);
  }
  function leave() {
    cursor.setAttribute('visibility', 'hidden');
    box.setAttribute('visibility', 'hidden');
    if (pinned < 0) tip.hidden = true;
  }
  function drawPin() {
    while (hl.firstChild) hl.removeChild(hl.firstChild);
    if (self.marked) {
      var m1 = Number(cx(X(self.marked.a))), m2 = Number(cx(X(self.marked.b)));
      el(svg, 'rect', {'class': 'mark', x: (m1 - 1).toFixed(1), y: TOP, width: Math.max(2, m2 - m1 + 2).toFixed(1), height: H}, hl);
    }
    if (pinned < 0) return;
    var x1 = Number(cx(X(AS[pinned]))), x2 = Number(cx(X(Math.min(AE[pinned], T1))));
    el(svg, 'rect', {'class': 'pin', x: x1, y: TOP, width: Math.max(1.5, x2 - x1).toFixed(1), height: H}, hl);
  }
  function pin(q) {
    pinned = q;
    self.pinned = q;
    drawPin();
    if (q < 0) tip.hidden = true;
  }
  self.pin = pin;
  self.D = D;
  self.svg = svg;
  self.hovered = -1;
  self.pinned = -1;
  self.setView = setView;
  self.view = view;
  self.range = function (q) { return {start: AS[q], end: AE[q]}; };
  self.reset = function () { setView(D.t0, T1); };
  self.redrawNow = redraw;
  self.showRange = function (a, b) {
    var pad = Math.max((b - a) * 0.15, (T1 - D.t0) * 0.02, 20);
    pin(-1);
    self.marked = {a: a, b: b};
    setView(a - pad, b + pad);
  };
  function inPlot(p) { return p.x >= ML && p.x <= ML + PW && p.y >= TOP && p.y <= TOP + H; }
  svg.addEventListener('mousedown', function (ev) {
    var p = local(svg, ev);
    if (ev.button !== 0 || !inPlot(p)) return;
    drag = {x: ev.clientX, a: view.a, b: view.b, shift: ev.shiftKey, moved: false, p: p};
    ev.preventDefault();
  });
  svg.addEventListener('mousemove', function (ev) { if (!drag) hover(local(svg, ev)); });
  document.addEventListener('mousemove', function (ev) {
    if (!drag) return;
    var p = local(svg, ev);
    if (Math.abs(ev.clientX - drag.x) > 3) drag.moved = true;
    if (!drag.moved) return;
    if (drag.shift) {
      var x1 = Math.min(p.x, drag.p.x), x2 = Math.max(p.x, drag.p.x);
      band.setAttribute('x', cx(x1)); band.setAttribute('width', (Number(cx(x2)) - Number(cx(x1))).toFixed(1));
      band.setAttribute('visibility', 'visible');
    } else {
      var dt = -(ev.clientX - drag.x) * p.perPx / PW * (drag.b - drag.a);
      setView(drag.a + dt, drag.b + dt);
    }
  });
  document.addEventListener('mouseup', function (ev) {
    if (!drag) return;
    var d = drag, p = local(svg, ev);
    drag = null;
    band.setAttribute('visibility', 'hidden');
    if (d.moved && d.shift) {
      setView(tAt(Math.min(p.x, d.p.x)), tAt(Math.max(p.x, d.p.x)));
    } else if (!d.moved) {
      var h = under(tAt(p.x), (TOP + H - p.y) / H * D.ymax);
      pin(h && h.q !== pinned ? h.q : -1);
      hover(p);
    }
  });
  svg.addEventListener('mouseleave', function () { if (!drag) leave(); });
  svg.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var p = local(svg, ev), x = p.x < ML ? ML : p.x > ML + PW ? ML + PW : p.x, t = tAt(x);
    var z = ODU.zoomAround(view.a, view.b, t, ODU.wheelFactor(ev.deltaY, ev.deltaMode));
    setView(z.a, z.b);
  }, {passive: false});
  svg.addEventListener('dblclick', function () { self.reset(); });
  reset.addEventListener('click', function () { self.reset(); });
  document.addEventListener('keydown', function (ev) { if (ev.key === 'Escape' && pinned >= 0) pin(-1); });
  redraw();
}
function State(svg, S) {
  var self = this, fig = svg.parentNode, ML = 76, PW = 960 - 76 - 16, RH = 18, GAP = 8;
  var peakAt = 0, k;
  for (k = 0; k < S.samples.length; k++) if (S.samples[k].i === S.peak) peakAt = k;
  var bar = div('od-bar od-state-bar');
  fig.insertBefore(bar, svg);
  var label = document.createElement('label');
  label.textContent = 'allocator state at entry (' + S.samples.length + ' sampled, the peak among them) ';
  var slider = document.createElement('input');
  slider.type = 'range'; slider.min = 0; slider.max = Math.max(0, S.entries - 1); slider.step = 1;
  slider.value = S.samples[peakAt].i;
  slider.className = 'od-slider';
  slider.setAttribute('aria-label', 'trace entry');
  label.appendChild(slider);
  bar.appendChild(label);
  var toPeak = document.createElement('button');
  toPeak.type = 'button'; toPeak.textContent = 'peak';
  bar.appendChild(toPeak);
  var only = -1, pick = null;
  if (S.homes && S.homes.length > 1) {
    pick = document.createElement('select');
    pick.className = 'od-home';
    pick.setAttribute('aria-label', 'stream and pool');
    var o = document.createElement('option');
    o.value = -1; o.textContent = 'all ' + S.homes.length + ' streams and pools';
    pick.appendChild(o);
    for (k = 0; k < S.homes.length; k++) {
      o = document.createElement('option');
      o.value = k; o.textContent = S.homes[k];
      pick.appendChild(o);
    }
    bar.appendChild(pick);
    pick.addEventListener('change', function () { only = Number(pick.value); draw(cur); });
  }
  var info = div('od-state-info', '', bar);
  var title = svg.querySelector('title');
  function strip(g, a, z, row, unit, cls) {
    while (a < z) {
      var r = Math.floor(a / row), rend = (r + 1) * row, e = z < rend ? z : rend;
      var x = ML + (a - r * row) * unit, w = (e - a) * unit;
      if (w >= 0.05) el(svg, 'rect', {'class': cls, x: x.toFixed(2), y: (6 + r * (RH + GAP)).toFixed(1),
                                      width: w.toFixed(2), height: RH}, g);
      a = e;
    }
  }
  function draw(si) {
    var smp = S.samples[si], total = smp.r, j, q = 0, off = 0, stranded = 0, freeIdle = 0, nb = 0, largest = 0;
    while (svg.lastChild && svg.lastChild !== title) svg.removeChild(svg.lastChild);
    if (!total) { svg.setAttribute('viewBox', '0 0 960 30'); info.textContent = 'nothing reserved at entry ' + smp.i; return; }
    var row = byteStep(total, 24), rows = Math.ceil(total / row), unit = PW / row;
    svg.setAttribute('viewBox', '0 0 960 ' + (rows * (RH + GAP) + 12));
    for (j = 0; j < rows; j++)
      el(svg, 'text', {'class': 'axis', x: ML - 6, y: (6 + j * (RH + GAP) + RH / 2).toFixed(1), 'text-anchor': 'end',
                       'dominant-baseline': 'middle'}, svg).textContent = tickLabel(j * row);
    var inHome = {segments: 0, reserved: 0, busy: 0};
    for (j = 0; j < smp.s.length; j += 3) {
      var size = smp.s[j], n = smp.s[j + 1], home = smp.s[j + 2], pos = 0, used = 0, b;
      var g = el(svg, 'g', {'class': only >= 0 && home !== only ? 'dim' : ''}, svg);
      for (b = 0; b < n; b++) used += smp.b[(q + b) * 3 + 1];
      if (home === only) { inHome.segments++; inHome.reserved += size; inHome.busy += used; }
      el(svg, 'title', {}, g).textContent = (S.homes[home] || '') + ': segment of ' + iec(size) + ', ' + n + ' busy block' + (n === 1 ? '' : 's') +
        ': ' + iec(used) + ' in use, ' + iec(Math.max(0, size - used)) + ' free' +
        (n && size > used ? ' (stranded: empty_cache() cannot release it)' : '');
      for (b = 0; b < n; b++, q++) {
        var bo = smp.b[q * 3], bs = smp.b[q * 3 + 1], st = smp.b[q * 3 + 2];
        if (bo > pos) {
          strip(g, off + pos, off + Math.min(bo, size), row, unit, 'x');
          stranded += Math.min(bo, size) - pos; largest = Math.max(largest, Math.min(bo, size) - pos);
        }
        strip(g, off + Math.max(bo, pos), off + Math.min(bo + bs, size), row, unit, st === 1 ? 'a' : 'p');
        pos = Math.max(pos, bo + bs);
        nb++;
      }
      if (pos < size) {
        strip(g, off + pos, off + size, row, unit, n ? 'x' : 'f');
        if (n) stranded += size - pos; else freeIdle += size - pos;
        largest = Math.max(largest, size - pos);
      }
      var r0 = Math.floor(off / row), sx = ML + (off - r0 * row) * unit;
      el(svg, 'line', {'class': 'sep', x1: sx.toFixed(2), x2: sx.toFixed(2), y1: (6 + r0 * (RH + GAP)).toFixed(1),
                       y2: (6 + r0 * (RH + GAP) + RH).toFixed(1)}, g);
      off += size;
    }
    self.blocks = nb; self.busy = smp.u; self.entry = smp.i; self.segments = smp.s.length / 3;
    info.setAttribute('data-entry', smp.i); info.setAttribute('data-blocks', nb); info.setAttribute('data-busy', smp.u);
    info.textContent = smp.i + ' of ' + S.entries + (smp.i === S.peak ? ' (the peak)' : '') + ', +' + secs(smp.t) +
      ': ' + (smp.s.length / 3) + ' segments, ' + iec(total) + ' reserved, ' + nb + ' busy blocks (' + iec(smp.u) +
      '), ' + iec(stranded) + ' stranded, ' + iec(freeIdle) + ' free in idle segments, largest free run ' + iec(largest) +
      (only >= 0 ? '; ' + S.homes[only] + ': ' + inHome.segments + ' segments, ' + iec(inHome.reserved) + ' reserved, ' +
       iec(inHome.busy) + ' busy' : '');
  }
  var cur = peakAt;
  function nearest(entry) {
    var best = 0;
    for (var j = 1; j < S.samples.length; j++)
      if (Math.abs(S.samples[j].i - entry) < Math.abs(S.samples[best].i - entry)) best = j;
    return best;
  }
  function go(si) {
    cur = Math.max(0, Math.min(S.samples.length - 1, si));
    slider.value = S.samples[cur].i;
    draw(cur);
  }
  slider.addEventListener('input', function () { go(nearest(Number(slider.value))); });
  slider.addEventListener('keydown', function (ev) {
    var d = {ArrowRight: 1, ArrowUp: 1, ArrowLeft: -1, ArrowDown: -1, PageUp: 10, PageDown: -10}[ev.key];
    if (ev.key === 'Home') d = -S.samples.length;
    if (ev.key === 'End') d = S.samples.length;
    if (!d) return;
    ev.preventDefault();
    go(cur + d);
  });
  toPeak.addEventListener('click', function () { go(peakAt); });
  self.slider = slider;
  self.S = S;
  self.svg = svg;
  self.show = go;
  self.showEntry = function (entry) { go(nearest(entry)); };
  self.peakSample = peakAt;
  draw(peakAt);
}
function Icicle(T) {
  var D = T.D, fig = T.svg.parentNode, self = this, mode = 'stack', RH = 18, W = 960, ML = 8, PW = W - 16;
  var wrap = document.createElement('figure');
  wrap.className = 'od-icicle';
  var h = document.createElement('h3');
  h.textContent = 'Live at the peak, by full stack';
  fig.parentNode.insertBefore(h, fig.nextSibling);
  fig.parentNode.insertBefore(wrap, h.nextSibling);
  var bar = div('od-bar', '', wrap);
  var bStack = document.createElement('button'), bCat = document.createElement('button'), bUp = document.createElement('button');
  bStack.type = bCat.type = bUp.type = 'button';
  bStack.textContent = 'by stack'; bCat.textContent = 'by category'; bUp.textContent = 'zoom out';
  bar.appendChild(bStack); bar.appendChild(bCat); bar.appendChild(bUp);
  var crumb = div('od-crumb', '', bar);
  var svg = el(T.svg, 'svg', {'class': 'icicle', id: 'icicle-' + T.svg.id, viewBox: '0 0 960 40', role: 'img',
                              'aria-label': 'live bytes at the peak by stack (icicle): click a frame to zoom into it'}, wrap);
  var cap = document.createElement('figcaption');
  wrap.appendChild(cap);
  function build(byCat) {
    var root = {name: byCat ? 'all categories' : 'all stacks', bytes: 0, kids: {}, list: [], parent: null};
    for (var j = 0; j < D.ap.length; j++) {
      var q = D.ap[j], sk = D.ak[q], fs = sk >= 0 ? D.st[sk] : [], node = root, path = [], k;
      if (byCat) path.push(D.cats[D.ac[q]]);
      for (k = fs.length - 1; k >= 0; k--) path.push(D.fr[fs[k]]);
      if (!fs.length) path.push('(no Python frames)');
      root.bytes += D.ab[q];
      for (k = 0; k < path.length; k++) {
        var c = node.kids[path[k]];
        if (!c) { c = node.kids[path[k]] = {name: path[k], bytes: 0, kids: {}, list: [], parent: node, cat: byCat && k === 0}; node.list.push(c); }
        c.bytes += D.ab[q];
        node = c;
      }
    }
    return root;
  }
  var trees = {}, focus = null;
  function depth(n) { var d = 0; for (var k = 0; k < n.list.length; k++) d = Math.max(d, depth(n.list[k])); return d + 1; }
  function colour(n) {
    if (n.cat) return 's' + (D.cats.indexOf(n.name) % 8);
    var f = n.name.replace(/:[0-9]+:[^:]*$/, ''), hsh = 0;
    for (var k = 0; k < f.length; k++) hsh = (hsh * 31 + f.charCodeAt(k)) >>> 0;
    return 's' + (hsh % 8);
  }
  function draw() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var rows = Math.min(depth(focus), 80), top = focus, drawn = 1;
    function put(n, x, w, d) {
      if (w < 0.4 || d >= rows) return;
      if (w >= 1 && d + 1 > drawn) drawn = d + 1;
      var g = el(svg, 'g', {'class': 'node'}, svg);
      el(svg, 'rect', {'class': n === top ? 'so' : colour(n), x: x.toFixed(2), y: d * RH + 2, width: Math.max(0.4, w - 0.6).toFixed(2),
                       height: RH - 2}, g);
      el(svg, 'title', {}, g).textContent = n.name + '\n' + iec(n.bytes) + ' (' + (100 * n.bytes / trees[mode].bytes).toFixed(1) + '% of the peak\'s live bytes)';
      if (w > 40) {
        var label = n.name.replace(/^.*\//, ''), fit = Math.floor((w - 6) / 6.2);
        if (label.length > fit) label = label.slice(0, Math.max(1, fit - 1)) + '\u2026';
        el(svg, 'text', {x: (x + 3).toFixed(1), y: d * RH + 14, 'class': 'ice'}, g).textContent = label;
      }
      g.addEventListener('click', function () { if (n.list.length || n.parent) { focus = n === focus && n.parent ? n.parent : n; draw(); } });
      var cx = x;
      n.list.sort(function (a, b) { return b.bytes - a.bytes; });
      for (var k = 0; k < n.list.length; k++) {
        var cw = n.bytes ? w * n.list[k].bytes / n.bytes : 0;
        put(n.list[k], cx, cw, d + 1);
        cx += cw;
      }
    }
    put(top, ML, PW, 0);
    svg.setAttribute('viewBox', '0 0 960 ' + (drawn * RH + 4)); /* as deep as frames at least 1 unit wide go */
    var path = [], n = focus;
    for (; n; n = n.parent) path.unshift(n.name.replace(/^.*\//, ''));
    crumb.textContent = path.join(' \u203a ') + ' \u2014 ' + iec(focus.bytes);
    bUp.disabled = !focus.parent;
    self.focus = focus;
    cap.textContent = 'The ' + D.ap.length + ' allocations live at the peak (' + iec(trees[mode].bytes) + ' in blocks), ' +
      (mode === 'cat' ? 'by category (from their frames), then ' : '') + 'by full stack from the outermost frame down; width is bytes. ' +
      'Click a frame to zoom into it, click it again (or zoom out) to go back up; hover for the frame and its bytes.';
  }
  function set(m) { mode = m; trees[m] = trees[m] || build(m === 'cat'); focus = trees[m]; draw(); }
  bStack.addEventListener('click', function () { set('stack'); });
  bCat.addEventListener('click', function () { set('cat'); });
  bUp.addEventListener('click', function () { if (focus.parent) { focus = focus.parent; draw(); } });
  self.svg = svg;
  self.set = set;
  self.zoom = function (n) { focus = n; draw(); };
  self.root = function () { return trees[mode]; };
  set('stack');
}
var all = [], states = [], icicles = [];
var blocks = document.querySelectorAll('script.od-timeline');
for (var i = 0; i < blocks.length; i++) {
  var svg = document.getElementById(blocks[i].getAttribute('data-for'));
  if (!svg) continue;
  try {
    var tl = new Timeline(svg, JSON.parse(blocks[i].textContent));
    all.push(tl);
    if (tl.D.ap && tl.D.ap.length) icicles.push(new Icicle(tl));
  } catch (err) { if (window.console) window.console.error(err); }
}
blocks = document.querySelectorAll('script.od-state');
for (i = 0; i < blocks.length; i++) {
  svg = document.getElementById(blocks[i].getAttribute('data-for'));
  if (!svg) continue;
  try { states.push(new State(svg, JSON.parse(blocks[i].textContent))); } catch (err) { if (window.console) window.console.error(err); }
}
var evs = document.querySelectorAll('.od-ev');
function mapLink(e, fig) {
  e.className += ' od-link';
  e.setAttribute('role', 'link');
  e.setAttribute('tabindex', '0');
  e.title = 'show these blocks in the segment map at the end';
  function go() {
    for (var k = 0; k < evs.length; k++) evs[k].classList.remove('on');
    e.classList.add('on');
    var svg = fig.querySelector('svg'), free = svg.querySelectorAll('rect.x, rect.f'), best = null, j;
    var old = document.querySelectorAll('rect.flash');
    for (j = 0; j < old.length; j++) old[j].classList.remove('flash');
    for (j = 0; j < free.length; j++) {
      if (/stranded/.test(e.textContent) && free[j].classList.contains('x')) free[j].classList.add('flash');
      if (!best || Number(free[j].getAttribute('width')) > Number(best.getAttribute('width'))) best = free[j];
    }
    if (best) best.classList.add('flash');
    fig.scrollIntoView({block: 'center'});
  }
  e.addEventListener('click', go);
  e.addEventListener('keydown', function (ev) { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); go(); } });
}
function evidence(e) {
  var item = Number(e.getAttribute('data-item')), dev = Number(e.getAttribute('data-device')), T = null;
  if (e.getAttribute('data-map') === 'end') {
    var fig = document.querySelector('figure[data-map="end"][data-item="' + item + '"][data-device="' + dev + '"]');
    if (fig) mapLink(e, fig);
    return;
  }
  for (var j = 0; j < all.length && !T; j++) if (all[j].D.item === item && all[j].D.device === dev) T = all[j];
  if (!T) return;
  e.className += ' od-link';
  e.setAttribute('role', 'link');
  e.setAttribute('tabindex', '0');
  e.title = 'show this moment on the timeline';
  function go() {
    for (var k = 0; k < evs.length; k++) evs[k].classList.remove('on');
    e.classList.add('on');
    T.showRange(Number(e.getAttribute('data-a')), Number(e.getAttribute('data-b')));
    T.svg.scrollIntoView({block: 'center'});
  }
  e.addEventListener('click', go);
  e.addEventListener('keydown', function (ev) { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); go(); } });
}
for (i = 0; i < evs.length; i++) evidence(evs[i]);
window.oomdoc = {timelines: all, states: states, icicles: icicles, ready: true};
document.documentElement.setAttribute('data-oomdoc', 'ready');
})();
