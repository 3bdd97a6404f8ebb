// Charts of the page, drawn as SVG by hand (no library, no CDN). Each takes numbers the API gave and
// only places them: no estimate is computed here.
(function () {
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"];

function el(name, attrs, text) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function clear(svg) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
}

function gib(bytes) {
  return bytes / 2 ** 30;
}

// Memory per GPU as one stacked bar of named parts, with the GPU's capacity and usable lines.
// parts: [{label, bytes}], capacity/usable: bytes.
function stackedBar(svg, parts, capacity, usable, labels) {
  clear(svg);
  const named = parts.filter((p) => p.bytes > 0), perRow = 4, rowsOfLegend = Math.ceil(named.length / perRow);
  const W = 760, left = 20, right = 80, top = 34, barH = 40, H = top + barH + 34 + 18 * rowsOfLegend;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const total = parts.reduce((s, p) => s + p.bytes, 0);
  const max = Math.max(total, capacity) * 1.05 || 1;
  const x = (b) => left + (W - left - right) * b / max;
  let at = 0;
  parts.forEach((p, i) => {
    if (p.bytes <= 0) return;
    const rect = el("rect", {x: x(at), y: top, width: Math.max(0.5, x(at + p.bytes) - x(at)), height: barH,
                             fill: COLORS[i % COLORS.length], class: "segment", "data-part": p.label});
    rect.appendChild(el("title", {}, `${p.label}: ${gib(p.bytes).toFixed(1)} GiB`));
    svg.appendChild(rect);
    at += p.bytes;
  });
  for (const [value, name, cls] of [[capacity, labels.capacity, "capacity"], [usable, labels.usable, "usable"]]) {
    svg.appendChild(el("line", {x1: x(value), x2: x(value), y1: top - 14, y2: top + barH + 8, class: `limit ${cls}`}));
    svg.appendChild(el("text", {x: x(value), y: cls === "capacity" ? top - 18 : top + barH + 20,
                                "text-anchor": "middle", class: `limit-label ${cls}`},
                       `${name} ${gib(value).toFixed(1)} GiB`));
  }
  svg.appendChild(el("text", {x: x(total), y: top + barH / 2 + 5, dx: 6, class: "total-label"},
                     `${gib(total).toFixed(1)} GiB`));
  // legend: four to a row
  named.forEach((p, i) => {
    const lx = left + (i % perRow) * ((W - left) / perRow), ly = top + barH + 34 + 18 * Math.floor(i / perRow);
    svg.appendChild(el("rect", {x: lx, y: ly - 9, width: 10, height: 10, fill: COLORS[parts.indexOf(p) % COLORS.length]}));
    svg.appendChild(el("text", {x: lx + 14, y: ly, class: "legend"}, `${p.label} ${gib(p.bytes).toFixed(1)} GiB`));
  });
}

function niceTicks(lo, hi, log) {
  if (log) {
    const out = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) out.push(10 ** e);
    return out.filter((v) => v >= lo / 1.0001 && v <= hi * 1.0001);
  }
  const span = hi - lo || 1, step = 10 ** Math.floor(Math.log10(span / 5));
  const mult = [1, 2, 5, 10].find((m) => span / (step * m) <= 6) || 10;
  const out = [];
  for (let v = Math.ceil(lo / (step * mult)) * step * mult; v <= hi; v += step * mult) out.push(v);
  return out;
}

function fmt(v) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1000 || a < 0.01) return v.toPrecision(2).replace("+", "");
  return String(+v.toPrecision(3));
}

