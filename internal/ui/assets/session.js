// agentctl ui, session page: appends the events a running session records
// to the timeline as they become durable (server-sent events from
// /api/sessions/ID/events). Recorded text is written with textContent only.
'use strict';
(function () {
  function cell(tr, text, cls) {
    var td = document.createElement('td');
    if (cls) td.className = cls;
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  function append(tbody, r) {
    if (document.getElementById('e' + r.seq)) return;
    var tr = document.createElement('tr');
    tr.id = 'e' + r.seq;
    tr.setAttribute('data-seq', String(r.seq));
    tr.className = 'fresh' + (r.lvl === 'error' || r.lvl === 'warn' ? ' lvl-' + r.lvl : '');
    cell(tr, String(r.seq), 'num');
    cell(tr, String(r.ms), 'num');
    cell(tr, r.kind, 'mono');
    var what = cell(tr, r.what || '');
    if (r.detail) {
      var pre = document.createElement('pre');
      pre.textContent = r.detail;
      what.appendChild(pre);
    }
    tbody.appendChild(tr);
    var n = document.getElementById('event-count');
    if (n) n.textContent = String(r.seq);
  }
  function live() {
    var table = document.getElementById('timeline');
    var src = table && table.getAttribute('data-events');
    if (!src || !window.EventSource) return;
    var tbody = table.tBodies[0];
    var es = new EventSource(src);
    es.onmessage = function (m) {
      append(tbody, JSON.parse(m.data));
    };
    es.addEventListener('end', function (m) {
      es.close();
      var note = document.getElementById('live-note');
      var why = JSON.parse(m.data).reason;
      if (note) note.textContent = why === 'more' ? 'many new events: reload the page to see them paged' : 'the session stopped recording: reload for its final figures';
    });
    es.onerror = function () {
      if (es.readyState === EventSource.CLOSED) return;
    };
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', live);
  else live();
})();
