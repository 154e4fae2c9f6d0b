// Headless Chromium check of an evalprof flame graph: the SVG renders,
// its script runs without errors, clicking a frame zooms, search
// highlights and reports the matched share, and reset restores the view.
//
//   node check.mjs FILE.svg SCREENSHOT.png
//
// Drives Debian's /usr/bin/chromium through playwright-core (harness.mjs);
// exit 77 with "SKIP: ..." when Chromium cannot start.
import { launch, check, finish } from "./harness.mjs";

const [svgPath, shot] = process.argv.slice(2);
const browser = await launch();

try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    let dialogs = 0, answer = "Py_RunMain";
    page.on("dialog", async (d) => {
        dialogs++;
        if (d.type() === "prompt")
            await d.accept(answer);
        else
            await d.dismiss();
    });
    const url = "file://" + svgPath;
    await page.goto(url);
    await page.waitForFunction(() => typeof evp !== "undefined" && evp.frames.length > 0);

    // Renders: frames present, with a visible size.
    const n = await page.evaluate(() => evp.frames.length);
    const groups = await page.locator("#frames > g").count();
    check(n > 5 && n === groups, `renders ${n} frames, all known to the script`);
    const box = await page.locator("#frames > g").first().boundingBox();
    check(box && box.width > 1000, "root frame drawn across the width");
    await page.screenshot({ path: shot });

    // Hover shows details.
    const target = page.locator("#frames > g", { has: page.locator("title", { hasText: /^pymain_init \(/ }) });
    await target.hover();
    const details = await page.locator("#details").textContent();
    check(/^Function: pymain_init \(\d[\d,]* samples, \d+\.\d\d%\)$/.test(details),
          `hover details: ${JSON.stringify(details)}`);

    // Click zooms: the frame fills the width, unrelated frames are hidden.
    const before = Number(await target.locator("rect").getAttribute("width"));
    await target.click();
    const after = Number(await target.locator("rect").getAttribute("width"));
    check(before < 600 && after > 1170, `click zooms (width ${before} -> ${after})`);
    const other = page.locator("#frames > g", { has: page.locator("title", { hasText: /^Py_RunMain \(/ }) });
    check(!(await other.isVisible()), "a frame outside the zoomed one is hidden");
    check(await page.locator("#unzoom").isVisible(), "Reset Zoom appears");
    await page.locator("#unzoom").click();
    const reset = Number(await target.locator("rect").getAttribute("width"));
    check(Math.abs(reset - before) < 0.11 && await other.isVisible(), "Reset Zoom restores the view");

    // Search highlights and reports the matched share.
    await page.locator("#search").click();
    const hl = await page.locator("#frames > g.m").count();
    check(dialogs === 1 && hl >= 1, `search highlights ${hl} frame(s)`);
    const fill = await page.locator("#frames > g.m > rect").first()
        .evaluate((r) => getComputedStyle(r).fill);
    check(fill === "rgb(230, 0, 230)", `highlight colour ${fill}`);
    const matched = await page.locator("#matched").textContent();
    const expect = await page.evaluate(() => {
        const f = evp.frames.find((x) => x.name === "Py_RunMain");
        return (100 * f.v / evpConfig.total).toFixed(1);
    });
    check(matched.startsWith(`Matched: ${expect}%`), `matched share "${matched}" (expected ${expect}%)`);
    await page.locator("#search").click(); // Reset Search
    check((await page.locator("#frames > g.m").count()) === 0, "Reset Search clears highlights");

    // ?s= searches at load; Escape resets.
    await page.goto(url + "?s=" + encodeURIComponent("^pyinit_"));
    await page.waitForFunction(() => typeof evp !== "undefined" && evp.frames.length > 0);
    check((await page.locator("#frames > g.m").count()) === 2, "?s=^pyinit_ highlights 2 frames");
    await page.keyboard.press("Escape");
    check((await page.locator("#frames > g.m").count()) === 0, "Escape clears the search");

    check(errors.length === 0, "no script errors" + (errors.length ? ": " + errors.join("; ") : ""));
    check(dialogs === 1, `only the search prompt opened a dialog (${dialogs})`);
} catch (e) {
    check(false, String(e));
}
await finish(browser, "browser");
console.log("ok: flame graph renders, zooms, searches and resets in Chromium");