// A scatter of points [{x, y, front, label, cls}], log axes where the range is wide; `front` points
// are joined by the Pareto front's steps; `diagonal` draws y = x (estimate against measurement).
function scatter(svg, points, opts) {
  clear(svg);
  const W = 760, H = 380, left = 70, right = 20, top = 20, bottom = 50;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const xs = points.map((p) => p.x).filter((v) => v > 0), ys = points.map((p) => p.y).filter((v) => v > 0);
  if (!xs.length || !ys.length) {
    svg.appendChild(el("text", {x: W / 2, y: H / 2, "text-anchor": "middle"}, opts.empty || ""));
    return;
  }
  let [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  if (opts.diagonal) { x0 = y0 = Math.min(x0, y0); x1 = y1 = Math.max(x1, y1); }
  const xlog = x1 / x0 > 30, ylog = y1 / y0 > 30;
  const pad = (lo, hi, log) => log ? [lo / 1.3, hi * 1.3] : [Math.max(0, lo - (hi - lo) * 0.08 - hi * 0.02), hi + (hi - lo) * 0.08 + hi * 0.02];
  [x0, x1] = pad(x0, x1, xlog); [y0, y1] = pad(y0, y1, ylog);
  const sx = (v) => left + (W - left - right) * (xlog ? Math.log(v / x0) / Math.log(x1 / x0) : (v - x0) / (x1 - x0));
  const sy = (v) => H - bottom - (H - top - bottom) * (ylog ? Math.log(v / y0) / Math.log(y1 / y0) : (v - y0) / (y1 - y0));
  svg.appendChild(el("line", {x1: left, x2: W - right, y1: H - bottom, y2: H - bottom, class: "axis"}));
  svg.appendChild(el("line", {x1: left, x2: left, y1: top, y2: H - bottom, class: "axis"}));
  for (const v of niceTicks(x0, x1, xlog)) {
    svg.appendChild(el("line", {x1: sx(v), x2: sx(v), y1: top, y2: H - bottom, class: "grid"}));
    svg.appendChild(el("text", {x: sx(v), y: H - bottom + 16, "text-anchor": "middle", class: "tick"}, fmt(v)));
  }
  for (const v of niceTicks(y0, y1, ylog)) {
    svg.appendChild(el("line", {x1: left, x2: W - right, y1: sy(v), y2: sy(v), class: "grid"}));
    svg.appendChild(el("text", {x: left - 6, y: sy(v) + 4, "text-anchor": "end", class: "tick"}, fmt(v)));
  }
  svg.appendChild(el("text", {x: (left + W - right) / 2, y: H - 12, "text-anchor": "middle", class: "axis-label"},
                     opts.xlabel + (xlog ? " (log)" : "")));
  const yl = el("text", {x: 16, y: (top + H - bottom) / 2, "text-anchor": "middle", class: "axis-label",
                         transform: `rotate(-90 16 ${(top + H - bottom) / 2})`}, opts.ylabel + (ylog ? " (log)" : ""));
  svg.appendChild(yl);
  if (opts.diagonal) {
    svg.appendChild(el("line", {x1: sx(x0), y1: sy(x0), x2: sx(x1), y2: sy(x1), class: "diagonal"}));
  }
  const front = points.filter((p) => p.front && p.x > 0 && p.y > 0).sort((a, b) => a.x - b.x);
  if (front.length) {
    let d = `M ${sx(front[0].x)} ${sy(front[0].y)}`;
    for (let i = 1; i < front.length; i++) d += ` H ${sx(front[i].x)} V ${sy(front[i].y)}`;
    svg.appendChild(el("path", {d, class: "front"}));
  }
  for (const p of points) {
    if (!(p.x > 0 && p.y > 0)) continue;
    const c = el("circle", {cx: sx(p.x), cy: sy(p.y), r: p.front ? 5 : 3.5,
                            class: "point" + (p.front ? " pareto" : "") + (p.cls ? " " + p.cls : "")});
    c.appendChild(el("title", {}, p.label || ""));
    svg.appendChild(c);
  }
  if (opts.legend) {
    svg.appendChild(el("circle", {cx: W - 170, cy: top + 8, r: 5, class: "point pareto"}));
    svg.appendChild(el("text", {x: W - 160, y: top + 12, class: "legend"}, opts.legend));
  }
}

window.charts = {stackedBar, scatter};
})();
