// flamegraph.js: the script inside every SVG `allocprof flame` writes:
// click-to-zoom, regex search (Ctrl-F or /) with the share of bytes the
// matches cover, and a details line for the hovered frame. Own code, plain
// ES5, no external resources, so the file works anywhere an SVG opens.
// It reads what flamegraph.c writes: data-total, data-minw, data-unit on
// the <svg>, one <g data-p data-x data-w data-b data-n> per frame with a
// <rect> and a <text>, and the elements #frames, #details, #unzoom,
// #search and #matched. HINT must stay equal to FG_HINT in flamegraph.c
// (tests/unit/flamegraph_test.c checks it).
//
// The build (embed.cmake) drops these leading // lines and embeds the rest
// byte for byte as a C string, so changing a comment here never changes a
// graph.
(function () {
'use strict';
var svg = document.documentElement;
var W = +svg.getAttribute('width'), PAD = 10, CW = 0.59 * 12;
var MINW = +svg.getAttribute('data-minw');
var total = +svg.getAttribute('data-total');
var unit = svg.getAttribute('data-unit');
var gs = document.getElementById('frames').getElementsByTagName('g');
var F = [], zoomed = -1, query = null;
var HINT = 'Click a frame to zoom, Ctrl-F or / to search, Escape to go back';
function $(id) { return document.getElementById(id); }
function fmt(b) {
  var u = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'], i = -1;
  if (Math.abs(b) < 1024) return Math.round(b) + ' B';
  while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return b.toFixed(2) + ' ' + u[i];
}
function pct(b) { return total > 0 ? (100 * b / total).toFixed(2) : '0.00'; }
function label(name, px) {
  var n = Math.floor((px - 6) / CW);
  if (n < 3) return '';
  return name.length <= n ? name : name.substring(0, n - 2) + '..';
}
function place(f, x0, w0) {
  var avail = W - 2 * PAD;
  var px = PAD + (f.x - x0) / w0 * avail, pw = f.w / w0 * avail;
  if (pw < MINW) { f.g.style.display = 'none'; return; }
  f.g.style.display = '';
  f.rect.setAttribute('x', px.toFixed(2));
  f.rect.setAttribute('width', pw.toFixed(2));
  f.text.setAttribute('x', (px + 3).toFixed(2));
  f.text.textContent = label(f.name, pw);
}
function within(i, k) {
  for (; i >= 0; i = F[i].p) if (i === k) return true;
  return false;
}
function zoom(k) {
  var z = F[k];
  for (var i = 0; i < F.length; i++) {
    var f = F[i];
    if (within(i, k)) { f.g.setAttribute('class', 'f'); place(f, z.x, z.w); }
    else if (within(k, i)) { f.g.setAttribute('class', 'f anc'); place(f, f.x, f.w); }
    else f.g.style.display = 'none';
  }
  zoomed = k;
  $('unzoom').style.display = k > 0 ? '' : 'none';
}
function search(q) {
  var re = null, sum = 0, i, f;
  if (q) {
    try { re = new RegExp(q); }
    catch (e) { $('matched').textContent = 'bad regular expression'; return; }
  }
  query = re ? q : null;
  for (i = 0; i < F.length; i++) {
    f = F[i];
    f.hit = re !== null && re.test(f.name);
    f.rect.setAttribute('fill', f.hit ? 'rgb(220,60,230)' : f.fill);
  }
  /* A match inside a matched frame is already counted. */
  for (i = 0; i < F.length; i++) {
    f = F[i];
    if (!f.hit) continue;
    var j = f.p;
    while (j >= 0 && !F[j].hit) j = F[j].p;
    if (j < 0) sum += f.b;
  }
  $('search').textContent = re ? 'Clear search' : 'Search';
  $('matched').textContent = re ? 'Matched: ' + pct(sum) + '% (' + fmt(sum) + ')' : '';
}
function ask() {
  var q = window.prompt('Search frames (regular expression):', query || '');
  if (q !== null) search(q);
}
for (var i = 0; i < gs.length; i++) {
  var g = gs[i];
  var f = { g: g, i: i, p: +g.getAttribute('data-p'),
    x: +g.getAttribute('data-x'), w: +g.getAttribute('data-w'),
    b: +g.getAttribute('data-b'), name: g.getAttribute('data-n'),
    rect: g.getElementsByTagName('rect')[0],
    text: g.getElementsByTagName('text')[0], hit: false };
  f.fill = f.rect.getAttribute('fill');
  F.push(f);
  (function (k) {
    g.addEventListener('click', function () { zoom(k); });
    g.addEventListener('mouseover', function () {
      $('details').textContent = F[k].name + ' (' + fmt(F[k].b) + ' ' + unit + ', ' + pct(F[k].b) + '%)';
    });
    g.addEventListener('mouseout', function () { $('details').textContent = HINT; });
  })(i);
}
$('unzoom').addEventListener('click', function () { zoom(0); });
$('search').addEventListener('click', function () { if (query !== null) search(null); else ask(); });
document.addEventListener('keydown', function (e) {
  if (((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) || e.key === '/') {
    e.preventDefault(); ask();
  } else if (e.key === 'Escape') {
    if (query !== null) search(null); else if (zoomed > 0) zoom(0);
  }
});
})();
