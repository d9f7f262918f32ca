// Benchmark: rankFriends on 1,000 friends in a real Chromium (Debian's, headless), beside a
// plain JavaScript sort of the same entries with a hand-written comparator, and how often that
// plain sort orders values beyond 2^53 wrongly. Prints a JSON report.
//
//   node wasm-pkg/bench/rank-friends.mjs [--friends 1000] [--batches 60] [--per-batch 20] [--trials 200]
//
// The package is served from wasm-pkg/pkg by a small local server and imported by the page, as
// a front end would import it. Timings are medians over batches: Chromium coarsens
// performance.now(), so each batch times several calls and divides.
import http from "node:http";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const options = {
  friends: arg("friends", 1000),
  batches: arg("batches", 60),
  perBatch: arg("per-batch", 20),
  trials: arg("trials", 200),
};

const pkg = fileURLToPath(new URL("../pkg/", import.meta.url));
const types = { ".js": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };
const server = http.createServer(async (req, res) => {
  const path = req.url === "/" ? null : req.url.slice(1).split("?")[0];
  if (path === null) {
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<!doctype html><title>rankFriends benchmark</title>");
    return;
  }
  try {
    const body = await readFile(pkg + path.replace(/\.\./g, ""));
    res.writeHead(200, { "content-type": types[path.slice(path.lastIndexOf("."))] ?? "application/octet-stream" });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  const report = await page.evaluate(async (options) => {
    const { rankFriends } = await import("/index.js");
    let seed = 12345;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const base = Date.parse("2026-10-13T10:00:00Z");
    // A friend list as a front end holds it: ids, exact values (bigints from parseExact, or the
    // Numbers JSON.parse gives), RFC 3339 times, some tied.
    const list = (n, big) =>
      Array.from({ length: n }, (_, i) => {
        const value = big ? 2n ** 60n + BigInt(Math.floor(random() * 65536)) : BigInt(Math.floor(random() * 1_000_000));
        const achieved_at = new Date(base + Math.floor(random() * 3600) * 1000).toISOString();
        return { player_id: `p-${i.toString().padStart(5, "0")}`, value, achieved_at };
      });
    const plainSort = (entries) =>
      entries.slice().sort((a, b) => b.value - a.value || (a.achieved_at < b.achieved_at ? -1 : a.achieved_at > b.achieved_at ? 1 : 0) || (a.player_id < b.player_id ? -1 : a.player_id > b.player_id ? 1 : 0));
    const asNumbers = (entries) => entries.map((e) => ({ ...e, value: Number(e.value) }));
    const median = (xs) => {
      const s = xs.slice().sort((a, b) => a - b);
      return s[Math.floor(s.length / 2)];
    };
    const time = (f) => {
      for (let i = 0; i < options.perBatch * 5; i++) f();
      const batches = [];
      for (let b = 0; b < options.batches; b++) {
        const t0 = performance.now();
        for (let i = 0; i < options.perBatch; i++) f();
        batches.push(((performance.now() - t0) / options.perBatch) * 1000);
      }
      return { median_us: Math.round(median(batches)), min_us: Math.round(Math.min(...batches)) };
    };
    const small = list(options.friends, false);
    const big = list(options.friends, true);
    const smallNumbers = asNumbers(small);
    const bigNumbers = asNumbers(big);
    const timings = {
      rank_friends_small_values: time(() => rankFriends("highest", small)),
      plain_sort_small_values: time(() => plainSort(smallNumbers)),
      rank_friends_beyond_2_53: time(() => rankFriends("highest", big)),
      plain_sort_beyond_2_53: time(() => plainSort(bigNumbers)),
    };
    // How often the plain sort is wrong: lists whose order differs from the exact one, and the
    // share of entries placed at a wrong rank.
    const wrongness = (bigValues) => {
      let lists = 0, misplaced = 0, total = 0;
      for (let t = 0; t < options.trials; t++) {
        const entries = list(options.friends, bigValues);
        const exact = rankFriends("highest", entries).entries.map((e) => e.player_id);
        const plain = plainSort(asNumbers(entries)).map((e) => e.player_id);
        let wrong = 0;
        for (let i = 0; i < exact.length; i++) if (exact[i] !== plain[i]) wrong++;
        if (wrong) lists++;
        misplaced += wrong;
        total += exact.length;
      }
      return { lists_wrong: lists, lists: options.trials, entries_misplaced_share: misplaced / total };
    };
    return {
      friends: options.friends,
      user_agent: navigator.userAgent,
      timings,
      ratio_small: timings.rank_friends_small_values.median_us / timings.plain_sort_small_values.median_us,
      ratio_beyond_2_53: timings.rank_friends_beyond_2_53.median_us / timings.plain_sort_beyond_2_53.median_us,
      plain_sort_wrong_beyond_2_53: wrongness(true),
      plain_sort_wrong_small_values: wrongness(false),
    };
  }, options);
  console.log(JSON.stringify(report, null, 2));
} finally {
  await browser.close();
  server.close();
}
