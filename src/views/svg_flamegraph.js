// Interactive part of evalprof's flame graphs, embedded in every SVG that
// flamegraph.c writes (turned into a C string at build time).
//
// The SVG is complete without this script: it only adds hover details,
// click to zoom, search and reset.  Frame names are read from the <title>
// elements and only ever written back with textContent, never parsed as
// markup or code.  evpConfig (written by flamegraph.c) holds the layout.
"use strict";
var evp = {frames: [], zoomed: null, term: null};

function init(evt) {
    var c = evpConfig;
    evp.details = document.getElementById("details");
    evp.matched = document.getElementById("matched");
    evp.unzoomBtn = document.getElementById("unzoom");
    evp.searchBtn = document.getElementById("search");
    evp.W = c.width - 2 * c.xpad;
    var gs = document.getElementById("frames").children;
    for (var i = 0; i < gs.length; i++) {
        var g = gs[i];
        var info = g.getElementsByTagName("title")[0].textContent;
        var f = {
            g: g,
            r: g.getElementsByTagName("rect")[0],
            t: g.getElementsByTagName("text")[0],
            info: info,
            name: info.substring(0, info.lastIndexOf(" (")),
            s: parseFloat(g.getAttribute("data-s")),
            v: parseFloat(g.getAttribute("data-v")),
            d: parseInt(g.getAttribute("data-d"), 10)
        };
        g.evpIndex = i;
        evp.frames.push(f);
    }
    var fr = document.getElementById("frames");
    fr.addEventListener("click", function (e) {
        var f = frameOf(e.target);
        if (f)
            zoom(f);
    });
    fr.addEventListener("mouseover", function (e) {
        var f = frameOf(e.target);
        if (f)
            evp.details.textContent = "Function: " + f.info;
    });
    fr.addEventListener("mouseout", function () {
        evp.details.textContent = " ";
    });
    evp.unzoomBtn.addEventListener("click", unzoom);
    evp.searchBtn.addEventListener("click", function () {
        if (evp.term !== null)
            resetSearch();
        else
            searchPrompt();
    });
    window.addEventListener("keydown", function (e) {
        if ((e.ctrlKey && (e.key === "f" || e.key === "F")) || e.key === "F3") {
            e.preventDefault();
            searchPrompt();
        } else if (e.key === "Escape") {
            resetSearch();
            unzoom();
        }
    });
    var m = /[?&]s=([^&]*)/.exec(document.location ? document.location.search : "");
    if (m)
        search(decodeURIComponent(m[1].replace(/\+/g, " ")));
}

function frameOf(node) {
    while (node && node.parentNode && node.parentNode.id !== "frames")
        node = node.parentNode;
    if (!node || node.evpIndex === undefined)
        return null;
    return evp.frames[node.evpIndex];
}

// The label for a frame W pixels wide: as in flamegraph.c's put_label.
function label(name, w) {
    var fit = Math.floor((w - 3) / (evpConfig.fontSize * evpConfig.fontWidth));
    if (fit < 3)
        return "";
    if (name.length <= fit)
        return name;
    return name.substring(0, fit - 2) + "..";
}

function place(f, x, w) {
    f.r.setAttribute("x", x.toFixed(1));
    f.r.setAttribute("width", w.toFixed(1));
    f.t.setAttribute("x", (x + 3).toFixed(2));
    f.t.textContent = label(f.name, w);
}

function setClass(f, cls, on) {
    var l = f.g.classList;
    if (on)
        l.add(cls);
    else
        l.remove(cls);
}

function zoom(z) {
    var c = evpConfig, end = z.s + z.v;
    for (var i = 0; i < evp.frames.length; i++) {
        var f = evp.frames[i], fend = f.s + f.v;
        if (f.d < z.d && f.s <= z.s && fend >= end) {
            setClass(f, "hide", false);
            setClass(f, "anc", true);
            place(f, c.xpad, evp.W);
        } else if (f.d >= z.d && f.s >= z.s && fend <= end) {
            setClass(f, "hide", false);
            setClass(f, "anc", false);
            place(f, c.xpad + (f.s - z.s) / z.v * evp.W, f.v / z.v * evp.W);
        } else {
            setClass(f, "hide", true);
        }
    }
    evp.zoomed = z;
    evp.unzoomBtn.classList.remove("hidden");
    if (evp.term !== null)
        search(evp.term);
}

function unzoom() {
    var c = evpConfig;
    for (var i = 0; i < evp.frames.length; i++) {
        var f = evp.frames[i];
        setClass(f, "hide", false);
        setClass(f, "anc", false);
        place(f, c.xpad + f.s / c.total * evp.W, f.v / c.total * evp.W);
    }
    evp.zoomed = null;
    evp.unzoomBtn.classList.add("hidden");
    if (evp.term !== null)
        search(evp.term);
}

function searchPrompt() {
    var term = window.prompt("Search for a frame name (regular expression):",
                             evp.term === null ? "" : evp.term);
    if (term !== null && term !== "")
        search(term);
}

function search(term) {
    var re;
    try {
        re = new RegExp(term);
    } catch (e) {
        re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    }
    var spans = [];
    for (var i = 0; i < evp.frames.length; i++) {
        var f = evp.frames[i];
        var hit = re.test(f.name);
        setClass(f, "m", hit);
        if (hit)
            spans.push([f.s, f.s + f.v]);
    }
    // Matched share: the union of the matched frames' spans, so that a
    // match inside another match is not counted twice.
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var sum = 0, lo = null, hi = null;
    for (var j = 0; j < spans.length; j++) {
        if (hi === null || spans[j][0] >= hi) {
            if (hi !== null)
                sum += hi - lo;
            lo = spans[j][0];
            hi = spans[j][1];
        } else if (spans[j][1] > hi) {
            hi = spans[j][1];
        }
    }
    if (hi !== null)
        sum += hi - lo;
    var share = evpConfig.total > 0 ? 100 * sum / evpConfig.total : 0;
    evp.term = term;
    evp.matchedShare = share;
    evp.matchedCount = spans.length;
    evp.matched.textContent = "Matched: " + share.toFixed(1) + "% (" +
        spans.length + (spans.length === 1 ? " frame)" : " frames)");
    evp.searchBtn.textContent = "Reset Search";
}

function resetSearch() {
    for (var i = 0; i < evp.frames.length; i++)
        setClass(evp.frames[i], "m", false);
    evp.term = null;
    evp.matched.textContent = " ";
    evp.searchBtn.textContent = "Search";
}
