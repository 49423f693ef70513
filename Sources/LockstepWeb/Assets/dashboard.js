// The dashboard: the agent's view of the group, live. Everything arrives as events over the
// WebSocket (topics state, peers, players, and clock and sync, which the agent pushes about once
// a second); nothing is polled.
import { LockstepConnection, describeOrigin } from "/lockstep.js";

const $ = (id) => document.getElementById(id);
const WINDOW_MS = 5 * 60 * 1000;
const COLORS = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324"];
const clockSeries = new Map();  // peer name → [[t, offset ms, bound ms]]
const syncSeries = new Map();   // player label → [[t, error ms]]
let lastState = null;

function text(tag, s) { const e = document.createElement(tag); e.textContent = s; return e; }
function row(cells) { const tr = document.createElement("tr"); for (const c of cells) tr.append(text("td", c)); return tr; }
function ms(ns, digits = 3) { return ns === undefined || ns === null ? "–" : (ns / 1e6).toFixed(digits) + " ms"; }
function push(map, key, point) {
  const s = map.get(key) ?? [];
  s.push(point);
  const since = performance.now() - WINDOW_MS;
  while (s.length && s[0][0] < since) s.shift();
  map.set(key, s);
}

/** A line per series, with a band for its bounds if points carry them ([t, y, bound]). Plain SVG. */
function plot(svg, series, unit) {
  const W = svg.clientWidth || 400, H = svg.clientHeight || 180, L = 48, B = 16;
  // The last five minutes, or since the first point if the dashboard opened later.
  const now = performance.now();
  let first = now;
  for (const pts of series.values()) if (pts.length) first = Math.min(first, pts[0][0]);
  const span = Math.max(2000, Math.min(WINDOW_MS, now - first)), t0 = now - span;
  let lo = Infinity, hi = -Infinity;
  for (const pts of series.values()) for (const p of pts) { lo = Math.min(lo, p[1] - (p[2] ?? 0)); hi = Math.max(hi, p[1] + (p[2] ?? 0)); }
  if (!isFinite(lo)) { lo = -1; hi = 1; }
  if (hi - lo < 0.01) { hi += 0.005; lo -= 0.005; }
  const pad = (hi - lo) * 0.1; lo -= pad; hi += pad;
  const x = (t) => L + (W - L - 4) * (t - t0) / span;
  const y = (v) => 4 + (H - B - 8) * (hi - v) / (hi - lo);
  const parts = [`<line x1="${L}" y1="${y(0)}" x2="${W}" y2="${y(0)}" stroke="#8888"/>`,
    `<text x="2" y="${y(hi) + 10}">${hi.toFixed(3)}</text>`, `<text x="2" y="${y(lo)}">${lo.toFixed(3)}</text>`,
    `<text x="${L}" y="${H - 2}">−${Math.round(span / 1000)} s</text>`, `<text x="${W - 30}" y="${H - 2}">now</text>`];
  let i = 0;
  for (const [name, pts] of series) {
    const color = COLORS[i++ % COLORS.length];
    if (pts.length && pts[0].length > 2) {
      const upper = pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1] + p[2]).toFixed(1)}`);
      const lower = pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1] - p[2]).toFixed(1)}`).reverse();
      parts.push(`<polygon points="${upper.concat(lower).join(" ")}" fill="${color}" fill-opacity="0.15" stroke="none"/>`);
    }
    parts.push(`<polyline points="${pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ")}" fill="none" stroke="${color}" stroke-width="2"/>`);
    parts.push(`<text x="${L + 6}" y="${14 + 12 * (i - 1)}" fill="${color}" style="fill:${color}">${escape(name)}</text>`);
  }
  svg.innerHTML = parts.join("");
  svg.setAttribute("aria-label", unit);
}
function escape(s) { return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]); }

function showState(state) {
  lastState = state;
  const g = $("group");
  g.replaceChildren();
  const item = state.item;
  state.fetchedAt = performance.now();
  const facts = item ? [["Item", item.title ?? item.id], ["State", item.state], ["Position", positionText(state)],
    ["Rate", Number(item.rate).toFixed(3)], ["Last change", describeOrigin(item.origin)]] : [["Item", "nothing playing"]];
  facts.push(["Lead", ms(state.lead_ns, 1)]);
  for (const [k, v] of facts) { g.append(text("dt", k), text("dd", v)); }
}

/** The item's position now, moved on locally from the last state (no request per second). */
function positionText(state) {
  const item = state?.item;
  if (!item || item.position_now_ns === undefined) return "–";
  const moved = item.state === "playing" ? (performance.now() - state.fetchedAt) * 1e6 * item.rate : 0;
  return ((item.position_now_ns + moved) / 1e9).toFixed(2) + " s";
}

