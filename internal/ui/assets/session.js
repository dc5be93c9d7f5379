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
    set('event-count', String(r.seq));
    document.getElementById('figures').setAttribute('data-live-seq', String(r.seq));
    var f = r.figures || {};
    set('fig-in', f.in);
    set('fig-out', f.out);
    set('fig-cost', f.cost);
    set('fig-turns', f.turns);
    set('fig-tools', f.tool_calls);
  }
  function set(id, v) {
    var e = document.getElementById(id);
    if (e && v !== undefined && v !== null) e.textContent = String(v);
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
      var end = JSON.parse(m.data);
      var why = end.reason;
      if (why === 'finished' && end.status) {
        set('status', end.status);
        document.getElementById('figures').setAttribute('data-ended', '');
      }
      if (note) note.textContent = why === 'more' ? 'many new events: reload the page to see them paged' : 'the session stopped recording: reload for its final figures';
    });
    es.onerror = function () {
      if (es.readyState === EventSource.CLOSED) return;
    };
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', live);
  else live();
})();
// The diagnosis and the children need the query database: the page
// paints first and asks for them after.
(function () {
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function link(href, text, cls) {
    var a = el('a', text, cls);
    // Only the server's own relative links: a recorded string never
    // becomes an href.
    if (typeof href === 'string' && (/^#e[0-9]+$/.test(href) || (href.charAt(0) === '/' && href.charAt(1) !== '/'))) a.setAttribute('href', href);
    return a;
  }
  function fill(d) {
    var box = document.getElementById('diagnosis-box');
    var ul = document.getElementById('diagnosis');
    ul.textContent = '';
    if (d.error) box.insertBefore(el('p', d.error, 'error'), ul);
    (d.findings || []).forEach(function (f) {
      var li = el('li');
      li.setAttribute('data-kind', f.kind);
      li.appendChild(el('strong', f.kind));
      li.appendChild(document.createTextNode(' ' + f.text));
      (f.seqs || []).forEach(function (s) {
        li.appendChild(document.createTextNode(' '));
        li.appendChild(link(s.href, '#' + s.seq));
      });
      ul.appendChild(li);
    });
    if (!(d.findings || []).length) ul.appendChild(el('li', 'no finding', 'muted'));
    var kids = document.getElementById('children');
    kids.textContent = '';
    (d.children || []).forEach(function (k) {
      var li = el('li');
      li.setAttribute('data-lineage', 'child');
      li.appendChild(link(k.href, k.id, 'mono'));
      li.appendChild(document.createTextNode(': ' + k.relation + (k.seq ? ' at seq ' + k.seq : '')));
      kids.appendChild(li);
    });
    if (!(d.children || []).length) kids.appendChild(el('li', 'no subagent, fork or replay', 'muted'));
    box.setAttribute('data-loaded', '');
  }
  function figures(f) {
    var box = document.getElementById('figures');
    // Rows streamed live since the fold was read are newer than it.
    if (+(box.getAttribute('data-live-seq') || 0) > f.events || box.hasAttribute('data-ended')) {
      box.setAttribute('data-loaded', '');
      return;
    }
    var st = document.getElementById('status');
    st.textContent = f.status;
    if (/^[a-z_]+$/.test(f.status)) st.className = 'status status-' + f.status;
    [['fig-in', f.in], ['fig-out', f.out], ['fig-cost', f.cost], ['fig-duration', f.duration], ['fig-turns', f.turns],
     ['fig-tools', f.tool_calls], ['event-count', f.events], ['fig-exit', f.exit], ['fig-source', f.source], ['cmd-fork', f.fork]]
      .forEach(function (p) {
        var e = document.getElementById(p[0]);
        if (e && p[1] !== undefined && p[1] !== null) e.textContent = String(p[1]);
      });
    var last = document.getElementById('page-last');
    if (last && f.last_href && f.last_href.charAt(0) === '/' && f.last_href.charAt(1) !== '/') {
      last.setAttribute('href', f.last_href);
      last.textContent = 'last';
    }
    document.getElementById('figures').setAttribute('data-loaded', '');
  }
  function load() {
    var figs = document.getElementById('figures');
    var fsrc = figs && figs.getAttribute('data-src');
    if (fsrc) {
      fetch(fsrc, {credentials: 'same-origin'}).then(function (r) { return r.json(); }).then(function (f) {
        if (f.error) document.getElementById('fig-exit').textContent = f.error;
        else figures(f);
      }, function () {});
    }
    var box = document.getElementById('diagnosis-box');
    var src = box && box.getAttribute('data-src');
    if (!src) return;
    fetch(src, {credentials: 'same-origin'}).then(function (r) { return r.json(); }).then(fill, function (e) {
      fill({error: 'the diagnosis could not be loaded: ' + e, findings: [], children: []});
    });
  }
  // After the first paint: the fold and the diagnosis read the whole log,
  // which must not slow the page's own paint.
  function later() { requestAnimationFrame(function () { setTimeout(load, 0); }); }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', later);
  else later();
})();
