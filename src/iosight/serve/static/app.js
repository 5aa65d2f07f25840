// Draw every figure embedded as JSON data (never as script) and wire the Facility zoom.
"use strict";
function drawFigures() {
  document.querySelectorAll("[data-figure]").forEach(function (el) {
    var fig = JSON.parse(document.getElementById(el.dataset.figure).textContent);
    Plotly.newPlot(el, fig.data, fig.layout, { responsive: true, displaylogo: false })
      .then(function () { el.dataset.ready = "1"; });
    if (el.id === "fig-facility") { el.on("plotly_relayout", function (ev) { rebin(el, ev); }); }
    var dxt = document.getElementById("dxt-api");
    if (el.id === "fig-timeline" && dxt) {
      el.on("plotly_relayout", function (ev) { rezoom(el, ev, dxt.dataset.api); });
    }
  });
}
function epochSeconds(v) {  // plotly reports date-axis ranges as "YYYY-MM-DD hh:mm:ss.sss" (UTC)
  return typeof v === "number" ? v / 1000 : Date.parse(String(v).replace(" ", "T") + "Z") / 1000;
}
var pending = 0;
function rebin(el, ev) {
  var q;
  if (ev["xaxis.range[0]"] !== undefined) {
    q = "?start=" + epochSeconds(ev["xaxis.range[0]"]) + "&end=" + epochSeconds(ev["xaxis.range[1]"]);
  } else if (ev["xaxis.autorange"]) {
    q = "";
  } else { return; }
  var mine = ++pending;
  el.dataset.ready = "0";
  fetch("/api/timeline" + q).then(function (r) { return r.json(); }).then(function (res) {
    if (mine !== pending || res.error) { return; }
    var layout = el.layout;
    Plotly.react(el, res.traces, layout).then(function () {
      document.getElementById("bin-width").textContent = res.bin_width;
      el.dataset.binWidth = res.bin_width;
      el.dataset.ready = "1";
    });
  });
}
var zooming = 0;
function rezoom(el, ev, api) {  // the DXT view of the zoomed window: at most a fixed number of points
  var q = [];
  if (ev["xaxis.range[0]"] !== undefined) {
    q.push("start=" + ev["xaxis.range[0]"], "end=" + ev["xaxis.range[1]"]);
  }
  if (ev["yaxis.range[0]"] !== undefined) {
    q.push("rank_min=" + Math.ceil(ev["yaxis.range[0]"]), "rank_max=" + Math.floor(ev["yaxis.range[1]"]));
  }
  if (!q.length && !ev["xaxis.autorange"] && !ev["yaxis.autorange"]) { return; }
  var mine = ++zooming;
  el.dataset.ready = "0";
  fetch(api + (q.length ? "?" + q.join("&") : "")).then(function (r) { return r.json(); }).then(function (res) {
    if (mine !== zooming || res.error) { return; }
    var layout = el.layout;
    layout.title = res.layout.title;
    Plotly.react(el, res.data, layout).then(function () { el.dataset.ready = "1"; });
  });
}
function loadParts() {  // server-rendered (escaped) HTML fragments of slower analyses
  document.querySelectorAll("[data-part]").forEach(function (el) {
    fetch(el.dataset.part).then(function (r) { return r.text(); }).then(function (html) {
      el.innerHTML = html;
      el.dataset.ready = "1";
    });
  });
}
function refreshNow() {  // the Facility page's live part, asked again every data-refresh seconds
  var box = document.getElementById("now");
  if (!box) { return; }
  setInterval(function () {
    fetch(box.dataset.api).then(function (r) { return r.json(); }).then(function (res) {
      if (res.error) { return; }
      var el = document.getElementById("fig-now");
      Plotly.react(el, res.figure.data, res.figure.layout).then(function () {
        document.getElementById("now-summary").textContent = res.summary;
        box.dataset.refreshed = String(Number(box.dataset.refreshed || "0") + 1);
      });
    });
  }, 1000 * Number(box.dataset.refresh));
}
document.addEventListener("DOMContentLoaded", drawFigures);
document.addEventListener("DOMContentLoaded", refreshNow);
document.addEventListener("DOMContentLoaded", loadParts);
