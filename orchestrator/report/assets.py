"""The report page's style sheet and script, inlined into every report (nothing is fetched): the
script fills a judgment's texts in when it is opened and filters the judgments list."""

__all__ = ["CSS", "SCRIPT"]

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header,section{max-width:1100px;margin:0 auto;padding:12px 24px}
header{background:#fff;border-bottom:1px solid #ddd}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:14px 0 6px}
nav a{margin-right:14px}
table{border-collapse:collapse;margin:6px 0;background:#fff}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
.summary{background:#fff;border-left:4px solid #3182bd;padding:8px 14px}
.muted{color:#666}.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{background:#fff;border:1px solid #ddd}
details.judgment{border-bottom:1px solid #eee;padding:2px 0}
details.judgment summary{cursor:pointer}
details.judgment .body{padding:6px 18px;background:#fff}
pre{white-space:pre-wrap;background:#f6f6f6;padding:6px;margin:4px 0;max-height:320px;overflow:auto}
input#filter{width:320px;padding:4px;margin:6px 0}
"""

SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById('texts').textContent);
  function el(tag, text) { var e = document.createElement(tag); if (text !== undefined) e.textContent = text; return e; }
  function fill(d) {
    var body = d.querySelector('.body');
    if (body.dataset.filled) return;
    var p = d.dataset.prompt, cands = JSON.parse(d.dataset.candidates), probs = JSON.parse(d.dataset.probs);
    body.appendChild(el('h4', 'Prompt ' + p));
    body.appendChild(el('pre', (data.prompts[p] || '')));
    cands.forEach(function (c, k) {
      body.appendChild(el('h4', (cands.length > 1 ? 'ABC'[k] + ' = ' : '') + c));
      body.appendChild(el('pre', ((data.responses[p] || {})[c] || '')));
    });
    body.appendChild(el('h4', 'Answer'));
    body.appendChild(el('pre', d.dataset.answer || '(no text)'));
    if (probs.length) {
      var t = el('table'), head = el('tr');
      head.appendChild(el('th', 'read'));
      var keys = Object.keys(probs[0]);
      keys.forEach(function (k) { head.appendChild(el('th', 'P(' + k + ')')); });
      t.appendChild(head);
      probs.forEach(function (row, i) {
        var tr = el('tr'); tr.appendChild(el('td', String(i + 1)));
        keys.forEach(function (k) { var td = el('td', (row[k] === undefined ? '' : Number(row[k]).toFixed(4))); td.className = 'num'; tr.appendChild(td); });
        t.appendChild(tr);
      });
      body.appendChild(t);
    }
    if (d.dataset.error) body.appendChild(el('p', 'Error: ' + d.dataset.error));
    body.dataset.filled = '1';
  }
  document.querySelectorAll('details.judgment').forEach(function (d) {
    d.addEventListener('toggle', function () { if (d.open) fill(d); });
  });
  var filter = document.getElementById('filter');
  if (filter) filter.addEventListener('input', function () {
    var q = filter.value.toLowerCase();
    document.querySelectorAll('details.judgment').forEach(function (d) {
      d.style.display = d.querySelector('summary').textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none';
    });
  });
})();
"""
