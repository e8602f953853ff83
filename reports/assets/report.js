// faultline report: draws the timeline, latency and throughput charts from the data embedded in #report-data.
// Everything is drawn on canvas; at low zoom each pixel column aggregates the operations under it, so a
// 1,000,000-op history stays interactive. No network access: this file is inlined in the page.
(function () {
  'use strict';
  var statusEl = document.getElementById('render-status');
  var errorsEl = document.getElementById('render-errors');
  var errors = [];
  function recordError(message) {
    errors.push(message);
    errorsEl.textContent = errors.join('\n');
    errorsEl.hidden = false;
    statusEl.textContent = 'error: ' + errors[0];
    statusEl.setAttribute('data-status', 'error');
  }
  window.addEventListener('error', function (e) { recordError(String(e.message || e.error || e)); });

  var COLORS = { ok: '#3b82f6', fail: '#f472b6', info: '#f59e0b', open: '#9ca3af' };
  var OUTCOMES = ['ok', 'fail', 'info', 'open'];
  var BAND = {
    kill: 'rgba(220,38,38,0.10)', pause: 'rgba(124,58,237,0.10)', crash: 'rgba(185,28,28,0.16)', clock: 'rgba(202,138,4,0.12)',
    refused: 'rgba(185,28,28,0.16)', 'restart-all': 'rgba(100,116,139,0.14)',
    partition: 'rgba(2,132,199,0.10)', link: 'rgba(13,148,136,0.10)', 'power-loss': 'rgba(234,88,12,0.14)',
    stop: 'rgba(71,85,105,0.12)', corrupt: 'rgba(190,18,60,0.16)', membership: 'rgba(22,163,74,0.12)',
    'non-member': 'rgba(0,0,0,0)'
  };
  var BAR = {
    kill: '#dc2626', pause: '#7c3aed', crash: '#7f1d1d', refused: '#7f1d1d', 'restart-all': '#64748b', clock: '#ca8a04',
    partition: '#0284c7', link: '#0d9488', 'power-loss': '#ea580c', stop: '#475569', corrupt: '#be123c',
    membership: '#16a34a', 'non-member': '#cbd5e1'
  };
  var SEV = { bad: '#b91c1c', warn: '#d97706', ok: '#15803d', info: '#6b7280' };
  var MARGIN_L = 64, MARGIN_R = 14;

  // ---- data ----
  function bytesOf(b64) {
    var bin = atob(b64), n = bin.length, out = new Uint8Array(n);
    for (var i = 0; i < n; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function varints(b64, n) {
    var bytes = bytesOf(b64), out = new Float64Array(n), p = 0;
    for (var i = 0; i < n; i++) {
      var v = 0, mul = 1, b;
      do { b = bytes[p++]; v += (b & 127) * mul; mul *= 128; } while (b & 128);
      out[i] = v;
    }
    return out;
  }
  function unzig(v) { return v % 2 === 0 ? v / 2 : -(v + 1) / 2; }

  function decodeOps(d) {
    var c = d.ops, n = c.n;
    var startD = varints(c.start, n), dur = varints(c.dur, n), code = bytesOf(c.code);
    var key = varints(c.key, n), procD = varints(c.proc, n), node = bytesOf(c.node);
    var idxD = varints(c.idx, n), err = varints(c.err, n);
    var start = new Float64Array(n), end = new Float64Array(n), proc = new Float64Array(n), idx = new Float64Array(n);
    var laneStart = new Int32Array(c.lane_counts.length + 1), laneMaxDur = new Float64Array(c.lane_counts.length);
    var i = 0;
    for (var l = 0; l < c.lane_counts.length; l++) {
      laneStart[l] = i;
      var t = 0, p = 0, x = 0, maxDur = 0;
      for (var k = 0; k < c.lane_counts[l]; k++, i++) {
        t += startD[i]; p += unzig(procD[i]); x += unzig(idxD[i]);
        start[i] = t / 1000; proc[i] = p; idx[i] = x;
        var open = (code[i] & 3) === 3;
        end[i] = open ? d.end_ms : (t + dur[i]) / 1000;
        if (end[i] - start[i] > maxDur) maxDur = end[i] - start[i];
      }
      laneMaxDur[l] = maxDur;
    }
    laneStart[c.lane_counts.length] = i;
    return { n: n, start: start, end: end, code: code, key: key, proc: proc, node: node, idx: idx, err: err,
      laneStart: laneStart, laneMaxDur: laneMaxDur };
  }

  // First op of lane l whose start is >= t.
  function lowerBound(ops, l, t) {
    var lo = ops.laneStart[l], hi = ops.laneStart[l + 1];
    while (lo < hi) { var mid = (lo + hi) >> 1; if (ops.start[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  // Ops of lane l that may overlap [t0, t1].
  function laneRange(ops, l, t0, t1) {
    return [lowerBound(ops, l, t0 - ops.laneMaxDur[l]), lowerBound(ops, l, t1 + 1e-9)];
  }

  // ---- view ----
  var D, OPS, view, full, charts = [], nodeRows = [], pending = false;
  function xOf(t, w) { return MARGIN_L + (t - view.t0) / (view.t1 - view.t0) * (w - MARGIN_L - MARGIN_R); }
  function tOf(x, w) { return view.t0 + (x - MARGIN_L) / (w - MARGIN_L - MARGIN_R) * (view.t1 - view.t0); }
  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-6))));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= raw) return steps[i] * p;
    return 10 * p;
  }
  // Every time shown is on the phase clock (0 where the fault phase began, the clock of a plan's `at:`); positions
  // stay on the run clock the data is in.
  function clk(ms) { return ms - ((D && D.phase_start_ms) || 0); }
  function secs(ms) { return (clk(ms) / 1000).toFixed(3) + ' s'; }
  function fmtTime(ms, step) {
    var digits = step >= 1000 ? 0 : step >= 100 ? 1 : step >= 10 ? 2 : 3;
    return (ms / 1000).toFixed(digits) + 's';
  }
  function fmtDur(ms) {
    if (ms < 1) return (ms * 1000).toFixed(0) + ' µs';
    if (ms < 1000) return ms.toFixed(ms < 10 ? 2 : 1) + ' ms';
    return (ms / 1000).toFixed(2) + ' s';
  }
  function setView(t0, t1) {
    var span = Math.max(t1 - t0, 0.05);
    if (span >= full.t1 - full.t0) { t0 = full.t0; t1 = full.t1; } else {
      if (t0 < full.t0) { t0 = full.t0; }
      if (t0 + span > full.t1) { t0 = full.t1 - span; }
      t1 = t0 + span;
    }
    view = { t0: t0, t1: t1 };
    document.getElementById('view-range').textContent =
      secs(t0) + ' – ' + secs(t1) + ' (' + fmtDur(t1 - t0) + ')';
    schedule();
  }
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; drawAll(); });
  }

  function prepCanvas(canvas, cssHeight) {
    var dpr = window.devicePixelRatio || 1, w = canvas.parentNode.clientWidth || 1200;
    canvas.style.height = cssHeight + 'px';
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(cssHeight * dpr)) {
      canvas.width = Math.round(w * dpr); canvas.height = Math.round(cssHeight * dpr);
    }
    var ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, cssHeight);
    return { ctx: ctx, w: w, h: cssHeight };
  }

  function drawAxis(ctx, w, y, h) {
    var step = niceStep((view.t1 - view.t0) / Math.max(2, (w - MARGIN_L) / 110));
    ctx.font = '11px system-ui, sans-serif'; ctx.fillStyle = '#6b7280'; ctx.textAlign = 'center';
    ctx.strokeStyle = '#eef0f3'; ctx.lineWidth = 1;
    var zero = view.t0 - clk(view.t0); // the phase clock's zero: ticks fall on its round values
    for (var t = zero + Math.ceil(clk(view.t0) / step) * step; t <= view.t1; t += step) {
      var x = Math.round(xOf(t, w)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(x, y + h); ctx.stroke();
      ctx.fillText(fmtTime(clk(t), step), x, y - 4);
    }
  }

  function shadeFaults(ctx, w, y, h) {
    for (var i = 0; i < D.faults.length; i++) {
      var f = D.faults[i], t1 = f.t1 === null ? full.t1 : f.t1;
      if (t1 < view.t0 || f.t0 > view.t1) continue;
      var x0 = Math.max(MARGIN_L, xOf(f.t0, w)), x1 = Math.min(w - MARGIN_R, xOf(t1, w));
      ctx.fillStyle = BAND[f.kind] || 'rgba(100,116,139,0.12)';
      ctx.fillRect(x0, y, Math.max(1, x1 - x0), h);
    }
  }

  function phaseLines(ctx, w, y, h, labels) {
    var lastEnd = -1e9;
    ctx.font = '10.5px system-ui, sans-serif'; ctx.textAlign = 'left';
    for (var i = 0; i < D.markers.length; i++) {
      var m = D.markers[i];
      if (m.node || m.t < view.t0 || m.t > view.t1) continue;
      var x = Math.round(xOf(m.t, w)) + 0.5;
      ctx.strokeStyle = m.sev === 'bad' ? '#b91c1c' : '#9ca3af'; ctx.setLineDash([3, 3]);
      ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(x, y + h); ctx.stroke(); ctx.setLineDash([]);
      if (labels && x > lastEnd + 4 && x + 3 + ctx.measureText(m.label).width < w) {
        ctx.fillStyle = SEV[m.sev] || '#374151';
        ctx.fillText(m.label, x + 3, y + 10);
        lastEnd = x + 3 + ctx.measureText(m.label).width;
      }
    }
  }

  // ---- timeline ----
  var TL = { axis: 22, phase: 16, nodeH: 18, gap: 8, laneH: 16, obsH: 36 };
  function timelineLayout() {
    var lanes = D.lanes.length;
    TL.laneH = lanes > 40 ? Math.max(5, Math.floor(600 / lanes)) : 16;
    TL.nodesY = TL.axis + TL.phase;
    TL.obsY = TL.nodesY + nodeRows.length * TL.nodeH + (OBS.nodes.length ? TL.gap : 0);
    TL.lanesY = TL.obsY + OBS.nodes.length * TL.obsH + TL.gap;
    TL.h = TL.lanesY + lanes * TL.laneH + 6;
  }

  function drawTimeline(chart) {
    var c = prepCanvas(chart.canvas, TL.h), ctx = c.ctx, w = c.w;
    drawAxis(ctx, w, TL.axis, TL.h - TL.axis);
    shadeFaults(ctx, w, TL.axis, TL.h - TL.axis);
    phaseLines(ctx, w, TL.axis, TL.h - TL.axis, true);
    ctx.font = '11px ui-monospace, monospace'; ctx.textAlign = 'right'; ctx.fillStyle = '#374151';
    for (var r = 0; r < nodeRows.length; r++) ctx.fillText(nodeRows[r], MARGIN_L - 8, TL.nodesY + r * TL.nodeH + 13);
    drawNodeRows(ctx, w);
    drawObservations(ctx, w);
    var drawn = 0;
    for (var l = 0; l < D.lanes.length; l++) {
      var y = TL.lanesY + l * TL.laneH;
      ctx.fillStyle = '#374151'; ctx.textAlign = 'right'; ctx.font = '11px ui-monospace, monospace';
      if (TL.laneH >= 9) ctx.fillText(D.lanes[l].label, MARGIN_L - 8, y + TL.laneH - 4);
      drawn += drawLane(ctx, w, l, y);
    }
    drawTxnMarks(ctx, w);
    return drawn;
  }

  // ---- transactions of reported anomalies (D.txns, absent otherwise): [{t0, t1, lane, label, a, class}] ----
  // Each is outlined in red over its op, labelled `T<index>` when there is room; those of the anomaly last shown from
  // the Transactions section (FOCUS, its anchor) are filled too.
  var FOCUS = null;
  function drawTxnMarks(ctx, w) {
    var marks = D.txns || [];
    ctx.font = 'bold 10px ui-monospace, monospace'; ctx.textAlign = 'left';
    for (var i = 0; i < marks.length; i++) {
      var m = marks[i];
      if (m.t1 < view.t0 || m.t0 > view.t1) continue;
      var y = TL.lanesY + m.lane * TL.laneH, x0 = Math.max(MARGIN_L - 2, xOf(m.t0, w) - 2);
      var x1 = Math.min(w - MARGIN_R + 2, xOf(m.t1, w) + 2), focused = FOCUS === m.a;
      if (focused) { ctx.fillStyle = 'rgba(220,38,38,0.25)'; ctx.fillRect(x0, y, Math.max(4, x1 - x0), TL.laneH - 1); }
      ctx.strokeStyle = '#b91c1c'; ctx.lineWidth = focused ? 2.5 : 1.5;
      ctx.strokeRect(x0, y + 0.5, Math.max(4, x1 - x0), TL.laneH - 2); ctx.lineWidth = 1;
      var tw = ctx.measureText(m.label).width;
      if (TL.laneH >= 9 && (focused || x1 - x0 > tw + 6)) {
        ctx.fillStyle = 'rgba(255,255,255,0.85)'; ctx.fillRect(x0 + 1, y + 1, tw + 4, TL.laneH - 3);
        ctx.fillStyle = '#7f1d1d'; ctx.fillText(m.label, x0 + 3, y + TL.laneH - 4);
      }
    }
  }
  // The marks of lane l around time t (within tol): hover lines and the first one's anchor.
  function hitTxnMarks(l, t, tol) {
    var marks = D.txns || [], lines = [], anchor = null;
    for (var i = 0; i < marks.length; i++) {
      var m = marks[i];
      if (m.lane !== l || t < m.t0 - tol || t > m.t1 + tol) continue;
      lines.push(m.label + ': in ' + m.class + ' #' + m.a.slice(m.a.lastIndexOf('-') + 1));
      anchor = anchor || m.a;
    }
    return lines.length ? { text: lines.join('\n') + '\n(click: the anomaly)', anchor: anchor } : null;
  }

  // ---- observation lanes: per node, durable progress (a step line) over its role (a strip), and drops ----
  // D.obs (absent for a history without observations): nodes[{node, durable[[t, d|null]], roles[[t, role|null, view,
  // primary]], points[{t, d, f, label, index}]}], drops[{node, t0, t1, from, to, sev, label, text}]. A null `d` or
  // `role` means the node stopped there: the line and the strip break until it reports again.
  var OBS = { nodes: [], drops: [] };
  var ROLE = { primary: '#0f766e', backup: '#94a3b8', other: '#c4b5fd' };
  var OBS_STRIP = 5, OBS_PAD = 3;
  // Index of the last row of `rows` (sorted by their time, rows[i][0]) whose time is <= t, or -1.
  function lastAtOrBefore(rows, t) {
    var lo = 0, hi = rows.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (rows[mid][0] <= t) lo = mid + 1; else hi = mid; }
    return lo - 1;
  }
  // The durable range shown: the values visible in the view on every lane (so the lanes compare), never empty.
  function obsRange() {
    var lo = Infinity, hi = -Infinity;
    function take(d) { if (d !== null && d !== undefined) { if (d < lo) lo = d; if (d > hi) hi = d; } }
    for (var n = 0; n < OBS.nodes.length; n++) {
      var rows = OBS.nodes[n].durable, a = Math.max(0, lastAtOrBefore(rows, view.t0)), b = lastAtOrBefore(rows, view.t1);
      for (var i = a; i <= b; i++) take(rows[i][1]);
      var pts = OBS.nodes[n].points;
      for (var j = 0; j < pts.length; j++) if (pts[j].t >= view.t0 && pts[j].t <= view.t1) take(pts[j].d);
    }
    for (var k = 0; k < OBS.drops.length; k++) {
      var dr = OBS.drops[k];
      if (dr.t1 >= view.t0 && dr.t0 <= view.t1) { take(dr.from); take(dr.to); }
    }
    if (lo === Infinity) return { lo: 0, hi: 1 };
    if (hi - lo < 1) { hi = lo + 1; }
    return { lo: lo, hi: hi };
  }

  function drawObservations(ctx, w) {
    if (!OBS.nodes.length) return;
    var range = obsRange(), right = Math.min(w - MARGIN_R, xOf(full.t1, w));
    // The shared scale, once: its top on the first lane, its bottom on the last, left of the node names.
    var last = TL.obsY + OBS.nodes.length * TL.obsH - OBS_PAD;
    ctx.font = '9px ui-monospace, monospace'; ctx.textAlign = 'left'; ctx.fillStyle = '#9ca3af';
    ctx.fillText(String(range.hi), 2, TL.obsY + OBS_STRIP + OBS_PAD + 7);
    ctx.fillText(String(range.lo), 2, last);
    for (var n = 0; n < OBS.nodes.length; n++) {
      var lane = OBS.nodes[n], y = TL.obsY + n * TL.obsH, top = y + OBS_STRIP + OBS_PAD, bottom = y + TL.obsH - OBS_PAD;
      var yOf = function (d) { return bottom - (d - range.lo) / (range.hi - range.lo) * (bottom - top); };
      ctx.font = '11px ui-monospace, monospace'; ctx.textAlign = 'right'; ctx.fillStyle = '#374151';
      ctx.fillText(lane.node, MARGIN_L - 8, y + TL.obsH / 2 + 4);
      ctx.fillStyle = '#f8fafc'; ctx.fillRect(MARGIN_L, top, w - MARGIN_L - MARGIN_R, bottom - top);
      drawLagging(ctx, w, lane.lagging || [], top, bottom);
      drawRoles(ctx, w, lane.roles, y + 1, right);
      drawDurable(ctx, w, lane.durable, yOf, right);
      drawPoints(ctx, w, lane.points, yOf);
      ctx.strokeStyle = '#e5e7eb'; ctx.beginPath(); ctx.moveTo(MARGIN_L, y + TL.obsH - 0.5); ctx.lineTo(w - MARGIN_R, y + TL.obsH - 0.5); ctx.stroke();
    }
    drawDrops(ctx, w, range);
  }

  // Where the node reported itself lagging (behind the highest durable progress by the harness's threshold).
  function drawLagging(ctx, w, spans, top, bottom) {
    ctx.fillStyle = 'rgba(245, 158, 11, 0.22)';
    for (var i = 0; i < spans.length; i++) {
      var s = spans[i];
      if (s[1] < view.t0 || s[0] > view.t1) continue;
      var x0 = Math.max(MARGIN_L, xOf(s[0], w)), x1 = Math.min(w - MARGIN_R, xOf(s[1], w));
      ctx.fillRect(x0, top, Math.max(2, x1 - x0), bottom - top);
    }
  }

  function drawRoles(ctx, w, roles, y, right) {
    var a = Math.max(0, lastAtOrBefore(roles, view.t0)), b = lastAtOrBefore(roles, view.t1);
    for (var i = a; i <= b; i++) {
      var role = roles[i][1];
      if (role === null) continue;
      var x0 = Math.max(MARGIN_L, xOf(roles[i][0], w));
      var x1 = i + 1 < roles.length ? Math.min(right, xOf(roles[i + 1][0], w)) : right;
      ctx.fillStyle = ROLE[role] || ROLE.other;
      ctx.fillRect(x0, y, Math.max(1, x1 - x0), OBS_STRIP);
    }
  }

  // The step line. At most one vertex pair per point in the view; canvas strokes thousands of them cheaply.
  function drawDurable(ctx, w, rows, yOf, right) {
    var a = Math.max(0, lastAtOrBefore(rows, view.t0)), b = Math.min(rows.length - 1, lastAtOrBefore(rows, view.t1) + 1);
    ctx.strokeStyle = '#0f172a'; ctx.lineWidth = 1.5; ctx.beginPath();
    var pen = false, lastY = 0;
    for (var i = a; i <= b; i++) {
      var x = Math.max(MARGIN_L, xOf(rows[i][0], w)), d = rows[i][1];
      if (x > right) break; // the first row after the view: the line runs on to the edge below
      if (d === null) { if (pen) ctx.lineTo(x, lastY); pen = false; continue; }
      var yy = yOf(d);
      if (pen) { ctx.lineTo(x, lastY); ctx.lineTo(x, yy); } else ctx.moveTo(x, yy);
      pen = true; lastY = yy;
    }
    if (pen) ctx.lineTo(right, lastY);
    ctx.stroke(); ctx.lineWidth = 1;
  }

  function drawPoints(ctx, w, points, yOf) {
    for (var i = 0; i < points.length; i++) {
      var p = points[i];
      if (p.d === null || p.t < view.t0 || p.t > view.t1) continue;
      var x = xOf(p.t, w), yy = yOf(p.d);
      ctx.beginPath(); ctx.arc(x, yy, 3, 0, 2 * Math.PI);
      if (p.f === 'recovered') { ctx.fillStyle = '#15803d'; ctx.fill(); }
      else { ctx.fillStyle = '#fff'; ctx.fill(); ctx.strokeStyle = '#0f172a'; ctx.lineWidth = 1.5; ctx.stroke(); ctx.lineWidth = 1; }
    }
  }

  // A drop: dashed from the durable value at the stop to the boot, then a vertical segment down to what the node booted
  // with (at least 8 px, so a small loss on a large scale stays visible), labelled.
  function drawDrops(ctx, w, range) {
    var lastEnd = {};
    for (var i = 0; i < OBS.drops.length; i++) {
      var dr = OBS.drops[i], n = obsIndex(dr.node);
      if (n < 0 || dr.t1 < view.t0 || dr.t0 > view.t1) continue;
      var y = TL.obsY + n * TL.obsH, top = y + OBS_STRIP + OBS_PAD, bottom = y + TL.obsH - OBS_PAD;
      var yOf = function (d) { return bottom - (d - range.lo) / (range.hi - range.lo) * (bottom - top); };
      var x0 = xOf(dr.t0, w), x1 = xOf(dr.t1, w), color = SEV[dr.sev] || SEV.warn;
      var y0 = dr.from === null ? top : yOf(dr.from), y1 = dr.to === null ? bottom : yOf(dr.to);
      if (y1 - y0 < 8) { y0 = Math.max(top - 2, Math.min(y0, bottom - 8)); y1 = Math.min(bottom + 2, y0 + 8); }
      ctx.strokeStyle = color; ctx.lineWidth = 1.5; ctx.setLineDash([3, 2]);
      ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y0); ctx.stroke(); ctx.setLineDash([]);
      ctx.lineWidth = 3; ctx.beginPath(); ctx.moveTo(x1, y0); ctx.lineTo(x1, y1); ctx.stroke(); ctx.lineWidth = 1;
      ctx.fillStyle = color; ctx.beginPath(); ctx.moveTo(x1 - 4, y1 - 4); ctx.lineTo(x1 + 4, y1 - 4); ctx.lineTo(x1, y1 + 2); ctx.fill();
      ctx.font = 'bold 11px system-ui, sans-serif'; ctx.textAlign = 'left';
      var tw = ctx.measureText(dr.label).width, lx = x1 + 5;
      if (lx + tw > w - MARGIN_R) lx = x1 - 5 - tw;
      if (lastEnd[n] !== undefined && lx < lastEnd[n] + 4) continue;
      ctx.fillStyle = 'rgba(255,255,255,0.85)'; ctx.fillRect(lx - 2, top - 1, tw + 4, 13);
      ctx.fillStyle = color; ctx.fillText(dr.label, lx, top + 9);
      lastEnd[n] = lx + tw;
    }
  }

  function obsIndex(node) {
    for (var n = 0; n < OBS.nodes.length; n++) if (OBS.nodes[n].node === node) return n;
    return -1;
  }

  // Hover text on an observation lane: the role and durable value at t, and the points and drops near it.
  function hitObservations(y, t, tol) {
    var n = Math.floor((y - TL.obsY) / TL.obsH), lane = OBS.nodes[n];
    if (!lane) return null;
    var lines = [], target = null, r = lastAtOrBefore(lane.roles, t), d = lastAtOrBefore(lane.durable, t);
    var role = r >= 0 ? lane.roles[r] : null, durable = d >= 0 ? lane.durable[d][1] : null;
    var head = lane.node + ' at ' + secs(t) + ': ';
    if (role && role[1] !== null) {
      head += role[1] + (role[2] !== null ? ', view ' + role[2] : '') + (role[3] !== null ? ', primary ' + role[3] : '');
    } else head += role ? 'stopped' : 'no status yet';
    if (durable !== null) head += ' · durable ' + durable;
    var lag = lane.lagging || [];
    for (var g = 0; g < lag.length; g++) {
      if (t >= lag[g][0] && t <= lag[g][1]) { head += ' · lagging (' + fmtDur(lag[g][1] - lag[g][0]) + ')'; break; }
    }
    lines.push(head);
    for (var i = 0; i < lane.points.length; i++) {
      var p = lane.points[i];
      if (Math.abs(p.t - t) <= tol * 1.5) { lines.push(secs(p.t) + '  ' + p.label); target = target || p; }
    }
    for (var k = 0; k < OBS.drops.length; k++) {
      var dr = OBS.drops[k];
      if (dr.node === lane.node && t >= dr.t0 - tol && t <= dr.t1 + tol * 40) lines.push(dr.label + ': ' + dr.text);
    }
    return { text: lines.join('\n'), index: target && target.index };
  }

  function drawNodeRows(ctx, w) {
    ctx.font = '10.5px system-ui, sans-serif'; ctx.textAlign = 'left';
    for (var i = 0; i < D.faults.length; i++) {
      var f = D.faults[i], t1 = f.t1 === null ? full.t1 : f.t1, r = nodeRows.indexOf(f.node);
      if (r < 0 || t1 < view.t0 || f.t0 > view.t1) continue;
      var x0 = Math.max(MARGIN_L, xOf(f.t0, w)), x1 = Math.min(w - MARGIN_R, xOf(t1, w)), y = TL.nodesY + r * TL.nodeH;
      ctx.fillStyle = BAR[f.kind] || '#64748b';
      ctx.globalAlpha = 0.85; ctx.fillRect(x0, y + 2, Math.max(2, x1 - x0), TL.nodeH - 4); ctx.globalAlpha = 1;
      var label = f.label + (f.t1 === null ? ' (until the end)' : '');
      if (x1 - x0 > ctx.measureText(label).width + 6) {
        ctx.fillStyle = f.kind === 'non-member' ? '#334155' : '#fff'; ctx.fillText(label, x0 + 3, y + 13);
      }
    }
    drawTriggerLinks(ctx, w);
    for (var j = 0; j < D.markers.length; j++) {
      var m = D.markers[j], row = nodeRows.indexOf(m.node);
      if (row < 0 || m.t < view.t0 || m.t > view.t1) continue;
      var x = xOf(m.t, w), yy = TL.nodesY + row * TL.nodeH;
      ctx.fillStyle = SEV[m.sev] || '#6b7280';
      if (m.sev === 'bad') {
        ctx.beginPath(); ctx.moveTo(x - 6, yy + 1); ctx.lineTo(x + 6, yy + 1); ctx.lineTo(x, yy + TL.nodeH - 2); ctx.fill();
      } else if (m.f === 'trigger') {
        // A trigger's condition, observed here: a hollow diamond (filled amber when it fired a fault).
        ctx.beginPath(); ctx.moveTo(x, yy + 3); ctx.lineTo(x + 4, yy + 9); ctx.lineTo(x, yy + 15); ctx.lineTo(x - 4, yy + 9); ctx.closePath();
        if (m.sev === 'warn') { ctx.fill(); } else { ctx.strokeStyle = SEV[m.sev] || '#6b7280'; ctx.lineWidth = 1; ctx.stroke(); }
      } else if (m.f === 'disk-surgery') {
        ctx.beginPath(); ctx.moveTo(x, yy + 2); ctx.lineTo(x + 5, yy + 9); ctx.lineTo(x, yy + 16); ctx.lineTo(x - 5, yy + 9); ctx.fill();
      } else {
        ctx.fillRect(x - 1, yy + 4, 2, TL.nodeH - 8);
      }
    }
  }

  // Each fired trigger: an amber line from its condition (the diamond on the subject's row) to the start of the
  // fault window it caused (on the faulted node's row or the network row), with an arrowhead at the fault.
  function drawTriggerLinks(ctx, w) {
    var links = D.links || [];
    ctx.strokeStyle = '#d97706'; ctx.fillStyle = '#d97706'; ctx.lineWidth = 1.25;
    for (var i = 0; i < links.length; i++) {
      var k = links[i], r0 = nodeRows.indexOf(k.from), r1 = nodeRows.indexOf(k.to);
      if (r0 < 0 || r1 < 0 || k.t1 < view.t0 || k.t0 > view.t1) continue;
      var x0 = xOf(k.t0, w), x1 = xOf(k.t1, w);
      var y0 = TL.nodesY + r0 * TL.nodeH + 9, y1 = TL.nodesY + r1 * TL.nodeH + (r1 === r0 ? 3 : 9);
      if (r1 === r0) y0 = y1; // same row: along the top edge, above the window it leads to
      ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
      var a = Math.atan2(y1 - y0, x1 - x0);
      ctx.beginPath(); ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 6 * Math.cos(a - 0.45), y1 - 6 * Math.sin(a - 0.45));
      ctx.lineTo(x1 - 6 * Math.cos(a + 0.45), y1 - 6 * Math.sin(a + 0.45)); ctx.closePath(); ctx.fill();
    }
    ctx.lineWidth = 1;
  }

  function drawLane(ctx, w, l, y) {
    var range = laneRange(OPS, l, view.t0, view.t1), a = range[0], b = range[1], plotW = w - MARGIN_L - MARGIN_R;
    var h = TL.laneH - 3, top = y + 1;
    if (b - a > plotW * 1.5) {
      // Aggregate: per pixel column, how many ok / fail / info-or-open ops touch it. The column is drawn ok-blue with
      // its fail share (bottom) and info share (top) in proportion, at least 2 px each when present, so clusters of
      // failures stand out and a lone one stays visible.
      var W = Math.ceil(plotW) + 1, bins = new Uint32Array(W * 3);
      var scale = plotW / (view.t1 - view.t0);
      for (var i = a; i < b; i++) {
        if (OPS.end[i] < view.t0) continue;
        var o = Math.min(OPS.code[i] & 3, 2);
        var p0 = Math.max(0, Math.floor((OPS.start[i] - view.t0) * scale));
        var p1 = Math.min(W - 1, Math.floor((OPS.end[i] - view.t0) * scale));
        for (var p = p0; p <= p1; p++) bins[p * 3 + o]++;
      }
      for (var q = 0; q < W; q++) {
        var ok = bins[q * 3], fl = bins[q * 3 + 1], inf = bins[q * 3 + 2], total = ok + fl + inf;
        if (!total) continue;
        var x = MARGIN_L + q;
        var hf = fl ? Math.max(2, h * fl / total) : 0, hi = inf ? Math.max(2, h * inf / total) : 0;
        if (ok) { ctx.fillStyle = COLORS.ok; ctx.fillRect(x, top, 1, h); }
        if (fl) { ctx.fillStyle = COLORS.fail; ctx.fillRect(x, top + h - hf, 1, hf); }
        if (inf) { ctx.fillStyle = COLORS.info; ctx.fillRect(x, top, 1, hi); }
      }
      return b - a;
    }
    ctx.font = '10px ui-monospace, monospace'; ctx.textAlign = 'left';
    for (var k = a; k < b; k++) {
      if (OPS.end[k] < view.t0) continue;
      var x0 = xOf(OPS.start[k], w), x1 = xOf(OPS.end[k], w), wd = Math.max(1, x1 - x0);
      ctx.fillStyle = COLORS[OUTCOMES[OPS.code[k] & 3]];
      ctx.fillRect(x0, top, wd > 3 ? wd - 1 : wd, h);
      if (wd > 60 && h >= 10) {
        var f = D.fs[OPS.code[k] >> 2] || '?', key = OPS.key[k] ? D.keys[OPS.key[k] - 1] : '';
        ctx.fillStyle = '#fff'; ctx.save(); ctx.beginPath(); ctx.rect(x0, top, wd - 2, h); ctx.clip();
        ctx.fillText(f + ' ' + key, x0 + 3, top + h - 3); ctx.restore();
      }
    }
    return b - a;
  }

  // ---- latency and throughput ----
  function drawLatency(chart) {
    var H = 240, c = prepCanvas(chart.canvas, H), ctx = c.ctx, w = c.w, top = 18, bottom = H - 20;
    drawAxis(ctx, w, top, bottom - top);
    shadeFaults(ctx, w, top, bottom - top);
    phaseLines(ctx, w, top, bottom - top, false);
    var lo = 0.01, hi = 10;
    for (var l = 0; l < D.lanes.length; l++) {
      var r = laneRange(OPS, l, view.t0, view.t1);
      for (var i = r[0]; i < r[1]; i++) { var d = OPS.end[i] - OPS.start[i]; if (d > hi) hi = d; }
    }
    var llo = Math.log10(lo), lhi = Math.log10(hi * 1.2);
    function yOf(ms) { return bottom - (Math.log10(Math.max(ms, lo)) - llo) / (lhi - llo) * (bottom - top); }
    ctx.font = '10.5px system-ui, sans-serif'; ctx.textAlign = 'right'; ctx.fillStyle = '#6b7280'; ctx.strokeStyle = '#eef0f3';
    for (var e = Math.ceil(llo); e <= lhi; e++) {
      var yy = Math.round(yOf(Math.pow(10, e))) + 0.5;
      ctx.beginPath(); ctx.moveTo(MARGIN_L, yy); ctx.lineTo(w - MARGIN_R, yy); ctx.stroke();
      ctx.fillText(fmtDur(Math.pow(10, e)), MARGIN_L - 6, yy + 3);
    }
    // Raw points, one pixel each, written straight into the pixel buffer (fast for a million points).
    var dpr = window.devicePixelRatio || 1, img = ctx.getImageData(0, 0, chart.canvas.width, chart.canvas.height);
    var px = img.data, cw = chart.canvas.width, rgb = [[59, 130, 246], [236, 72, 153], [245, 158, 11], [156, 163, 175]];
    var nb = Math.max(10, Math.floor((w - MARGIN_L - MARGIN_R) / 5)), counts = new Int32Array(nb);
    var bw = (view.t1 - view.t0) / nb, total = 0;
    for (var pass = 0; pass < 2; pass++) {
      for (var l2 = 0; l2 < D.lanes.length; l2++) {
        var r2 = laneRange(OPS, l2, view.t0, view.t1);
        for (var j = r2[0]; j < r2[1]; j++) {
          var s = OPS.start[j];
          if (s < view.t0 || s > view.t1) continue;
          var o = OPS.code[j] & 3;
          if ((pass === 0) !== (o === 0)) continue; // ok first, the rest drawn over it
          var dd = OPS.end[j] - s, X = Math.round(xOf(s, w) * dpr), Y = Math.round(yOf(dd) * dpr);
          if (o === 0) { var bi = Math.min(nb - 1, Math.floor((s - view.t0) / bw)); counts[bi]++; total++; }
          for (var dy = 0; dy < 2; dy++) for (var dx = 0; dx < 2; dx++) {
            var yq = Y + dy, xq = X + dx;
            if (xq < 0 || xq >= cw || yq < 0 || yq >= img.height) continue;
            var at = (yq * cw + xq) * 4;
            px[at] = rgb[o][0]; px[at + 1] = rgb[o][1]; px[at + 2] = rgb[o][2]; px[at + 3] = o === 0 ? 150 : 255;
          }
        }
      }
    }
    ctx.putImageData(img, 0, 0);
    // p50 / p99 of ok ops per bucket.
    var offs = new Int32Array(nb + 1);
    for (var b = 0; b < nb; b++) offs[b + 1] = offs[b] + counts[b];
    var vals = new Float64Array(total), fill = offs.slice(0, nb);
    for (var l3 = 0; l3 < D.lanes.length; l3++) {
      var r3 = laneRange(OPS, l3, view.t0, view.t1);
      for (var k = r3[0]; k < r3[1]; k++) {
        var s3 = OPS.start[k];
        if (s3 < view.t0 || s3 > view.t1 || (OPS.code[k] & 3) !== 0) continue;
        vals[fill[Math.min(nb - 1, Math.floor((s3 - view.t0) / bw))]++] = OPS.end[k] - s3;
      }
    }
    var q50 = [], q99 = [];
    for (var b2 = 0; b2 < nb; b2++) {
      if (counts[b2] === 0) { q50.push(null); q99.push(null); continue; }
      var sub = vals.subarray(offs[b2], offs[b2 + 1]); sub.sort();
      q50.push(sub[Math.floor((sub.length - 1) * 0.5)]); q99.push(sub[Math.floor((sub.length - 1) * 0.99)]);
    }
    function line(qs, color, width) {
      ctx.strokeStyle = color; ctx.lineWidth = width; ctx.beginPath();
      var pen = false;
      for (var i = 0; i < nb; i++) {
        if (qs[i] === null) { pen = false; continue; }
        var x = xOf(view.t0 + (i + 0.5) * bw, w), y = yOf(qs[i]);
        if (pen) ctx.lineTo(x, y); else ctx.moveTo(x, y);
        pen = true;
      }
      ctx.stroke(); ctx.lineWidth = 1;
    }
    line(q99, '#7c2d12', 2); line(q50, '#0f172a', 2);
  }

  function drawThroughput(chart) {
    var H = 150, c = prepCanvas(chart.canvas, H), ctx = c.ctx, w = c.w, top = 18, bottom = H - 20;
    drawAxis(ctx, w, top, bottom - top);
    shadeFaults(ctx, w, top, bottom - top);
    phaseLines(ctx, w, top, bottom - top, false);
    // Buckets at least 6 px and 100 ms wide, so a short run's rate is not dominated by when ops happen to land.
    var nb = Math.max(10, Math.min(Math.floor((w - MARGIN_L - MARGIN_R) / 6), Math.floor((view.t1 - view.t0) / 100)));
    var bw = (view.t1 - view.t0) / nb;
    var per = [new Float64Array(nb), new Float64Array(nb), new Float64Array(nb)];
    for (var l = 0; l < D.lanes.length; l++) {
      var r = laneRange(OPS, l, view.t0, view.t1 + 1e12);
      for (var i = r[0]; i < r[1]; i++) {
        var o = OPS.code[i] & 3, e = OPS.end[i];
        if (o === 3 || e < view.t0 || e >= view.t1) continue;
        per[Math.min(o, 2)][Math.floor((e - view.t0) / bw)]++;
      }
    }
    var max = 1;
    for (var b = 0; b < nb; b++) max = Math.max(max, (per[0][b] + per[1][b] + per[2][b]) / (bw / 1000));
    var step = niceStep(max / 4), yTop = Math.ceil(max / step) * step;
    function yOf(v) { return bottom - v / yTop * (bottom - top); }
    ctx.font = '10.5px system-ui, sans-serif'; ctx.textAlign = 'right'; ctx.fillStyle = '#6b7280'; ctx.strokeStyle = '#eef0f3';
    for (var v = 0; v <= yTop + 1e-9; v += step) {
      var yy = Math.round(yOf(v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(MARGIN_L, yy); ctx.lineTo(w - MARGIN_R, yy); ctx.stroke();
      ctx.fillText(String(Math.round(v * 10) / 10), MARGIN_L - 6, yy + 3);
    }
    var base = new Float64Array(nb), names = ['ok', 'fail', 'info'];
    for (var s = 0; s < 3; s++) {
      ctx.fillStyle = COLORS[names[s]];
      for (var b2 = 0; b2 < nb; b2++) {
        var rate = per[s][b2] / (bw / 1000);
        if (rate <= 0) continue;
        var x0 = xOf(view.t0 + b2 * bw, w), x1 = xOf(view.t0 + (b2 + 1) * bw, w);
        ctx.fillRect(x0, yOf(base[b2] + rate), Math.max(1, x1 - x0 - 0.5), yOf(base[b2]) - yOf(base[b2] + rate));
        base[b2] += rate;
      }
    }
  }

  function drawAll() {
    var drawn = 0;
    for (var i = 0; i < charts.length; i++) {
      var n = charts[i].draw(charts[i]);
      if (charts[i].id === 'timeline') drawn = n;
    }
    return drawn;
  }

  // ---- interaction ----
  var tip = document.getElementById('tooltip');
  function showTip(ev, text) {
    if (!text) { tip.style.display = 'none'; return; }
    tip.textContent = text; tip.style.display = 'block';
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 8) x = ev.clientX - tip.offsetWidth - 10;
    if (y + tip.offsetHeight > window.innerHeight - 8) y = ev.clientY - tip.offsetHeight - 10;
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  }

  function opText(i) {
    var o = OUTCOMES[OPS.code[i] & 3], f = D.fs[OPS.code[i] >> 2] || '?';
    var key = OPS.key[i] ? D.keys[OPS.key[i] - 1] : '', node = OPS.node[i] ? D.nodes[OPS.node[i] - 1] : '?';
    var text = f + (key ? ' ' + key : '') + ' → ' + o + (o === 'open' ? ' (never completed)' : ' in ' + fmtDur(OPS.end[i] - OPS.start[i]));
    text += '\nprocess ' + OPS.proc[i] + ', sent to ' + node + ', invoked at ' + secs(OPS.start[i]);
    text += '\nhistory.jsonl index ' + OPS.idx[i];
    if (OPS.err[i]) text += '\nerror: ' + (D.errors[OPS.err[i] - 1] || '(not embedded)');
    return text;
  }

  function hitTimeline(x, y, w) {
    var t = tOf(x, w), tol = 4 * (view.t1 - view.t0) / (w - MARGIN_L - MARGIN_R);
    if (y >= TL.lanesY) {
      var l = Math.floor((y - TL.lanesY) / TL.laneH);
      if (l < 0 || l >= D.lanes.length) return null;
      var r = laneRange(OPS, l, t - tol, t + tol), best = -1, bestD = Infinity;
      for (var i = r[0]; i < r[1]; i++) {
        var d = t < OPS.start[i] ? OPS.start[i] - t : t > OPS.end[i] ? t - OPS.end[i] : 0;
        if (d < bestD) { bestD = d; best = i; }
      }
      var marked = hitTxnMarks(l, t, tol);
      if (best < 0 || bestD > tol) return marked;
      var hit = { text: D.lanes[l].label + ': ' + opText(best) };
      if (marked) { hit.text += '\n' + marked.text; hit.anchor = marked.anchor; }
      return hit;
    }
    if (OBS.nodes.length && y >= TL.obsY && y < TL.obsY + OBS.nodes.length * TL.obsH) return hitObservations(y, t, tol);
    if (y >= TL.nodesY) {
      var node = nodeRows[Math.floor((y - TL.nodesY) / TL.nodeH)], hits = [], target = null;
      for (var j = 0; j < D.markers.length; j++) {
        var m = D.markers[j];
        if (m.node === node && Math.abs(m.t - t) <= tol * 1.5) { hits.push(secs(m.t) + '  ' + m.label); target = target || m; }
      }
      for (var k = 0; k < D.faults.length; k++) {
        var f = D.faults[k], t1 = f.t1 === null ? full.t1 : f.t1;
        if (f.node === node && t >= f.t0 - tol && t <= t1 + tol) {
          hits.push(f.label + ': ' + secs(f.t0) + ' – ' + (f.t1 === null ? 'end' : secs(t1)) +
            ' (' + fmtDur(t1 - f.t0) + ')' + (f.detail ? '\n  ' + f.detail : ''));
          target = target || { index: f.index };
        }
      }
      return hits.length ? { text: hits.join('\n') + '\n(click: node events and log)', index: target && target.index } : null;
    }
    var phases = [];
    for (var p = 0; p < D.markers.length; p++) {
      var pm = D.markers[p];
      if (!pm.node && Math.abs(pm.t - t) <= tol * 1.5) phases.push(secs(pm.t) + '  ' + pm.label);
    }
    return phases.length ? { text: phases.join('\n') } : null;
  }

  function attach(chart) {
    var canvas = chart.canvas, drag = null;
    canvas.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var w = canvas.clientWidth, t = tOf(ev.offsetX, w), k = Math.exp(ev.deltaY * 0.0015);
      setView(t - (t - view.t0) * k, t + (view.t1 - t) * k);
    }, { passive: false });
    canvas.addEventListener('mousedown', function (ev) {
      drag = { x: ev.clientX, t0: view.t0, t1: view.t1, moved: false }; canvas.classList.add('dragging');
    });
    window.addEventListener('mouseup', function () {
      if (!drag) return;
      canvas.classList.remove('dragging');
      setTimeout(function () { drag = null; }, 0); // the click that follows still sees whether this was a drag
    });
    window.addEventListener('mousemove', function (ev) {
      if (!drag || !(ev.buttons & 1)) return;
      var dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      var dt = dx / (canvas.clientWidth - MARGIN_L - MARGIN_R) * (drag.t1 - drag.t0);
      setView(drag.t0 - dt, drag.t1 - dt);
    });
    canvas.addEventListener('dblclick', function () { setView(full.t0, full.t1); });
    canvas.addEventListener('mousemove', function (ev) {
      if (ev.buttons & 1) { showTip(ev, null); return; }
      var t = tOf(ev.offsetX, canvas.clientWidth), text = null;
      if (chart.id === 'timeline') { var hit = hitTimeline(ev.offsetX, ev.offsetY, canvas.clientWidth); text = hit && hit.text; }
      if (!text && ev.offsetX >= MARGIN_L) {
        var faults = D.faults.filter(function (f) { return t >= f.t0 && t <= (f.t1 === null ? full.t1 : f.t1); })
          .map(function (f) { return f.label; });
        text = secs(t) + (faults.length ? '  during: ' + faults.join(', ') : '');
      }
      showTip(ev, text);
    });
    canvas.addEventListener('mouseleave', function (ev) { showTip(ev, null); });
    canvas.addEventListener('click', function (ev) {
      if (drag && drag.moved) return;
      if (chart.id !== 'timeline') return;
      var hit = hitTimeline(ev.offsetX, ev.offsetY, canvas.clientWidth);
      if (hit && hit.anchor && document.getElementById(hit.anchor)) { location.hash = hit.anchor; return; }
      if (hit && hit.index !== undefined && hit.index !== null) {
        var row = document.getElementById('ev-' + hit.index);
        if (row) { location.hash = 'ev-' + hit.index; }
      }
    });
  }

  function wireControls() {
    document.getElementById('zoom-in').onclick = function () { var m = (view.t0 + view.t1) / 2, s = (view.t1 - view.t0) / 4; setView(m - s, m + s); };
    document.getElementById('zoom-out').onclick = function () { var m = (view.t0 + view.t1) / 2, s = view.t1 - view.t0; setView(m - s, m + s); };
    document.getElementById('zoom-reset').onclick = function () { setView(full.t0, full.t1); };
    var links = document.querySelectorAll('.zoom-link');
    for (var i = 0; i < links.length; i++) {
      links[i].addEventListener('click', function (ev) {
        ev.preventDefault();
        var t0 = parseFloat(this.getAttribute('data-t0')), t1 = parseFloat(this.getAttribute('data-t1'));
        var pad = Math.max((t1 - t0) * 0.15, 50);
        FOCUS = this.getAttribute('data-focus');
        setView(t0 - pad, t1 + pad);
        document.getElementById('timeline').scrollIntoView({ behavior: 'smooth' });
      });
    }
    var copy = document.getElementById('copy-repro');
    if (copy) copy.onclick = function () {
      var text = document.getElementById('repro').textContent;
      if (navigator.clipboard) navigator.clipboard.writeText(text).then(function () { copy.textContent = 'copied'; }, function () {});
      var range = document.createRange(); range.selectNodeContents(document.getElementById('repro'));
      var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
    };
    window.addEventListener('resize', schedule);
  }

  try {
    var started = performance.now();
    D = JSON.parse(document.getElementById('report-data').textContent);
    OPS = decodeOps(D);
    if (D.obs) OBS = D.obs;
    var seen = {};
    D.node_rows.forEach(function (n) { if (!seen[n]) { seen[n] = 1; nodeRows.push(n); } });
    full = { t0: 0, t1: Math.max(D.end_ms, 1) };
    view = { t0: full.t0, t1: full.t1 };
    timelineLayout();
    charts = [
      { id: 'timeline', canvas: document.getElementById('timeline-canvas'), draw: drawTimeline },
      { id: 'latency', canvas: document.getElementById('latency-canvas'), draw: drawLatency },
      { id: 'throughput', canvas: document.getElementById('throughput-canvas'), draw: drawThroughput }
    ];
    charts.forEach(attach);
    wireControls();
    setView(full.t0, full.t1);
    pending = false;
    var drawn = drawAll();
    if (!errors.length) {
      statusEl.textContent = 'ok: ' + D.lanes.length + ' lanes, ' + nodeRows.length + ' node rows, ' + drawn +
        ' ops drawn, ' + D.faults.length + ' fault windows' +
        (OBS.nodes.length ? ', ' + OBS.nodes.length + ' observation lanes, ' + OBS.drops.length + ' drops' : '') +
        (D.txns ? ', ' + D.txns.length + ' anomaly transactions marked' : '') + ', in ' + Math.round(performance.now() - started) + ' ms';
      statusEl.setAttribute('data-status', 'ok');
    }
  } catch (e) {
    recordError(String(e && e.stack || e));
  }
})();
