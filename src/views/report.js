// The script of evalprof's HTML report (html.c embeds it at build time):
// sorting a table by a column, filtering a table by name, and sizing the
// flame graphs' frames to their SVG.
//
// The page is complete without it.  Names are only ever read from the
// cells' text and compared, never written back as markup; rows are moved,
// not rebuilt.  Number cells carry their exact value in data-v.
"use strict";

function evpCellKey(row, col, numeric) {
    var td = row.cells[col];
    if (!numeric)
        return td.textContent;
    var v = parseFloat(td.getAttribute("data-v"));
    return isNaN(v) ? 0 : v;
}

// Sort TABLE's body by column COL; numbers largest first on the first
// click, names in order; a second click reverses.
function evpSort(table, col) {
    var th = table.tHead.rows[0].cells[col];
    var numeric = th.getAttribute("data-type") === "n";
    var desc = th.classList.contains("desc") ? false :
        th.classList.contains("asc") ? true : numeric;
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) {
        heads[i].classList.remove("asc");
        heads[i].classList.remove("desc");
        heads[i].removeAttribute("aria-sort");
    }
    th.classList.add(desc ? "desc" : "asc");
    th.setAttribute("aria-sort", desc ? "descending" : "ascending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.forEach(function (r, k) { r.evpOrder = k; });
    rows.sort(function (a, b) {
        var x = evpCellKey(a, col, numeric), y = evpCellKey(b, col, numeric);
        var c = x < y ? -1 : x > y ? 1 : 0;
        if (desc)
            c = -c;
        return c || a.evpOrder - b.evpOrder;
    });
    rows.forEach(function (r) { body.appendChild(r); });
}

// Show only the rows whose name (first column) holds TERM, ignoring case.
function evpFilter(table, term, shown) {
    var t = term.toLowerCase(), n = 0, rows = table.tBodies[0].rows;
    for (var i = 0; i < rows.length; i++) {
        var hit = rows[i].cells[0].textContent.toLowerCase().indexOf(t) >= 0;
        rows[i].classList.toggle("hidden", !hit);
        n += hit ? 1 : 0;
    }
    if (shown)
        shown.textContent = term ? n + " of " + rows.length + " shown" : "";
}

function evpFitFrame(frame) {
    var doc = frame.contentDocument;
    var svg = doc && doc.querySelector("svg");
    if (svg)
        frame.style.height = (parseFloat(svg.getAttribute("height")) + 4) + "px";
}

(function () {
    var tables = document.querySelectorAll("table.sortable");
    Array.prototype.forEach.call(tables, function (table) {
        var heads = table.tHead.rows[0].cells;
        Array.prototype.forEach.call(heads, function (th, col) {
            th.setAttribute("tabindex", "0");
            th.addEventListener("click", function () { evpSort(table, col); });
            th.addEventListener("keydown", function (e) {
                if (e.key === "Enter" || e.key === " ") {
                    e.preventDefault();
                    evpSort(table, col);
                }
            });
        });
    });
    var inputs = document.querySelectorAll("input[data-table]");
    Array.prototype.forEach.call(inputs, function (input) {
        var table = document.getElementById(input.getAttribute("data-table"));
        var shown = document.getElementById(input.id.replace("filter-", "shown-"));
        input.addEventListener("input", function () {
            evpFilter(table, input.value, shown);
        });
    });
    var frames = document.querySelectorAll("iframe.flame");
    Array.prototype.forEach.call(frames, function (f) {
        f.addEventListener("load", function () { evpFitFrame(f); });
        if (f.contentDocument && f.contentDocument.readyState === "complete")
            evpFitFrame(f);
    });
})();
