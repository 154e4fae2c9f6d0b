// Headless Chromium check of an evalprof differential flame graph (drawn
// from tests/flame/golden/svg-diff's two folded files): hovering a frame
// shows both values and the change, the colours say which way a frame
// moved, clicking zooms, search highlights and reports the matched share
// of the drawn (NEW) total, and reset restores the view.
//
//   node check-diff.mjs FILE.svg
import { launch, check, finish } from "./harness.mjs";

const [svgPath] = process.argv.slice(2);
const browser = await launch();

try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 400 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    let dialogs = 0;
    page.on("dialog", async (d) => {
        dialogs++;
        await d.accept("^x$");
    });
    await page.goto("file://" + svgPath);
    await page.waitForFunction(() => typeof evp !== "undefined" && evp.frames.length > 0);
    check(await page.evaluate(() => evpConfig.differential === true), "the script knows the graph is differential");

    const frame = (name) => page.locator("#frames > g", {
        has: page.locator("title", { hasText: new RegExp("^" + name + " \\(") }) });

    // Hover: both values, the change absolute and relative.
    await frame("x").hover();
    let details = await page.locator("#details").textContent();
    check(details === "Function: x (150 samples, 66.67%; base 100 samples, new 150 samples, " +
          "change +50 samples, +50.00%, self +50)", `hover details of a grown frame: ${JSON.stringify(details)}`);
    await frame("b").hover();
    details = await page.locator("#details").textContent();
    check(/; base 50 samples, new 20 samples, change -30 samples, -60\.00%, self -30\)$/.test(details),
          `hover details of a shrunk frame: ${JSON.stringify(details)}`);
    await frame("d").hover();
    details = await page.locator("#details").textContent();
    check(/; base 0 samples, new 40 samples, change \+40 samples, new frame, self \+40\)$/.test(details),
          `hover details of a new frame: ${JSON.stringify(details)}`);

    // Colours: grown red, shrunk blue, unchanged near white.
    const fill = (name) => frame(name).locator("rect").evaluate((r) => getComputedStyle(r).fill);
    check(await fill("x") === "rgb(255, 0, 0)", "the largest growth is full red");
    const fb = await fill("b");
    check(/^rgb\((\d+), \1, 255\)$/.test(fb), `a shrunk frame is blue (${fb})`);
    check(await fill("y") === "rgb(250, 250, 250)", "an unchanged frame is white");
    check(await frame("c").count() === 0, "a frame only in BASE has no width in NEW's picture");

    // Click zooms.
    const before = Number(await frame("a").locator("rect").getAttribute("width"));
    await frame("a").click();
    const after = Number(await frame("a").locator("rect").getAttribute("width"));
    check(before < 900 && after > 1170, `click zooms (width ${before} -> ${after})`);
    check(!(await frame("b").isVisible()), "a frame outside the zoomed one is hidden");
    await page.locator("#unzoom").click();
    const reset = Number(await frame("a").locator("rect").getAttribute("width"));
    check(Math.abs(reset - before) < 0.11 && await frame("b").isVisible(), "Reset Zoom restores the view");

    // Search: matched share of NEW's total.
    await page.locator("#search").click();
    check(dialogs === 1 && await page.locator("#frames > g.m").count() === 1, "search highlights the one frame x");
    const matched = await page.locator("#matched").textContent();
    check(matched === "Matched: 66.7% (1 frame)", `matched share ${JSON.stringify(matched)}`);
    await page.keyboard.press("Escape");
    check(await page.locator("#frames > g.m").count() === 0, "Escape clears the search");
    check(errors.length === 0, "no script errors" + (errors.length ? ": " + errors.join("; ") : ""));
} catch (e) {
    check(false, String(e));
}
await finish(browser, "browser");
console.log("ok: differential flame graph hovers, zooms and searches in Chromium");
