// planner.js - the planner in the page: a form in each <div class="planner">
// of a chapter that runs lib/sim's dt_sim_plan, compiled to WebAssembly
// (planner-wasm.js, made by planner.sh; planner/entry.c names the exports).
// The page computes nothing itself: every figure it shows is one the module
// returned, and each cell of "every figure" keeps the double in data-value
// (make test-book compares them with the native planner's).
//
// The div's data-* attributes set the form's first values: a model preset
// (data-model) or the model's fields, the layout's fields (data-tp, ...,
// data-recompute="full"), the cluster preset (data-cluster).
(function () {
  "use strict";
  var boxes = document.querySelectorAll("div.planner");
  if (!boxes.length || !window.DT_PLANNER_WASM) return;

  var raw = atob(window.DT_PLANNER_WASM), bytes = new Uint8Array(raw.length);
  for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);

  // The module imports WASI's fd_* through libc's stdio, but the planner
  // does no I/O: a call would be a bug, and says so.
  function noIO(name) {
    return function () { throw new Error("planner: the module called WASI's " + name); };
  }

  WebAssembly.compile(bytes).then(function (mod) {
    var imports = {};
    WebAssembly.Module.imports(mod).forEach(function (im) {
      (imports[im.module] = imports[im.module] || {})[im.name] = noIO(im.name);
    });
    return WebAssembly.instantiate(mod, imports);
  }).then(function (inst) {
    var planner = api(inst.exports);
    window.dtPlanner = planner;
    Array.prototype.forEach.call(boxes, function (box, n) { form(box, n, planner); });
  }).catch(function (e) {
    Array.prototype.forEach.call(boxes, function (box) {
      var p = document.createElement("p");
      p.className = "planner-error";
      p.textContent = "The planner did not load: " + e.message;
      box.appendChild(p);
    });
    throw e;
  });

  // ---------------------------------------------------------------- the module
  function api(x) {
    function str(ptr) {
      if (!ptr) return null;
      var m = new Uint8Array(x.memory.buffer), end = ptr;
      while (m[end]) end++;
      return new TextDecoder().decode(m.subarray(ptr, end));
    }
    function list(f) {
      var out = [];
      for (var i = 0, s; (s = str(f(i))) !== null; i++) out.push(s);
      return out;
    }
    var argNames = list(x.arg_name), costNames = list(x.cost_name);
    var nModel = argNames.indexOf("tp"); // the model's fields come first (fields.h)
    var choices = {};
    argNames.forEach(function (a, i) {
      var c = list(function (j) { return x.choice_name(i, j); });
      if (c.length) choices[a] = c;
    });
    choices.cluster = list(x.cluster_name);
    var models = {}, order = [];
    for (var m = 0, name; (name = str(x.model_preset(m))) !== null; m++) {
      var ints = new Int32Array(x.memory.buffer, x.args(), argNames.length);
      models[name] = {};
      order.push(name);
      argNames.forEach(function (a, i) { if (i < nModel) models[name][a] = ints[i]; });
    }
    return {
      args: argNames, modelArgs: argNames.slice(0, nModel), figures: costNames, choices: choices, models: models, modelOrder: order,
      // plan({layers: ..., tp: ..., cluster: 0, ...}): {cost: {...}} or {error: "..."}
      plan: function (a) {
        var ints = new Int32Array(x.memory.buffer, x.args(), argNames.length);
        argNames.forEach(function (k, i) { ints[i] = a[k]; });
        if (x.plan() !== 0) return { error: str(x.error()) };
        var d = new Float64Array(x.memory.buffer, x.cost(), costNames.length), cost = {};
        costNames.forEach(function (k, i) { cost[k] = d[i]; });
        return { cost: cost };
      },
    };
  }

  // ---------------------------------------------------------------- the form
  var labels = {
    layers: "layers", hidden: "hidden size", heads: "heads", ffn: "MLP width", seq: "sequence",
    vocab: "vocabulary", dropout: "dropout", tp: "TP", pp: "PP", dp: "DP", vpp: "chunks a rank (vpp)",
    sp: "sequence parallel", global_batch: "global batch", micro_batch: "micro-batch",
    recompute: "recomputation", zero: "ZeRO stage", dtype: "dtype", schedule: "schedule",
    cluster: "cluster",
  };
  var defaults = { vpp: 1, sp: 0, zero: 0, dtype: 0, schedule: 0, global_batch: 64, micro_batch: 1,
    tp: 1, pp: 1, dp: 1, recompute: 0 };
  var flags = { dropout: 1, sp: 1 };

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function form(box, n, P) {
    var f = el("form", { class: "planner-form", "aria-label": "the planner's arguments" });
    var inputs = {};
    function field(parent, name, control) {
      var id = "planner" + n + "-" + name;
      control.id = id;
      control.name = name;
      var l = el("label", { for: id }, labels[name] || name);
      var w = el("span", { class: "planner-field" });
      w.appendChild(l);
      w.appendChild(control);
      parent.appendChild(w);
      inputs[name] = control;
    }
    function select(values, texts) {
      var s = el("select");
      values.forEach(function (v, i) { s.appendChild(el("option", { value: String(v) }, texts[i])); });
      return s;
    }
    function group(title, names) {
      var fs = el("fieldset");
      fs.appendChild(el("legend", {}, title));
      names.forEach(function (a) {
        if (a === "model") {
          field(fs, "model", select([""].concat(P.modelOrder), ["(your own)"].concat(P.modelOrder)));
        } else if (P.choices[a]) {
          field(fs, a, select(P.choices[a].map(function (_, i) { return i; }), P.choices[a]));
        } else if (a === "zero") {
          field(fs, a, select([0, 1, 2, 3], ["0 (DDP)", "1", "2", "3"]));
        } else if (flags[a]) {
          field(fs, a, el("input", { type: "checkbox" }));
        } else {
          field(fs, a, el("input", { type: "number", min: "1", step: "1", inputmode: "numeric" }));
        }
      });
      f.appendChild(fs);
    }
    var modelArgs = P.modelArgs, layoutArgs = P.args.slice(modelArgs.length, P.args.length - 1);
    group("Model", ["model"].concat(modelArgs));
    group("Layout", layoutArgs);
    group("Cluster", ["cluster"]);
    box.appendChild(f);
    var out = el("div", { class: "planner-out", "aria-live": "polite" });
    box.appendChild(out);

    function set(name, v) {
      var c = inputs[name];
      if (c.type === "checkbox") c.checked = !!Number(v);
      else c.value = String(v);
    }
    function choose(name, v) {   // a choice by its name or its index
      var i = P.choices[name] ? P.choices[name].indexOf(v) : -1;
      set(name, i >= 0 ? i : v);
    }
    function useModel(name) {
      if (!P.models[name]) return;
      modelArgs.forEach(function (a) { set(a, P.models[name][a]); });
    }
    // First values: the div's data-*, else the defaults.
    var d = box.dataset;
    layoutArgs.forEach(function (a) { choose(a, d[a] !== undefined ? d[a] : defaults[a]); });
    choose("cluster", d.cluster || P.choices.cluster[0]);
    set("model", d.model && P.models[d.model] ? d.model : "");
    useModel(d.model || P.modelOrder[0]);
    modelArgs.forEach(function (a) { if (d[a] !== undefined) set(a, d[a]); });

    function read() {
      var a = {};
      P.args.forEach(function (k) {
        var c = inputs[k];
        a[k] = c.type === "checkbox" ? (c.checked ? 1 : 0) : parseInt(c.value, 10);
        if (isNaN(a[k])) a[k] = 0; // an empty box: the planner refuses 0 by name
      });
      return a;
    }
    function update() { show(out, P.plan(read()), inputs.cluster.selectedOptions[0].textContent); }
    f.addEventListener("input", function (ev) {
      if (ev.target === inputs.model) useModel(inputs.model.value);
      else if (modelArgs.indexOf(ev.target.name) >= 0) inputs.model.value = "";
      update();
    });
    f.addEventListener("submit", function (ev) { ev.preventDefault(); update(); });
    update();
  }

  // ---------------------------------------------------------------- the figures
  var GiB = 1073741824;
  function num(x, digits) { return Number(x.toPrecision(digits || 4)).toLocaleString("en"); }
  function pct(x) { return num(100 * x, 3) + "%"; }
  function secs(x) { return x === 0 ? "0 s" : x < 1e-3 ? num(x * 1e6) + " µs" : x < 1 ? num(x * 1e3) + " ms" : num(x) + " s"; }
  function gib(x) { return num(x / GiB) + " GiB"; }
  var units = { mem_: gib, t_: secs, step_s: secs, bubble: pct, mfu: pct, hfu: pct };
  function fmt(k, v) {
    for (var u in units) if (k.indexOf(u) === 0) return units[u](v);
    return num(v, 6);
  }

  function show(out, r, cluster) {
    out.textContent = "";
    if (r.error) {
      out.appendChild(el("p", { class: "planner-error", role: "alert", "data-error": r.error },
        "The planner refuses this: " + r.error));
      return;
    }
    var k = r.cost;
    var dl = el("dl", { class: "planner-summary" });
    function row(term, value, note) {
      dl.appendChild(el("dt", {}, term));
      var dd = el("dd", {}, value);
      if (note) dd.appendChild(el("span", { class: "planner-note" }, " " + note));
      dl.appendChild(dd);
    }
    row("memory per device", gib(k.mem_bytes),
      "(parameters " + gib(k.mem_params) + ", gradients " + gib(k.mem_grads) + ", optimizer " +
      gib(k.mem_optim) + ", activations " + gib(k.mem_acts) + "; on pipeline stage " + k.mem_stage + ") " +
      (k.fits ? "fits in a device of " + cluster : "does NOT fit in a device of " + cluster));
    row("step time", secs(k.step_s), "(" + num(k.tokens_per_s) + " tokens/s on " + k.devices + " devices)");
    row("bubble", pct(k.bubble), "(" + secs(k.t_bubble) + " of the step)");
    row("MFU", pct(k.mfu), "(HFU " + pct(k.hfu) + ", " + num(k.tflops_per_device) + " TFLOP/s a device)");
    out.appendChild(dl);
    var det = el("details", { class: "planner-all" });
    det.appendChild(el("summary", {}, "Every figure of the plan (dt_sim_cost)"));
    var t = el("table");
    Object.keys(k).forEach(function (f) {
      var tr = el("tr");
      tr.appendChild(el("th", { scope: "row" }, f));
      tr.appendChild(el("td", { "data-field": f, "data-value": String(k[f]) }, fmt(f, k[f])));
      t.appendChild(tr);
    });
    det.appendChild(t);
    out.appendChild(det);
  }
})();
