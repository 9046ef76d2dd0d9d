// Drives Debian's Chromium through playwright-core against a running `pitroom dash`, for
// crates/pitroom/tests/suite/dash.rs. Every step waits on what the page shows (a generous
// timeout trips only when the mechanism is broken); figures are printed as
// `figure <name> <value>` lines for the Rust test to report, never asserted as timings.
//
// Environment: DASH_URL, PW_MODULE (playwright-core's directory), PITROOM_BIN, WORK_DIR,
// GATES (a directory the fake worker waits on), STATE (the state dir), SHOTS (optional: where
// screenshots go), plus the hermetic test environment for the pitroom commands it starts.
// Argument: the scenario, `live`, `bulk` or `screens`.
import { createRequire } from "node:module";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(path.join(process.env.PW_MODULE, "package.json"));
const { chromium } = require("playwright-core");

const URL_BASE = process.env.DASH_URL;
const LIMIT = 20000;
const scenario = process.argv[2];

function figure(name, value) { console.log(`figure ${name} ${value}`); }
function step(text) { console.log(`step ${text}`); }

function pitroom(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.PITROOM_BIN, args, { cwd: process.env.WORK_DIR, stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`pitroom ${args.join(" ")} exited ${code}: ${out} ${err}`))));
  });
}

async function launch() {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

// A page whose every request must stay on 127.0.0.1; anything else is recorded and refused.
async function guardedPage(browser, options = {}) {
  const context = await browser.newContext({ viewport: { width: options.width || 1280, height: options.height || 900 }, colorScheme: options.scheme || "light" });
  const offenders = [];
  await context.route("**/*", (route) => {
    const u = new URL(route.request().url());
    if (u.hostname !== "127.0.0.1") { offenders.push(route.request().url()); return route.abort(); }
    return route.continue();
  });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error" && !/Failed to load resource: the server responded with a status of 403/.test(m.text())) errors.push(m.text()); });
  return { context, page, offenders, errors };
}

function check(cond, message) { if (!cond) throw new Error(message); }

async function live() {
  const browser = await launch();
  const { context, page, offenders, errors } = await guardedPage(browser);
  lastPage = page;
  // The browser's own notifications, allowed for the page as a user would allow them; each one
  // the page raises is noted on its way to the real constructor.
  await context.grantPermissions(["notifications"], { origin: new URL(URL_BASE).origin });
  await page.addInitScript(() => {
    const Real = window.Notification;
    window.__notes = [];
    const Noted = function (title, options) {
      window.__notes.push({ title, body: options && options.body, tag: options && options.tag });
      return new Real(title, options);
    };
    Object.defineProperty(Noted, "permission", { get: () => Real.permission });
    Noted.requestPermission = (...args) => Real.requestPermission(...args);
    window.Notification = Noted;
  });
  await page.goto(URL_BASE);
  await page.waitForSelector("body[data-live-rendered]", { timeout: LIMIT });
  await page.waitForSelector("#conn.ok", { timeout: LIMIT });

  step("a card appears when pitroom run --bg starts a fake worker");
  const before = Date.now();
  const id = (await pitroom(["run", "--bg", "-m", "fake/live", "--max-tokens", "50000", "Map the live module"])).split(/\s+/).find((w) => /^\d{8}-\d{6}-\d{3}[0-9a-z]$/.test(w));
  check(id, "pitroom run --bg printed no run id");
  const card = `#card-${id}`;
  await page.waitForSelector(card, { timeout: LIMIT });
  figure("card_appeared_ms", Date.now() - before);

  step("its steps update live");
  await page.waitForFunction((sel) => /1 tool\b/.test(document.querySelector(sel)?.textContent || ""), card, { timeout: LIMIT });
  const recordPath = path.join(process.env.STATE, "runs", id, "record.json");
  fs.writeFileSync(path.join(process.env.GATES, "live-1"), "go");
  await page.waitForFunction((sel) => /2 tools\b/.test(document.querySelector(sel)?.textContent || ""), card, { timeout: LIMIT });
  // The worker now waits on the next gate, so the record's last write is the one shown.
  const shownAt = await page.evaluate((runId) => window.__pitroom.pushes.find((x) => x.id === runId && x.tools >= 2).shown, id);
  figure("push_latency_ms", Math.max(0, shownAt - fs.statSync(recordPath).mtimeMs).toFixed(1));
  check(await page.$eval(card, (el) => /running/i.test(el.textContent)), "the card does not say running");
  // A run held to a cap shows its spend against it on its card, as its report says it.
  const foot = await page.$eval(`${card} .card-foot`, (el) => el.textContent);
  check(/budget \S+ of 50k tokens \(--max-tokens\)/.test(foot), `the card shows no budget: ${foot}`);

  step("a forged token is refused");
  const forged = await page.evaluate(async (runId) => {
    const r = await fetch(`/api/run/${runId}/stop`, { method: "POST", headers: { "x-pitroom-token": "forged" } });
    return r.status;
  }, id);
  check(forged === 403, `a forged token got ${forged}`);
  check(await page.$eval(card, (el) => /running/i.test(el.textContent)), "the forged stop stopped the run");

  step("notifications, once turned on, say when a run ends");
  await page.click("#notify");
  await page.waitForSelector('#notify[aria-pressed="true"]', { timeout: LIMIT });
  check((await page.evaluate(() => window.__notes.length)) === 0, "a notification before any run ended");

  step("the stop button ends the running worker");
  await page.click(`${card} button[data-action="stop"]`);
  await page.waitForFunction((sel) => /stopped/i.test(document.querySelector(sel)?.querySelector(".badge")?.textContent || ""), card, { timeout: LIMIT });
  console.log(`stopped ${id}`);
  await page.waitForFunction((runId) => window.__notes.some((n) => n.tag === `pitroom-${runId}`), id, { timeout: LIMIT });
  const notes = await page.evaluate((runId) => window.__notes.filter((n) => n.tag === `pitroom-${runId}`), id);
  check(notes.length === 1 && /stopped/.test(notes[0].title) && notes[0].body === "Map the live module", `the run's end raised ${JSON.stringify(notes)}`);

  step("a finished run shows its answer and highlighted diff");
  const editId = process.env.EDIT_RUN;
  await page.goto(`${URL_BASE}#/run/${editId}`);
  await page.waitForSelector(".md strong", { timeout: LIMIT });
  check(await page.$eval(".md", (el) => el.textContent.includes("zero check")), "the answer is not shown");
  check((await page.$$(".md script, .md img")).length === 0, "the answer's markup was not sanitised");
  await page.waitForSelector("table.diff tr.add .hl-k", { timeout: LIMIT });
  check(await page.$eval(".diff-file summary", (el) => el.textContent.includes("calc.py")), "the diff does not name calc.py");

  step("what is typed before the first answer stays, and search finds an old run");
  // The first answer is held until the query is typed: it brings the filters' choices, and
  // filling them in must not wipe the search box (it once re-rendered the form).
  let release;
  const held = new Promise((resolve) => (release = resolve));
  const isHistory = (url) => url.pathname === "/api/history";
  await page.route(isHistory, async (route) => { await held; await route.continue(); });
  await page.goto(`${URL_BASE}#/history`);
  await page.waitForSelector("#f-q", { timeout: LIMIT });
  await page.fill("#f-q", "zanzibar");
  release();
  await page.waitForSelector('.results[data-shown=""] .hit', { timeout: LIMIT });
  await page.unroute(isHistory);
  check(await page.$$eval("#f-worker option", (os) => os.length) > 1, "the filters got no choices");
  check(await page.$eval("#f-q", (el) => el.value) === "zanzibar", "the first answer wiped what was typed");
  await page.press("#f-q", "Enter");
  // The results say which query they answer: the unfiltered list shown first holds the old run too.
  await page.waitForFunction((old) => !!document.querySelector(`.results[data-shown="q=zanzibar"] .hit a[href="#/run/${old}"]`), process.env.OLD_RUN, { timeout: LIMIT });
  check(await page.$eval(".results[data-shown] .hit mark", (el) => el.textContent.toLowerCase().includes("zanzibar")), "the match is not marked");

  step("stats draw their charts");
  await page.goto(`${URL_BASE}#/stats?since=all`);
  await page.waitForSelector("svg.chart rect", { timeout: LIMIT });

  step("the keyboard reaches the views and the actions");
  await page.goto(`${URL_BASE}#/`);
  await page.waitForSelector(".card", { timeout: LIMIT });
  const reached = [];
  for (let i = 0; i < 12; i++) {
    await page.keyboard.press("Tab");
    reached.push(await page.evaluate(() => document.activeElement?.getAttribute("href") || document.activeElement?.id || document.activeElement?.tagName));
  }
  check(reached.includes("#/history") && reached.includes("#/stats") && reached.some((r) => r && r.startsWith("#/run/")), `tab order reached only ${reached.join(", ")}`);

  check(offenders.length === 0, `requests left 127.0.0.1: ${offenders.join(", ")}`);
  check(errors.length === 0, `the page reported errors: ${errors.join(" | ")}`);
  console.log("offenders 0");
  await browser.close();
}

async function bulk() {
  const browser = await launch();
  const { page, offenders, errors } = await guardedPage(browser);
  await page.goto(URL_BASE);
  await page.waitForSelector("body[data-live-rendered]", { timeout: LIMIT });
  const rendered = await page.evaluate(() => window.__pitroom.firstRender);
  const cards = await page.$$eval(".card", (c) => c.length);
  const total = await page.$eval(".view-head p", (p) => p.textContent);
  figure("first_render_ms", rendered.toFixed(0));
  figure("cards", cards);
  check(/1000 runs in the state directory/.test(total), `the page says: ${total}`);
  check(offenders.length === 0, `requests left 127.0.0.1: ${offenders.join(", ")}`);
  check(errors.length === 0, `the page reported errors: ${errors.join(" | ")}`);
  await browser.close();
}

async function screens() {
  const browser = await launch();
  const views = JSON.parse(process.env.VIEWS);
  for (const scheme of ["light", "dark"]) {
    for (const width of [1280, 380]) {
      const { context, page, offenders, errors } = await guardedPage(browser, { width, height: width > 600 ? 860 : 780, scheme });
      for (const [name, hash, ready] of views) {
        await page.goto(`${URL_BASE}${hash}`);
        await page.waitForSelector(ready, { timeout: LIMIT });
        await page.waitForTimeout(150); // let the layout settle for the picture, not for a fact
        const file = path.join(process.env.SHOTS, `${name}-${scheme}-${width}.png`);
        // The whole page, cut at a height that keeps the pictures small enough for the docs.
        const height = Math.min(await page.evaluate(() => document.documentElement.scrollHeight), width > 600 ? 2000 : 2600);
        await page.screenshot({ path: file, fullPage: true, clip: { x: 0, y: 0, width, height } });
        console.log(`shot ${file}`);
      }
      check(offenders.length === 0, `requests left 127.0.0.1: ${offenders.join(", ")}`);
      check(errors.length === 0, `the page reported errors: ${errors.join(" | ")}`);
      await context.close();
    }
  }
  await browser.close();
}

// What the page showed when a step failed, for the failure message.
let lastPage = null;

const scenarios = { live, bulk, screens };
scenarios[scenario]().then(() => process.exit(0), async (e) => {
  console.error(`FAILED: ${e.stack || e.message}`);
  if (lastPage) {
    const timeout = new Promise((resolve) => setTimeout(() => resolve("(the page did not answer)"), 3000));
    const shown = await Promise.race([lastPage.evaluate(() => document.querySelector("main")?.innerText || "").catch(() => "(page gone)"), timeout]);
    console.error(`the page showed:\n${shown.slice(0, 3000)}`);
  }
  process.exit(1);
});