function addHistory(entry) {
  const li = text("li", entry);
  $("history").prepend(li);
  while ($("history").children.length > 30) $("history").lastChild.remove();
}

function showPeers(peers) {
  $("peers").replaceChildren(...peers.map((p) => row([p.name, p.state, p.preferred ?? (p.addresses ?? [])[0] ?? "–", p.last_heard_ago_ns !== undefined ? ms(p.last_heard_ago_ns, 0) + " ago" : "–"])));
}

function showClock(c) {
  const now = performance.now();
  $("clocks").replaceChildren(...(c.peers ?? []).map((p) => row([p.name ?? p.peer_id?.slice(0, 8), ms(p.offset_ns), ms(p.error_bound_ns), ms(p.delay_ns), p.skew_ppm !== undefined ? Number(p.skew_ppm).toFixed(2) + " ppm" : "–"])));
  for (const p of c.peers ?? []) if (p.offset_ns !== undefined) push(clockSeries, p.name ?? p.peer_id, [now, p.offset_ns / 1e6, (p.error_bound_ns ?? 0) / 1e6]);
  plot($("clock-plot"), clockSeries, "clock offset, ms");
}

function showPlayers(players, measured) {
  const now = performance.now();
  $("players").replaceChildren(...players.map((p) => row([p.participant?.peer_name ?? "", p.participant?.name ?? "", p.participant?.readiness ?? "", p.sync_error_ns !== undefined ? ms(p.sync_error_ns, 2) : "–"])));
  if (measured) for (const p of players) if (p.sync_error_ns !== undefined && p.sync_error_ns !== null) push(syncSeries, `${p.participant?.peer_name}/${p.participant?.name}`, [now, p.sync_error_ns / 1e6]);
  plot($("sync-plot"), syncSeries, "sync error, ms");
}

async function main() {
  let connection;
  try { connection = await LockstepConnection.open(); }
  catch { $("status").innerHTML = 'Not paired: open <a href="/">the player</a> to pair this browser.'; return; }
  const status = await connection.request("status");
  $("agent").textContent = `${status.name} · ${status.peers_reachable ?? 0} peers reachable · group ${status.group?.name ?? ""}`;
  window.lockstepDashboard = { connection, updates: 0, lastUpdate: null };
  const state = await connection.request("subscribe", { topics: ["state", "peers", "players", "clock", "sync"] });
  showState(state);
  for (const item of state.items ?? []) if (item.origin) addHistory(`${item.id}: ${describeOrigin(item.origin)} → ${item.state}`);
  const peers = await connection.request("peers");
  showPeers(peers.peers ?? []);
  showPlayers((await connection.request("players")).players ?? [], false);
  const updated = (kind) => { const d = window.lockstepDashboard; d.updates++; d.lastUpdate = { kind, at: performance.now() }; };
  connection.addEventListener("state_changed", async (e) => {
    const m = e.detail;
    const crossed = m.concurrent ? ` (crossed ${m.concurrent.commands?.length ?? 0} commands)` : "";
    addHistory(`${new Date().toLocaleTimeString()} ${describeOrigin(m.origin)}${m.change ? " · " + m.change : ""}${crossed}`);
    showState(await connection.request("state"));
    updated("state");
  });
  connection.addEventListener("peer_changed", async () => { showPeers((await connection.request("peers")).peers ?? []); updated("peer"); });
  connection.addEventListener("players_changed", (e) => { showPlayers(e.detail.players ?? [], false); updated("players"); });
  connection.addEventListener("clock_changed", (e) => { showClock(e.detail.clock ?? {}); updated("clock"); });
  connection.addEventListener("sync_changed", (e) => { showPlayers(e.detail.players ?? [], true); updated("sync"); });
  connection.addEventListener("close", () => { $("status").textContent = "Disconnected from the agent."; });
  for (const b of document.querySelectorAll("button[data-action]")) {
    b.onclick = async () => {
      const action = b.dataset.action, p = { action };
      if (action === "seek") p.position_ns = Math.round(Number($("seek-to").value) * 1e9);
      if (action === "rate") p.rate = Number($("rate").value);
      if (action === "load") p.item = $("load-item").value;
      try { await connection.request("command", p); $("command-result").textContent = `${action}: done`; }
      catch (err) { $("command-result").textContent = err.message; }
    };
  }
  $("status").textContent = "Live.";
  setInterval(() => {
    const dd = [...$("group").querySelectorAll("dt")].find((dt) => dt.textContent === "Position")?.nextElementSibling;
    if (dd) dd.textContent = positionText(lastState);
  }, 250);
}

main().catch((e) => { $("status").textContent = "Error: " + e.message; });
