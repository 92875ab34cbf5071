// SPDX-License-Identifier: BSD-3-Clause
/* The flame graph's inline script (converter/output/conv_svg.c embeds it at build time):
 * zoom on click, reset, search with the matched share, details on hover.
 * It reads only what the SVG carries: data-o/data-n (offset and samples)
 * and data-l (a short label, when the name is a long C++ one) on each
 * frame's <g>, its <title>, and data-w/data-xpad/data-char on the <svg>.
 * It sits in a CDATA section: never write the CDATA end marker in it. */
"use strict";
var svg, frames = [], total = 0, zo = 0, zn = 0, W = 0, XPAD = 0, CHAR = 0;
var details, matchedText, unzoomBtn, clearBtn, query = null;
function zsInit(evt) {
  svg = document.documentElement;
  W = +svg.getAttribute("data-w"); XPAD = +svg.getAttribute("data-xpad");
  CHAR = +svg.getAttribute("data-char");
  details = document.getElementById("details");
  matchedText = document.getElementById("matched");
  unzoomBtn = document.getElementById("unzoom");
  clearBtn = document.getElementById("clear");
  var gs = document.querySelectorAll("g.fr");
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i], t = g.querySelector("title").textContent;
    var f = { g: g, o: +g.getAttribute("data-o"), n: +g.getAttribute("data-n"),
              r: g.querySelector("rect"), t: g.querySelector("text"),
              name: t.split("\n")[0], tip: t.replace(/\n/g, " \u00b7 ") };
    /* A C++ name's box shows its short form; search and tooltip the full one. */
    f.label = g.getAttribute("data-l") || f.name;
    f.fill = f.r.getAttribute("fill");
    frames.push(f);
    if (g.id === "root") total = f.n;
    g.addEventListener("click", zoomTo.bind(null, f));
    g.addEventListener("mouseover", show.bind(null, f));
    g.addEventListener("mouseout", show.bind(null, null));
  }
  zo = 0; zn = total;
  unzoomBtn.addEventListener("click", unzoom);
  document.getElementById("search").addEventListener("click", askSearch);
  clearBtn.addEventListener("click", function () { search(null); });
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey && e.keyCode === 70) || e.key === "/") { e.preventDefault(); askSearch(); }
    else if (e.key === "Escape") { unzoom(); search(null); }
  });
  var m = /[#&]search=([^&]*)/.exec(window.location.hash);
  if (m) search(decodeURIComponent(m[1]));
  layout();
}
function show(f) {
  details.textContent = f ? f.tip : " ";
}
function fit(f, w) {
  var max = Math.floor((w - 6) / CHAR);
  if (max < 3) return "";
  return f.label.length <= max ? f.label : f.label.slice(0, max - 2) + "..";
}
function layout() {
  var scale = (W - 2 * XPAD) / (zn || 1);
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i], a = Math.max(f.o, zo), b = Math.min(f.o + f.n, zo + zn);
    if (b <= a) { f.g.style.display = "none"; continue; }
    f.g.style.display = "";
    var x = XPAD + (a - zo) * scale, w = (b - a) * scale;
    f.r.setAttribute("x", x.toFixed(2));
    f.r.setAttribute("width", w.toFixed(2));
    f.t.setAttribute("x", (x + 3).toFixed(2));
    f.t.textContent = fit(f, w);
    var outer = f.o < zo || f.o + f.n > zo + zn;
    f.g.setAttribute("class", f.g.getAttribute("class").replace(/ anc/g, "") + (outer ? " anc" : ""));
  }
  unzoomBtn.style.opacity = zn < total ? "1" : "0";
}
function zoomTo(f) {
  if (f.g.id === "root") { unzoom(); return; }
  zo = f.o; zn = f.n; layout();
}
function unzoom() { zo = 0; zn = total; layout(); }
function askSearch() {
  var q = window.prompt("Search for a function (regular expression)", query || "");
  if (q !== null) search(q);
}
function search(q) {
  var re = null;
  query = q;
  if (q) {
    try { re = new RegExp(q); } catch (e) { re = null; matchedText.textContent = "bad expression"; return; }
  }
  var spans = [];
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i], hit = re !== null && f.g.id !== "root" && re.test(f.name);
    f.r.setAttribute("fill", hit ? "rgb(230,0,230)" : f.fill);
    if (hit) spans.push([f.o, f.o + f.n]);
  }
  /* Nested matches (recursion, a caller and its callee) count once. */
  spans.sort(function (a, b) { return a[0] - b[0]; });
  var covered = 0, end = -1;
  for (var j = 0; j < spans.length; j++) {
    var s = Math.max(spans[j][0], end);
    if (spans[j][1] > s) { covered += spans[j][1] - s; end = spans[j][1]; }
  }
  if (re === null) { matchedText.textContent = " "; clearBtn.style.opacity = "0"; return; }
  matchedText.textContent = "Matched: " + (total ? (100 * covered / total).toFixed(2) : "0.00") +
    "% (" + covered + " of " + total + " samples)";
  clearBtn.style.opacity = "1";
}
