// timeline.js: the script inside every SVG `allocprof timeline` writes:
// hovering the plot shows a guide line at the nearest point and a box
// with the time, the site under the pointer with its estimate and
// interval, and the total with its interval; the hovered area is
// outlined. Own code, plain ES5, no external resources. It reads what
// timeline_svg.c writes: #plot with data-x0/x1/y0/y1 (plot box, px),
// data-tmin/tmax/ytop (scales) and data-t/total/lo/hi (per point); one
// <path class="area"> per layer, bottom first, with data-n (name),
// data-leak and data-b/lo/hi (per point); #guide, #tip, #tiptext,
// #details and the <svg>'s data-level. HINT must stay equal to TL_HINT
// in timeline_svg.c (tests/unit/timeline_test.c checks it).
(function () {
'use strict';
var HINT = 'Hover the plot: time, site, estimate and interval';
function $(id) { return document.getElementById(id); }
function nums(el, name) {
  var s = el.getAttribute(name), out = [], parts = s ? s.split(',') : [];
  for (var i = 0; i < parts.length; i++) out.push(+parts[i]);
  return out;
}
function fmt(b) {
  var u = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'], i = -1;
  if (Math.abs(b) < 1024) return Math.round(b) + ' B';
  while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return b.toFixed(2) + ' ' + u[i];
}
var svg = document.documentElement, plot = $('plot');
var level = +svg.getAttribute('data-level');
var box = {x0: +plot.getAttribute('data-x0'), x1: +plot.getAttribute('data-x1'),
           y0: +plot.getAttribute('data-y0'), y1: +plot.getAttribute('data-y1')};
var tmin = +plot.getAttribute('data-tmin'), tmax = +plot.getAttribute('data-tmax');
var ytop = +plot.getAttribute('data-ytop');
var T = nums(plot, 'data-t'), TOT = nums(plot, 'data-total');
var TLO = nums(plot, 'data-lo'), THI = nums(plot, 'data-hi');
var paths = plot.getElementsByTagName('path'), A = [], hot = null;
for (var k = 0; k < paths.length; k++) {
  var p = paths[k];
  if ((' ' + p.getAttribute('class') + ' ').indexOf(' area ') < 0) continue;
  A.push({el: p, name: p.getAttribute('data-n'), leak: p.getAttribute('data-leak') === '1',
          b: nums(p, 'data-b'), lo: nums(p, 'data-lo'), hi: nums(p, 'data-hi')});
}
function X(t) { return box.x0 + (t - tmin) / (tmax - tmin) * (box.x1 - box.x0); }
function toSvg(evt) {
  var m = svg.getScreenCTM(), pt = svg.createSVGPoint();
  pt.x = evt.clientX; pt.y = evt.clientY;
  return m ? pt.matrixTransform(m.inverse()) : pt;
}
function nearest(x) {
  var best = 0;
  for (var i = 1; i < T.length; i++)
    if (Math.abs(X(T[i]) - x) < Math.abs(X(T[best]) - x)) best = i;
  return best;
}
function layerAt(i, bytes) {
  var cum = 0;
  for (var k = 0; k < A.length; k++) {
    cum += A[k].b[i];
    if (bytes <= cum && A[k].b[i] > 0) return k;
  }
  return -1;
}
function setHot(el) {
  if (hot === el) return;
  if (hot) hot.setAttribute('class', 'area');
  if (el) el.setAttribute('class', 'area hot');
  hot = el;
}
function showTip(lines, x, y) {
  var tip = $('tip'), text = $('tiptext'), w = 0;
  while (text.firstChild) text.removeChild(text.firstChild);
  for (var j = 0; j < lines.length; j++) {
    var ts = document.createElementNS('http://www.w3.org/2000/svg', 'tspan');
    ts.setAttribute('x', '8');
    ts.setAttribute('dy', '16');
    ts.textContent = lines[j];
    text.appendChild(ts);
    w = Math.max(w, lines[j].length * 7.2);
  }
  try { w = text.getBBox().width; } catch (e) { /* not rendered: estimate */ }
  var h = 16 * lines.length + 10, bx = x + 14, by = y + 14;
  if (bx + w + 16 > +svg.getAttribute('width')) bx = x - w - 30;
  if (by + h > box.y1) by = Math.max(box.y0, y - h - 14);
  var r = tip.getElementsByTagName('rect')[0];
  r.setAttribute('width', (w + 16).toFixed(0));
  r.setAttribute('height', h.toFixed(0));
  tip.setAttribute('transform', 'translate(' + bx.toFixed(1) + ',' + by.toFixed(1) + ')');
  tip.style.display = '';
}
function pct() { return Math.round(100 * level) + '%'; }
function hover(evt) {
  var pt = toSvg(evt), i = nearest(pt.x);
  var bytes = (box.y1 - pt.y) / (box.y1 - box.y0) * ytop, k = layerAt(i, bytes);
  var g = $('guide'), gx = X(T[i]).toFixed(1);
  g.setAttribute('x1', gx); g.setAttribute('x2', gx); g.style.display = '';
  var lines = ['t = ' + T[i].toFixed(2) + ' s (point ' + (i + 1) + ' of ' + T.length + ')'];
  if (k >= 0) {
    var a = A[k];
    lines.push((a.leak ? 'LEAK ' : '') + a.name);
    lines.push('  ' + fmt(a.b[i]) + ', ' + pct() + ' interval [' + fmt(a.lo[i]) + ', ' + fmt(a.hi[i]) + ']');
    setHot(a.el);
  } else setHot(null);
  lines.push('total ' + fmt(TOT[i]) + ' [' + fmt(TLO[i]) + ', ' + fmt(THI[i]) + ']');
  showTip(lines, pt.x, pt.y);
  $('details').textContent = lines.join('  |  ');
}
function leave() {
  $('guide').style.display = 'none';
  $('tip').style.display = 'none';
  $('details').textContent = HINT;
  setHot(null);
}
plot.addEventListener('mousemove', hover);
plot.addEventListener('mouseleave', leave);
})();
