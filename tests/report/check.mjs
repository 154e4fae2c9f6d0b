// Headless Chromium check of an evalprof HTML report, loaded from file://
// with every other request refused:
//
//   node check.mjs PAGE.html OUT.json
//
// Prints "ok: ..." / "FAIL: ..." lines for what it checks itself (no
// request leaves the page, no script error, no dialog, no injected
// element or handler, sorting by a column, filtering by a name, the flame
// graphs' scripts run) and writes what the page shows (every table's
// cells, the header facts) to OUT.json for report.py to compare with
// `evalprof summary` and `evalprof diff`.  Exit 77 with "SKIP: ..." when
// Chromium cannot start (tests/flame/browser/harness.mjs).
import { writeFileSync } from "node:fs";
import { launch, check, finish } from "./harness.mjs";

const [pagePath, outJson] = process.argv.slice(2);
const browser = await launch();

try {
    const context = await browser.newContext({ offline: true, viewport: { width: 1300, height: 900 } });
    const page = await context.newPage();
    const errors = [], requests = [];
    let dialogs = 0;
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    page.on("dialog", async (d) => { dialogs++; await d.dismiss(); });
    await context.route("**/*", (route) => {
        const u = route.request().url();
        if (u.startsWith("file://") && u.split("?")[0] === "file://" + pagePath)
            return route.continue();
        requests.push(u);
        return route.abort();
    });
    await page.goto("file://" + pagePath, { waitUntil: "load" });
    // the flame graphs' own scripts ran in their frames
    const frames = page.frames().filter((f) => f !== page.mainFrame());
    let flameFrames = 0;
    for (const f of frames) {
        await f.waitForFunction(() => typeof evp !== "undefined" && evp.frames.length > 0,
                                null, { timeout: 10000 });
        flameFrames++;
    }
    check(flameFrames >= 1, `${flameFrames} flame graph frame(s) drawn and scripted`);

    // Nothing injected: one script of the page's own, one per flame graph,
    // no element a name could have made, no event handler but the SVG's.
    const audit = async (f) => f.evaluate(() => {
        const bad = [];
        for (const el of document.querySelectorAll("*")) {
            for (const a of el.attributes)
                if (/^on/i.test(a.name) && !(el.localName === "svg" && a.value === "init(evt)"))
                    bad.push(el.localName + "[" + a.name + "]");
            if (["img", "object", "embed", "link", "base", "form", "iframe"].includes(el.localName) &&
                !(el.localName === "iframe" && el.classList.contains("flame")))
                bad.push(el.localName);
            if (el.localName === "svg" && el.parentNode.localName !== "body")
                bad.push("nested svg");
        }
        return { scripts: document.querySelectorAll("script").length, bad,
                 pwned: typeof window.evpPwned !== "undefined" };
    });
    const top = await audit(page.mainFrame());
    check(top.scripts === 1 && top.bad.length === 0 && !top.pwned,
          `page: ${top.scripts} script, nothing injected ${JSON.stringify(top.bad)}`);
    for (const f of frames) {
        const a = await audit(f);
        check(a.scripts === 1 && a.bad.length === 0 && !a.pwned,
              `flame frame: ${a.scripts} script, nothing injected ${JSON.stringify(a.bad)}`);
    }

    // What the page shows.
    const shown = await page.evaluate(() => {
        const tables = {};
        for (const t of document.querySelectorAll("table.data")) {
            tables[t.id] = {
                head: Array.from(t.tHead.rows[0].cells, (c) => c.textContent),
                rows: Array.from(t.tBodies[0].rows, (r) => Array.from(r.cells, (c) => c.textContent)),
            };
        }
        const facts = Array.from(document.querySelectorAll("table.facts"), (t) =>
            Object.fromEntries(Array.from(t.rows, (r) => [r.cells[0].textContent, r.cells[1].textContent])));
        const notes = Array.from(document.querySelectorAll("ul.notes li"), (l) => l.textContent);
        const ch = document.getElementById("elapsed-change");
        return { tables, facts, notes, title: document.title, change: ch ? ch.textContent : null };
    });

    // Sorting: a number column largest first, then reversed; a name
    // column in order.
    const fid = shown.tables["t-funcs"] ? "t-funcs" : "t-diff-funcs";
    const col = fid === "t-funcs" ? 2 : 1;
    const values = () => page.evaluate(([id, c]) => Array.from(
        document.getElementById(id).tBodies[0].rows,
        (r) => parseFloat(r.cells[c].getAttribute("data-v"))), [fid, col]);
    const th = page.locator(`#${fid} thead th`).nth(col);
    await th.click();
    let v = await values();
    check(v.length > 2 && v.every((x, i) => i === 0 || v[i - 1] >= x), `sorted by ${await th.textContent()}, largest first`);
    await th.click();
    v = await values();
    check(v.every((x, i) => i === 0 || v[i - 1] <= x), "second click: smallest first");
    await page.locator(`#${fid} thead th`).nth(0).click();
    const names = await page.evaluate((id) => Array.from(
        document.getElementById(id).tBodies[0].rows, (r) => r.cells[0].textContent), fid);
    check(names.every((x, i) => i === 0 || names[i - 1] <= x), "sorted by name");

    // Filtering by a name.
    const term = process.env.REPORT_FILTER || "fib";
    await page.locator(`#filter-${fid.slice(2)}`).fill(term);
    const vis = await page.evaluate((id) => Array.from(
        document.getElementById(id).tBodies[0].rows).filter((r) => r.offsetParent !== null)
        .map((r) => r.cells[0].textContent), fid);
    check(vis.length >= 1 && vis.length < names.length &&
          vis.every((n) => n.toLowerCase().includes(term.toLowerCase())),
          `filter "${term}" shows ${vis.length} of ${names.length} rows, all matching`);
    check(names.filter((n) => n.toLowerCase().includes(term.toLowerCase())).length === vis.length,
          "filter hides no matching row");
    await page.locator(`#filter-${fid.slice(2)}`).fill("");
    const all = await page.evaluate((id) => Array.from(
        document.getElementById(id).tBodies[0].rows).filter((r) => r.offsetParent !== null).length, fid);
    check(all === names.length, "clearing the filter shows every row");

    // The flame graph inside its frame: hover shows a frame's values.
    const ff = frames[0];
    const g = ff.locator("#frames > g").nth(1);
    await g.hover();
    const details = await ff.locator("#details").textContent();
    check(/^Function: .+ \(/.test(details), `flame hover: ${JSON.stringify(details.slice(0, 80))}`);

    check(requests.length === 0, "no request left the page" + (requests.length ? ": " + requests.join(" ") : ""));
    check(errors.length === 0, "no console errors" + (errors.length ? ": " + errors.join("; ") : ""));
    check(dialogs === 0, `no dialog opened (${dialogs})`);
    writeFileSync(outJson, JSON.stringify(shown));
    await page.screenshot({ path: outJson.replace(/\.json$/, ".png"), fullPage: true });
} catch (e) {
    check(false, String(e));
}
await finish(browser, "report browser");
