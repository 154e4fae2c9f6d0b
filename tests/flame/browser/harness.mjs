// What the Chromium checks share (check.mjs, check-diff.mjs and
// tests/report/check.mjs): Debian's /usr/bin/chromium (CHROMIUM
// overrides) launched headless through playwright-core, exit 77 with
// "SKIP: ..." when it cannot start, and ok/FAIL lines with a count.
import { chromium } from "playwright-core";

export async function launch() {
    try {
        return await chromium.launch({
            executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
            headless: true,
            args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update",
                   "--disable-sync"],
        });
    } catch (e) {
        console.log("SKIP: Chromium cannot run here: " + String(e.message).split("\n")[0]);
        process.exit(77);
    }
}

export const failures = [];

export function check(cond, what) {
    if (!cond)
        failures.push(what);
    console.log((cond ? "ok: " : "FAIL: ") + what);
}

// After the checks: close the browser, exit 1 when any failed.
export async function finish(browser, what) {
    await browser.close();
    if (failures.length) {
        console.log(`${failures.length} ${what} checks failed`);
        process.exit(1);
    }
}
