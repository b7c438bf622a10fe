// The x axis toggle of trend pages. Each plot is drawn over time; what moves keeps its x over
// llama.cpp commits in data-c, and switching swaps the two (cx of points, x1/x2 of bars, x of labels,
// points of lines).
var current = 'time';
function swap(el) {
  var other = el.getAttribute('data-c');
  if (el.tagName === 'circle') {
    el.setAttribute('data-c', el.getAttribute('cx'));
    el.setAttribute('cx', other);
  } else if (el.tagName === 'line') {
    el.setAttribute('data-c', el.getAttribute('x1'));
    el.setAttribute('x1', other);
    el.setAttribute('x2', other);
  } else if (el.tagName === 'text') {
    el.setAttribute('data-c', el.getAttribute('x'));
    el.setAttribute('x', other);
  } else if (el.tagName === 'polyline') {
    el.setAttribute('data-c', el.getAttribute('points'));
    el.setAttribute('points', other);
  }
}
function showAxis(axis) {
  if (axis !== current) {
    document.querySelectorAll('svg.trend [data-c]').forEach(swap);
    current = axis;
  }
  document.querySelectorAll('svg.trend g.ax').forEach(function (g) {
    g.style.display = g.getAttribute('data-axis') === axis ? '' : 'none';
  });
  document.querySelectorAll('.toggle button').forEach(function (b) {
    b.className = b.getAttribute('data-axis') === axis ? 'on' : '';
  });
  document.body.setAttribute('data-axis', axis);
  try { localStorage.setItem('specbench-axis', axis); } catch (e) { /* file:// may refuse storage */ }
}
document.addEventListener('DOMContentLoaded', function () {
  var saved = null;
  try { saved = localStorage.getItem('specbench-axis'); } catch (e) { saved = null; }
  if (document.querySelector('.toggle')) { showAxis(saved === 'commit' ? 'commit' : 'time'); }
  document.querySelectorAll('.toggle button').forEach(function (b) {
    b.addEventListener('click', function () { showAxis(b.getAttribute('data-axis')); });
  });
});
