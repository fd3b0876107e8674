// harness-g browse: draw the page's graph (the JSON in #browse-data) with vis-network (window.vis, inlined).
// One style table (STYLE) draws the nodes and edges and lists them in the legend. When the layout has
// stabilised and been drawn, window.harnessBrowse = {ready, nodes, edges, errors} (read by tests).
(function () {
  'use strict';
  var status = window.harnessBrowse = { ready: false, nodes: 0, edges: 0, errors: [] };
  window.addEventListener('error', function (e) { status.errors.push(String(e.message || e)); });

  var STYLE = {
    groups: {
      paragraph: { legend: 'paragraph (title)', shape: 'box', bg: '#4e79a7', border: '#2e4f73', font: '#ffffff' },
      sentence: { legend: 'sentence (hover: full text)', shape: 'box', bg: '#fdf3c4', border: '#b8960c', font: '#1f2328' },
      entity: { legend: 'entity (lookup-able)', shape: 'dot', bg: '#59a14f', border: '#2f6b28', font: '#1f2328' },
      entity_other: { legend: 'entity, never a LOOKUP target (dates, numbers...)', shape: 'dot', bg: '#bab0ac',
        border: '#7f7773', font: '#57606a' }
    },
    roles: {
      visible: { legend: 'visible in U_0 (first menu: SELECT / ANSWER_WITH)', width: 4, border: '#f28e2b' },
      lookup: { legend: 'LOOKUP target on the first menu (diamond)', shape: 'diamond', size: 16 },
      lookup_result: { legend: 'a LOOKUP would surface it (dashed border)', dashes: [5, 4], width: 3 },
      gold: { legend: 'gold evidence (\u2605, red halo)', width: 3, border: '#d62728', mark: '\u2605 ',
        halo: 'rgba(214, 39, 40, 0.9)' }
    },
    edges: {
      CONTAINS: { legend: 'CONTAINS paragraph \u2192 sentence', color: '#8da0b8', width: 2, arrows: 'to' },
      NEXT: { legend: 'NEXT sentence \u2192 next sentence', color: '#2e4f73', width: 2, arrows: 'to', dashes: [2, 3] },
      MENTIONS: { legend: 'MENTIONS sentence \u2192 entity', color: '#9fcf98', width: 1, arrows: '' },
      SYNONYM: { legend: 'SYNONYM entity \u2194 entity', color: '#b07aa1', width: 2, arrows: '', dashes: [8, 4] },
      SURFACES: { legend: 'menu: LOOKUP target \u2192 sentence it would surface', color: '#f28e2b', width: 1.5,
        arrows: 'to', dashes: [1, 4] }
    }
  };

  function has(node, role) { return node.roles.indexOf(role) >= 0; }

  function visNode(n) {
    var g = STYLE.groups[n.group] || STYLE.groups.sentence, R = STYLE.roles;
    var border = g.border, width = 1, dashes = false, shape = g.shape, size = 10;
    if (has(n, 'lookup_result')) { width = R.lookup_result.width; dashes = R.lookup_result.dashes; border = R.visible.border; }
    if (has(n, 'visible')) { width = R.visible.width; dashes = false; border = R.visible.border; }
    if (has(n, 'lookup')) { shape = R.lookup.shape; size = R.lookup.size; }
    if (n.gold && n.roles.length === 1) { width = R.gold.width; border = R.gold.border; }  // gold the menu misses
    return {
      id: n.id, label: (n.gold ? R.gold.mark : '') + n.label, title: n.text, shape: shape, size: size,
      borderWidth: width, borderWidthSelected: width + 2, shapeProperties: { borderDashes: dashes },
      shadow: n.gold ? { enabled: true, color: R.gold.halo, size: 18, x: 0, y: 0 } : false,
      color: { background: g.bg, border: border, highlight: { background: g.bg, border: '#000000' },
        hover: { background: g.bg, border: '#000000' } },
      font: { color: g.font, size: n.kind === 'paragraph' ? 18 : 15, face: 'system-ui, sans-serif' },
      margin: n.kind === 'entity' ? undefined : 6, widthConstraint: n.kind === 'sentence' ? { maximum: 200 } : undefined
    };
  }

  function visEdge(e) {
    var s = STYLE.edges[e.type] || STYLE.edges.MENTIONS;
    return {
      id: e.type + ':' + e.src + '->' + e.dst + (e.label ? ':' + e.label : ''), from: e.src, to: e.dst,
      title: e.type + (e.label ? ' (' + e.label + ')' : ''), color: { color: s.color, highlight: '#000000' },
      width: s.width, arrows: s.arrows, dashes: s.dashes || false
    };
  }

  function legendRow(box, swatch, text) {
    var row = document.createElement('div'), label = document.createElement('span');
    row.className = 'row';
    label.textContent = text;
    row.appendChild(swatch);
    row.appendChild(label);
    box.appendChild(row);
  }

  function swatch(bg, border, width, style, round) {
    var s = document.createElement('span');
    s.className = 'swatch';
    s.style.background = bg;
    s.style.border = width + 'px ' + style + ' ' + border;
    if (round) s.style.borderRadius = '50%';
    return s;
  }

  function buildLegend(used) {
    var box = document.createElement('div'), title = document.createElement('h2');
    box.id = 'legend';
    title.textContent = 'Legend';
    box.appendChild(title);
    Object.keys(STYLE.groups).forEach(function (k) {
      var g = STYLE.groups[k];
      if (used.groups[k]) legendRow(box, swatch(g.bg, g.border, 1, 'solid', g.shape === 'dot'), g.legend);
    });
    Object.keys(STYLE.roles).forEach(function (k) {
      var r = STYLE.roles[k], border = r.border || STYLE.roles.visible.border;
      var sw = k === 'lookup' ? swatch(STYLE.groups.entity.bg, STYLE.groups.entity.border, 1, 'solid', false)
        : swatch('#ffffff', border, Math.min(r.width || 1, 4), r.dashes ? 'dashed' : 'solid', false);
      if (k === 'lookup') sw.style.transform = 'rotate(45deg) scale(0.6)';
      if (r.halo) sw.style.boxShadow = '0 0 6px 2px ' + r.halo;
      if (used.roles[k]) legendRow(box, sw, r.legend);
    });
    Object.keys(STYLE.edges).forEach(function (k) {
      var e = STYLE.edges[k], line = document.createElement('span');
      line.className = 'line';
      line.style.borderTop = e.width + 'px ' + (e.dashes ? 'dashed' : 'solid') + ' ' + e.color;
      if (used.edges[k]) legendRow(box, line, e.legend);
    });
    return box;
  }

  function showDetails(n) {
    var box = document.getElementById('details');
    box.textContent = '';
    var h = document.createElement('h2'), id = document.createElement('div'), text = document.createElement('div');
    h.textContent = (n.gold ? '\u2605 ' : '') + n.kind + ': ' + n.label;
    id.className = 'id';
    id.textContent = n.id;
    text.className = 'text';
    text.textContent = n.text;
    box.appendChild(h);
    box.appendChild(id);
    n.roles.forEach(function (r) {
      var chip = document.createElement('span');
      chip.className = 'role';
      chip.textContent = (STYLE.roles[r] && STYLE.roles[r].legend) || r;
      box.appendChild(chip);
    });
    box.appendChild(text);
  }

  var data = JSON.parse(document.getElementById('browse-data').textContent);
  var byId = {}, used = { groups: {}, roles: {}, edges: {} };
  data.nodes.forEach(function (n) {
    byId[n.id] = n;
    used.groups[n.group] = true;
    n.roles.forEach(function (r) { used.roles[r] = true; });
  });
  data.edges.forEach(function (e) { used.edges[e.type] = true; });
  var container = document.getElementById('network'), details = document.getElementById('details');
  details.parentNode.insertBefore(buildLegend(used), details);

  var nodes = new vis.DataSet(data.nodes.map(visNode)), edges = new vis.DataSet(data.edges.map(visEdge));
  var network = new vis.Network(container, { nodes: nodes, edges: edges }, {
    layout: { randomSeed: 7 },  // deterministic: same data, same picture
    physics: { solver: 'forceAtlas2Based', forceAtlas2Based: { gravitationalConstant: -60, springLength: 80,
      avoidOverlap: 0.4 }, stabilization: { iterations: 500, updateInterval: 50, fit: true } },
    interaction: { hover: true, tooltipDelay: 150, keyboard: { enabled: true, bindToWindow: false } },
    edges: { smooth: false }
  });
  network.on('click', function (p) { if (p.nodes.length && byId[p.nodes[0]]) showDetails(byId[p.nodes[0]]); });
  network.once('stabilizationIterationsDone', function () {
    network.setOptions({ physics: false });  // stay where the layout put them; dragging moves one node
    network.fit();
    network.once('afterDrawing', function () {
      var drawn = Object.keys(network.getPositions());
      var ends = 0;
      drawn.forEach(function (id) { ends += network.getConnectedEdges(id).length; });
      status.nodes = drawn.length;
      status.edges = ends / 2;  // each drawn edge has two drawn endpoints
      status.ready = true;
    });
    network.redraw();
  });
  window.harnessBrowseNetwork = network;
})();
