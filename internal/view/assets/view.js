// agentctl view: draws the data of the script element #data (package
// view's doc describes it). Plain DOM, no framework. Every recorded string
// reaches the page through textContent or a text node, never as markup;
// links are only the relative ones the data carries. The timeline is drawn
// in chunks as it scrolls into view, so a long session opens at once.
(function () {
  'use strict';
  var CHUNK = 200, LINES = 12, CHARS = 2000;
  var data = JSON.parse(document.getElementById('data').textContent);
  var app = document.getElementById('app');
  var SVG = 'http://www.w3.org/2000/svg';

  function h(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null && text !== '') e.textContent = String(text);
    return e;
  }
  function add(p) {
    for (var i = 1; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined || c === '') continue;
      p.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
    return p;
  }
  function s(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  // link makes an anchor only for the relative links the data carries.
  function link(text, href, title) {
    if (!href || !/^\.\.?\//.test(href)) return h('span', 'nolink', text);
    var a = h('a', '', text);
    a.setAttribute('href', href);
    if (title) a.title = title;
    return a;
  }
  // vis shows control and bidirectional characters as escapes, as the
  // recorder's strings are already (package termsafe): for the summary,
  // which the page embeds exactly as 'agentctl sessions --json' prints it.
  function vis(t) {
    return String(t === undefined || t === null ? '' : t).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
      function (c) { return '\\u' + ('000' + c.charCodeAt(0).toString(16)).slice(-4); });
  }
  // pm names a provider and model as "provider/model", saying so when
  // the source recorded no model (an imported transcript may keep none).
  function pm(p, m) {
    p = vis(p); m = vis(m);
    if (m) return p ? p + '/' + m : m;
    return p ? p + ' (model not recorded)' : 'not recorded';
  }
  function num(n) { return (n || 0).toLocaleString('en-US'); }
  function usd(c) { return '$' + (c || 0).toFixed(4); }
  function dur(ms) {
    var t = Math.round((ms || 0) / 1000);
    if (ms < 1000) return (ms || 0) + ' ms';
    var hh = Math.floor(t / 3600), mm = Math.floor(t / 60) % 60, ss = t % 60;
    return (hh ? hh + 'h ' : '') + (hh || mm ? mm + 'm ' : '') + ss + 's';
  }
  // when shows an RFC 3339 time to the millisecond, in UTC.
  function when(ts) {
    var d = new Date(ts);
    return isNaN(d) ? String(ts) : d.toISOString().replace('T', ' ').replace(/\.(\d{3})Z$/, '.$1 UTC');
  }
  function clip(t, n) { t = String(t || ''); return t.length > n ? t.slice(0, n) + '…' : t; }
  function oneLine(t, n) { return clip(String(t || '').replace(/\s+/g, ' ').trim(), n); }

  // longText shows text in a <pre>, the first lines only when it is long,
  // with a button that shows the rest.
  function longText(t, cls) {
    var box = h('div', 'long ' + (cls || ''));
    var pre = h('pre');
    t = String(t || '');
    var lines = t.split('\n');
    box.appendChild(pre);
    if (lines.length <= LINES && t.length <= CHARS) {
      pre.textContent = t;
      return box;
    }
    var short = lines.slice(0, LINES).join('\n');
    if (short.length > CHARS) short = short.slice(0, CHARS);
    pre.textContent = short + '\n…';
    var b = h('button', 'more', 'show all ' + num(lines.length) + ' lines (' + num(t.length) + ' chars)');
    b.type = 'button';
    b.addEventListener('click', function () {
      var open = b.dataset.open === '1';
      pre.textContent = open ? short + '\n…' : t;
      b.dataset.open = open ? '0' : '1';
      b.textContent = open ? 'show all ' + num(lines.length) + ' lines (' + num(t.length) + ' chars)' : 'show less';
    });
    box.appendChild(b);
    return box;
  }

  function fail(msg) {
    app.textContent = '';
    add(app, h('p', 'fatal', msg));
  }

  if (data.version !== 1) {
    fail('This page holds data of format version ' + data.version + '; its script reads version 1.');
    return;
  }
  if (data.compare) renderCompare(data.compare); else renderSession(data.session);
  // data-ready: drawn (ms since the navigation started); data-painted: the
  // frame after it. Tests and the benchmark wait for them.
  document.body.setAttribute('data-ready', performance.now().toFixed(1));
  requestAnimationFrame(function () {
    setTimeout(function () { document.body.setAttribute('data-painted', performance.now().toFixed(1)); }, 0);
  });

  // ---- one session ----

  function renderSession(S) {
    var sum = S.summary, hd = S.header, evs = S.events, calls = S.calls;
    var bySeq = {}, marksAt = {};
    evs.forEach(function (e, i) { bySeq[e.seq] = i; });
    S.marks.forEach(function (m) { (marksAt[m.seq] = marksAt[m.seq] || []).push(m); });
    var t0 = Date.parse(sum.started);

    // header
    var head = h('header', 'head');
    add(head, add(h('h1'), vis(sum.name) || '(unnamed session)', ' ', h('code', 'sid', vis(sum.session_id))));
    var dl = h('dl', 'figures');
    function fig(k, label, value, cls) {
      var d = h('div', 'fig ' + (cls || ''));
      d.dataset.k = k;
      add(d, h('dt', '', label), typeof value === 'object' ? add(h('dd'), value) : h('dd', '', value));
      dl.appendChild(d);
    }
    var now = pm(sum.provider, sum.model);
    var model = hd.pinned_provider || hd.pinned_model ? pm(hd.pinned_provider, hd.pinned_model) : now;
    if (now !== model) model += ' → now ' + now;
    fig('status', 'status', vis(sum.status) + (sum.torn ? ' (torn tail)' : ''), 'st-' + sum.status);
    fig('model', 'pinned model', model);
    var nr = 'not recorded by the source';
    fig('duration', 'duration', hd.no_times ? nr : dur(hd.duration_ms));
    fig('events', 'events', num(sum.events));
    fig('turns', 'turns', num(hd.turns));
    fig('tool_calls', 'tool calls', num(sum.tool_calls));
    fig('errors', 'errors', num(sum.errors), sum.errors ? 'bad' : '');
    fig('tokens', 'tokens', hd.no_usage ? nr : num(sum.input_tokens + sum.output_tokens) + ' (in ' + num(sum.input_tokens) + ', out ' + num(sum.output_tokens) + ')');
    fig('cost', 'cost', hd.no_usage ? nr : usd(sum.cost_usd));
    fig('compactions', 'compactions', num(hd.compactions));
    fig('source', 'source', hd.source);
    fig('started', hd.no_times ? 'started (the file\'s last write)' : 'started', when(sum.started));
    if (sum.ended && sum.ended.indexOf('0001-') !== 0) fig('ended', 'ended', when(sum.ended));
    fig('exit', 'exit', hd.exit, 'wide');
    if (hd.grants && hd.grants.length) fig('grants', 'granted for the session', hd.grants.join(', '), 'wide');
    head.appendChild(dl);
    var rel = h('p', 'rel');
    if (hd.parent) add(rel, 'fork of ', link(hd.parent.id, hd.parent.href, 'its view'), ' at seq ' + hd.forked_from + '. ');
    if (hd.children && hd.children.length) {
      add(rel, 'children: ');
      hd.children.forEach(function (c, i) { add(rel, i ? ', ' : '', link(c.id, c.href, 'its view')); });
      add(rel, '. ');
    }
    if (hd.forks && hd.forks.length) {
      add(rel, 'forks: ');
      hd.forks.forEach(function (f, i) { add(rel, i ? ', ' : '', link(f.id, f.href, 'its view'), ' (at seq ' + f.at + ')'); });
      add(rel, '. ');
    }
    if (rel.firstChild) head.appendChild(rel);
    var meta = h('p', 'meta');
    add(meta, hd.origin ? 'read from ' + hd.origin + '. ' : '', hd.spec_path ? 'spec ' + hd.spec_path + ' ' : '',
      hd.spec_hash ? '(' + hd.spec_hash.slice(0, 19) + ') ' : '', hd.agentctl_version ? 'recorded by agentctl ' + hd.agentctl_version + '. ' : '',
      hd.clipped ? hd.clipped + ' long strings are cut to ' + num(hd.max_text) + ' bytes in this page (agentctl show --json has them whole). ' : '',
      hd.artifact_note || '');
    head.appendChild(meta);
    app.appendChild(head);

    // diagnose findings
    var fs = h('section', 'findings');
    fs.id = 'findings';
    add(fs, h('h2', '', 'Diagnosis'));
    if (!S.findings.length) add(fs, h('p', 'none', 'No findings were given.'));
    var ul = h('ul');
    S.findings.forEach(function (f) {
      var li = h('li', 'finding f-' + f.kind);
      add(li, h('span', 'fkind', f.kind), ' ', h('span', 'ftext', f.text));
      if (f.seqs.length) {
        var cites = h('span', 'cites', ' seq ');
        var cite = function (from, to) {
          for (var i = from; i < to; i++) {
            var a = h('a', 'cite', String(f.seqs[i]));
            a.setAttribute('href', '#e' + f.seqs[i]);
            add(cites, i ? ', ' : '', a);
          }
        };
        cite(0, Math.min(f.seqs.length, 12));
        if (f.seqs.length > 12) {
          var mb = h('button', 'more', '+' + num(f.seqs.length - 12) + ' more');
          mb.type = 'button';
          mb.addEventListener('click', function () { mb.remove(); cite(12, f.seqs.length); });
          add(cites, ' ', mb);
        }
        li.appendChild(cites);
      }
      ul.appendChild(li);
    });
    fs.appendChild(ul);
    app.appendChild(fs);

    if (hd.goal) {
      var g = h('section', 'goal');
      add(g, h('h2', '', 'Goal (the first user message, pinned verbatim through compactions)'), longText(hd.goal));
      app.appendChild(g);
    }

    if (hd.no_usage) {
      var nc = h('section', 'chart');
      nc.id = 'chart';
      add(nc, h('h2', '', 'Tokens and cost'), h('p', 'rel', 'Not recorded: the source (' + vis(hd.source) + ') holds no token counts, and so no cost.'));
      app.appendChild(nc);
    } else {
      app.appendChild(chart(evs, S.marks));
    }

    // timeline
    var tl = h('section', 'timeline');
    add(tl, h('h2', '', 'Timeline'));
    if (hd.omitted) {
      var om = hd.omitted;
      add(tl, h('p', 'omitted', num(om.count) + ' events (seqs ' + om.from_seq + ' to ' + om.to_seq + ') are not in this page, which shows the first ' +
        num(om.head) + ' and the last ' + num(om.tail) + ' of ' + num(sum.events) + '. The figures above count them all; agentctl show ' + sum.session_id + ' lists every event.'));
    }
    var bar = h('div', 'bar');
    var count = h('span', 'count');
    var probs = h('input');
    probs.type = 'checkbox';
    probs.id = 'problems';
    var plabel = h('label', '', ' problems only');
    plabel.htmlFor = 'problems';
    var goto = h('input');
    goto.type = 'number';
    goto.placeholder = 'seq';
    goto.id = 'goto';
    var gob = h('button', '', 'go');
    gob.type = 'button';
    add(bar, count, ' ', probs, plabel, ' ', goto, gob);
    tl.appendChild(bar);
    var rows = h('div', 'rows');
    rows.id = 'rows';
    var sentinel = h('div', 'sentinel', ' ');
    add(tl, rows, sentinel);
    app.appendChild(tl);

    var list = [], drawn = 0;
    function reset(problemsOnly) {
      list = [];
      for (var i = 0; i < evs.length; i++) {
        if (!problemsOnly || evs[i].lvl || marksAt[evs[i].seq]) list.push(i);
      }
      drawn = 0;
      rows.textContent = '';
      more(CHUNK);
    }
    function more(n) {
      var end = Math.min(list.length, drawn + n);
      var frag = document.createDocumentFragment();
      for (; drawn < end; drawn++) frag.appendChild(row(evs[list[drawn]]));
      rows.appendChild(frag);
      count.textContent = num(sum.events) + ' events; ' + num(drawn) + ' of ' + num(list.length) + ' drawn';
      count.dataset.drawn = drawn;
      if (drawn < list.length && io) { io.unobserve(sentinel); io.observe(sentinel); }
    }
    var io = window.IntersectionObserver ? new IntersectionObserver(function (ents) {
      if (ents.some(function (x) { return x.isIntersecting; })) more(CHUNK);
    }, { rootMargin: '1000px' }) : null;

    function jump(seq) {
      seq = Number(seq);
      if (!(seq in bySeq)) return false;
      var pos = list.indexOf(bySeq[seq]);
      if (pos < 0) { probs.checked = false; reset(false); pos = bySeq[seq]; }
      if (pos >= drawn) more(pos - drawn + CHUNK);
      var el = document.getElementById('e' + seq);
      el.scrollIntoView({ block: 'center' });
      var old = document.querySelector('.ev.target');
      if (old) old.classList.remove('target');
      el.classList.add('target');
      return true;
    }
    app.addEventListener('click', function (ev) {
      var a = ev.target.closest ? ev.target.closest('a[href^="#e"]') : null;
      if (!a) return;
      if (jump(a.getAttribute('href').slice(2))) {
        ev.preventDefault();
        history.replaceState(null, '', a.getAttribute('href'));
      }
    });
    probs.addEventListener('change', function () { reset(probs.checked); });
    function go() { if (!jump(goto.value)) goto.classList.add('bad'); else goto.classList.remove('bad'); }
    gob.addEventListener('click', go);
    goto.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') go(); });
    window.addEventListener('hashchange', function () {
      var m = /^#e(\d+)$/.exec(location.hash);
      if (m) jump(m[1]);
    });

    function seqLink(q, text) {
      var a = h('a', 'seqlink', text || 'seq ' + q);
      a.setAttribute('href', '#e' + q);
      return a;
    }
    function callText(c) { return c.tool + '(' + oneLine(c.args, 100) + ')'; }
    function callToggle(ci) {
      var c = calls[ci - 1];
      var wrap = h('div', 'call');
      var b = h('button', 'call-toggle o-' + c.outcome);
      b.type = 'button';
      add(b, '→ ', callText(c), ' ', h('span', 'badge', c.outcome));
      b.addEventListener('click', function () {
        var card = wrap.querySelector('.call-card');
        if (card) { card.remove(); b.classList.remove('open'); return; }
        b.classList.add('open');
        wrap.appendChild(callCard(c));
      });
      wrap.appendChild(b);
      return wrap;
    }
    function callCard(c) {
      var card = h('div', 'call-card');
      add(card, h('div', 'cc-title', 'call ' + c.id + (c.turn ? ' · turn ' + c.turn : '') + ' · ' + c.outcome +
        (c.latency_ms ? ' · ' + c.latency_ms + ' ms' : '')));
      var args = c.args;
      try { args = JSON.stringify(JSON.parse(c.args), null, 2); } catch (e) { /* cut or not JSON: as recorded */ }
      add(card, h('div', 'cc-label', 'arguments'), longText(args, 'args'));
      var steps = h('ul', 'steps');
      function step(q, what) { if (q) add(steps, add(h('li'), seqLink(q), ' ', what)); }
      step(c.request, 'requested by the model');
      step(c.approval, 'waited for approval');
      step(c.decision, c.denied ? 'denied' : 'granted, scope ' + c.granted);
      step(c.intent, 'dispatched' + (c.idempotency_key ? ' (key ' + c.idempotency_key + ')' : ''));
      step(c.result, 'result');
      step(c.reconciled, 'reconciled' + (c.needs_human ? ': needs a human' : ''));
      card.appendChild(steps);
      var end = c.reconciled > c.result ? c.reconciled : c.result;
      if (end && end in bySeq) {
        var r = evs[bySeq[end]];
        if (r.error) add(card, h('div', 'cc-label', 'error'), longText(r.error, 'err'));
        if (r.output) add(card, h('div', 'cc-label', 'output'), longText(r.output, 'out'));
      }
      return card;
    }

    function row(e) {
      var r = h('div', 'ev k-' + e.kind + (e.lvl ? ' lvl-' + e.lvl : ''));
      r.id = 'e' + e.seq;
      r.dataset.seq = e.seq;
      var hd0 = h('div', 'ev-head');
      var t = new Date(t0 + e.ms);
      add(hd0, seqLink(e.seq, String(e.seq)), h('span', 'ts', isNaN(t) ? '' : t.toISOString().slice(11, 23)), h('span', 'kind', e.kind));
      // An error is highlighted already; the other marks say what the row cannot.
      (marksAt[e.seq] || []).forEach(function (m) { if (m.kind !== 'error') add(hd0, h('span', 'mark m-' + m.kind, m.label)); });
      r.appendChild(hd0);
      var b = h('div', 'ev-body');
      body(e, b);
      if (b.firstChild) r.appendChild(b);
      return r;
    }

    function body(e, b) {
      switch (e.kind) {
        case 'session_started':
          add(b, (e.name || '-') + ' on ' + pm(e.provider, e.model));
          if (e.parent_id) add(b, ' · forked from ', link(e.parent_id, hd.parent && hd.parent.href), ' at seq ' + e.forked_from);
          break;
        case 'user_message':
          add(b, longText(e.text, 'user'));
          break;
        case 'assistant_message':
          add(b, h('span', 'turn', 'turn ' + e.turn));
          if (e.refusal) add(b, h('div', 'refusal', 'refused: '), longText(e.refusal, 'refusal'));
          if (e.text) add(b, longText(e.text, 'said'));
          if (e.finish_reason) add(b, h('div', 'note', e.finish_reason === 'length' ? 'cut at the output cap (finish_reason length)' : 'finish_reason ' + e.finish_reason));
          (e.calls || []).forEach(function (ci) { if (ci) b.appendChild(callToggle(ci)); });
          break;
        case 'model_call':
          var p = [pm(e.provider, e.model), 'in ' + num(e.in)];
          if (e.cache_read || e.cache_write) p.push('cache read ' + num(e.cache_read) + ', write ' + num(e.cache_write));
          p.push('out ' + num(e.out));
          if (e.cost) p.push(usd(e.cost));
          if (e.latency_ms) p.push(e.latency_ms + ' ms');
          if (e.attempt) p.push('attempt ' + e.attempt);
          if (e.purpose) p.push(e.purpose);
          if (e.finish_reason) p.push(e.finish_reason);
          if (e.error_type) p.push(e.error_type);
          add(b, h('span', 'mc', p.join(' · ')));
          if (e.error) add(b, h('div', 'err', 'error: ' + e.error));
          if (e.text) add(b, h('div', 'note', 'streamed before the failure:'), longText(e.text));
          break;
        case 'tool_intent':
          if (e.call) b.appendChild(callToggle(e.call)); else add(b, e.tool + '(' + oneLine(e.args, 100) + ')');
          break;
        case 'tool_result':
          add(b, h('span', 'badge s-' + e.status, e.status), ' ', e.tool, ' [' + e.call_id + ']', e.latency_ms ? ' · ' + e.latency_ms + ' ms' : '');
          if (e.error) add(b, h('div', 'err', e.error));
          if (e.output) add(b, longText(e.output, 'out'));
          if (e.artifact) add(b, h('div', 'note', 'whole output: '), link(e.artifact, e.artifact_href, 'the whole output'));
          if (e.call && !calls[e.call - 1].intent) add(b, callToggle(e.call)); // an imported call has no intent row
          break;
        case 'approval_request':
          add(b, h('span', 'badge s-wait', 'waits for a human'), ' ', e.reason);
          if (e.call) add(b, callToggle(e.call));
          break;
        case 'approval_granted':
          add(b, h('span', 'badge s-ok', 'granted'), ' ', e.tool, ' [' + e.call_id + '] scope ' + (e.scope || '-'),
            e.scope === 'session' ? ' (' + e.tool + ' runs without asking for the rest of the session)' : ' (this call only)');
          break;
        case 'approval_denied':
          add(b, h('span', 'badge s-denied', 'denied'), ' ', e.tool, ' [' + e.call_id + '] ', e.reason);
          break;
        case 'compaction':
          add(b, 'replaces every event up to seq ', seqLink(e.through, String(e.through)),
            e.sources ? ' (summarized from ' + num(e.sources) + (e.sources === 1 ? ' event)' : ' events)') : '');
          add(b, h('div', 'cc-label', 'summary'), longText(e.summary, 'summary'));
          if (hd.goal) add(b, h('div', 'cc-label', 'pinned goal, sent verbatim after the summary'), longText(hd.goal, 'goal'));
          break;
        case 'interrupted':
          add(b, 'interrupted (' + (e.reason || '?') + ')');
          if (e.text) add(b, h('div', 'note', 'partial text:'), longText(e.text));
          break;
        case 'reconciled':
          add(b, h('span', 'badge o-' + e.outcome, e.outcome), ' ', e.tool, ' [' + e.call_id + '] ', e.reason);
          if (e.output) add(b, longText(e.output, 'out'));
          if (e.call) add(b, callToggle(e.call));
          break;
        case 'budget_exceeded':
          add(b, h('div', 'err', e.reason));
          break;
        case 'evaluation':
          add(b, h('span', 'badge o-' + e.outcome, e.outcome));
          if (e.evidence) add(b, longText(e.evidence, 'evidence'));
          break;
        case 'subagent_started':
        case 'subagent_finished':
          if (e.child) add(b, 'child ', link(e.child.id, e.child.href, 'its view'));
          if (e.output) add(b, longText(e.output, 'out'));
          break;
        case 'model_changed':
          add(b, 'now ' + pm(e.provider, e.model) + ' · ' + e.reason);
          break;
        case 'spec_changed':
          add(b, 'now ' + e.spec_path + ' · ' + e.reason);
          break;
        case 'error':
          add(b, h('div', 'err', (e.reason ? e.reason + ': ' : '') + e.error + (e.error_type ? ' (' + e.error_type + ')' : '')));
          break;
        case 'session_finished':
          add(b, h('span', 'badge st-' + e.status, e.status), ' ', e.reason);
          break;
        default:
          add(b, h('div', 'note', 'a kind this version of agentctl does not know, as recorded:'), longText(e.raw));
      }
    }

    reset(false);
    var m = /^#e(\d+)$/.exec(location.hash);
    if (m) jump(m[1]);
  }

  // chart draws cumulative tokens and cost over the session's seqs, with a
  // line at each mark.
  function chart(evs, marks) {
    var sec = h('section', 'chart');
    sec.id = 'chart';
    add(sec, h('h2', '', 'Tokens and cost'));
    var W = 1000, H = 200, L = 60, R = 60, T = 10, B = 24;
    var last = evs.length ? evs[evs.length - 1].seq : 1;
    var tok = 0, cost = 0, pts = [[evs.length ? evs[0].seq : 0, 0, 0]];
    evs.forEach(function (e) {
      if (e.kind !== 'model_call') return;
      tok += (e.in || 0) + (e.out || 0);
      cost += e.cost || 0;
      pts.push([e.seq, tok, cost]);
    });
    pts.push([last, tok, cost]);
    var step = Math.max(1, Math.floor(pts.length / 1500));
    var x = function (q) { return L + (W - L - R) * (q - 1) / Math.max(1, last - 1); };
    var yt = function (v) { return H - B - (H - B - T) * v / Math.max(1, tok); };
    var yc = function (v) { return H - B - (H - B - T) * v / (cost || 1); };
    var svg = s('svg', { viewBox: '0 0 ' + W + ' ' + H, 'class': 'plot', role: 'img' });
    add(svg, s('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, 'class': 'axis' }));
    function poly(fy, idx, cls) {
      var out = [];
      for (var i = 0; i < pts.length; i += step) out.push(x(pts[i][0]).toFixed(1) + ',' + fy(pts[i][idx]).toFixed(1));
      var l = pts[pts.length - 1];
      out.push(x(l[0]).toFixed(1) + ',' + fy(l[idx]).toFixed(1));
      return s('polyline', { points: out.join(' '), 'class': cls });
    }
    svg.appendChild(poly(yt, 1, 'tok'));
    if (cost > 0) svg.appendChild(poly(yc, 2, 'cost'));
    marks.forEach(function (m) {
      if (['compaction', 'error', 'resume', 'crash', 'interrupted', 'fork'].indexOf(m.kind) < 0) return;
      var a = s('a', { href: '#e' + m.seq, 'class': 'mk m-' + m.kind });
      var ln = s('line', { x1: x(m.seq), x2: x(m.seq), y1: T, y2: H - B });
      var tt = s('title', {});
      tt.textContent = 'seq ' + m.seq + ': ' + m.label;
      add(ln, tt);
      add(a, ln);
      svg.appendChild(a);
    });
    function label(xx, yy, t, anchor, cls) {
      var e = s('text', { x: xx, y: yy, 'text-anchor': anchor, 'class': cls || 'lbl' });
      e.textContent = t;
      svg.appendChild(e);
    }
    label(L - 6, T + 10, num(tok), 'end', 'lbl tokl');
    label(L - 6, H - B, '0', 'end');
    if (cost > 0) label(W - R + 6, T + 10, usd(cost), 'start', 'lbl costl');
    label(L, H - 6, 'seq 1', 'start');
    label(W - R, H - 6, 'seq ' + last, 'end');
    sec.appendChild(svg);
    var leg = h('p', 'legend');
    add(leg, h('span', 'lg tok', 'cumulative tokens'), ' ', cost > 0 ? h('span', 'lg cost', 'cumulative cost') : '', ' ',
      h('span', 'lg m-compaction', 'compaction'), ' ', h('span', 'lg m-error', 'error'), ' ',
      h('span', 'lg m-resume', 'resume'), ' ', h('span', 'lg m-crash', 'crash'), ' ', h('span', 'lg m-interrupted', 'interruption'));
    sec.appendChild(leg);
    return sec;
  }

  // ---- two sessions compared ----

  function renderCompare(C) {
    var head = h('header', 'head');
    add(head, h('h1', '', 'Compare: A ' + vis(C.a.summary.session_id) + ' · B ' + vis(C.b.summary.session_id)));
    var sides = h('div', 'sides');
    [['A', C.a], ['B', C.b]].forEach(function (p) {
      var sm = p[1].summary, box = h('div', 'side');
      box.dataset.side = p[0];
      add(box, h('h2', '', p[0] + ': '), link(vis(sm.session_id), p[1].href, 'its view'));
      add(box, h('p', '', (vis(sm.name) || '-') + ' · ' + pm(sm.provider, sm.model)),
        h('p', 'st-' + sm.status, 'status ' + vis(sm.status)),
        h('p', '', num(sm.events) + ' events · ' + num(sm.tool_calls) + ' tool calls · ' + num(sm.input_tokens + sm.output_tokens) + ' tokens · ' + usd(sm.cost_usd)));
      sides.appendChild(box);
    });
    head.appendChild(sides);
    if (C.relation) add(head, h('p', 'rel', C.relation));
    var banner = h('p', 'banner');
    banner.id = 'verdict';
    if (C.first_diff) {
      var r = C.rows[C.first_diff - 1];
      var a = h('a', '', 'turn ' + C.first_diff);
      a.setAttribute('href', '#t' + C.first_diff);
      add(banner, 'First difference at ', a, ': ' + r.differ.join(', ') + '.');
      banner.classList.add('differ');
    } else {
      add(banner, 'The turns agree' + (C.same ? ', and so do the final statuses.' : '; the final statuses differ: ' + C.a.summary.status + ' vs ' + C.b.summary.status + '.'));
    }
    head.appendChild(banner);
    app.appendChild(head);

    var table = h('table', 'cmp');
    add(table, add(h('thead'), add(h('tr'), h('th', '', 'turn'), h('th', '', 'A'), h('th', '', 'B'))));
    var tb = h('tbody');
    table.appendChild(tb);
    app.appendChild(table);
    var sentinel = h('div', 'sentinel', ' ');
    app.appendChild(sentinel);
    var drawn = 0;
    function cell(t, diff) {
      var td = h('td');
      if (!t) { add(td, h('span', 'none', '(no such turn)')); return td; }
      add(td, h('div', 'seq', 'seq ' + t.seq));
      if (t.text) add(td, longText(t.text, 'said' + (diff.indexOf('text') >= 0 ? ' d' : '')));
      var ol = h('ol', 'calls' + (diff.indexOf('calls') >= 0 || diff.indexOf('results') >= 0 ? ' d' : ''));
      t.calls.forEach(function (c, i) { add(ol, add(h('li'), h('code', '', clip(c, 300)), ' → ', h('span', 'res', t.results[i]))); });
      if (t.calls.length) td.appendChild(ol);
      add(td, h('div', 'tk' + (diff.indexOf('tokens') >= 0 || diff.indexOf('cost') >= 0 ? ' d' : ''), 'in ' + num(t.in) + ' · out ' + num(t.out) + ' · ' + usd(t.cost)));
      return td;
    }
    function more(n) {
      var end = Math.min(C.rows.length, drawn + n);
      var frag = document.createDocumentFragment();
      for (; drawn < end; drawn++) {
        var r = C.rows[drawn], tr = h('tr', r.differ.length ? 'diff' : '');
        tr.id = 't' + r.turn;
        if (r.turn === C.first_diff) tr.classList.add('first');
        add(tr, add(h('td', 'tn'), String(r.turn), r.differ.length ? h('div', 'differ', r.differ.join(', ')) : ''), cell(r.a, r.differ), cell(r.b, r.differ));
        frag.appendChild(tr);
      }
      tb.appendChild(frag);
      if (drawn < C.rows.length && io) { io.unobserve(sentinel); io.observe(sentinel); }
    }
    var io = window.IntersectionObserver ? new IntersectionObserver(function (ents) {
      if (ents.some(function (x) { return x.isIntersecting; })) more(CHUNK);
    }, { rootMargin: '1000px' }) : null;
    app.addEventListener('click', function (ev) {
      var a = ev.target.closest ? ev.target.closest('a[href^="#t"]') : null;
      if (!a) return;
      var n = Number(a.getAttribute('href').slice(2));
      if (n > drawn) more(n - drawn + CHUNK);
      var el = document.getElementById('t' + n);
      if (!el) return;
      ev.preventDefault();
      el.scrollIntoView({ block: 'center' });
      history.replaceState(null, '', '#t' + n);
    });
    more(Math.max(CHUNK, C.first_diff + 20));
  }
})();
